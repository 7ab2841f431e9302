"""`grokslt llc`'s line per checkpoint: the MCSE (not the spread between chains), local or not, converged or not."""

import logging

from grokslt.estimation.llc import described

ROW = {"llc_mean": 35.0, "llc_std": 0.26, "mcse": 1.9, "r_hat": 1.027, "ess_bulk": 97.0, "ess_tail": 120.0,
       "converged": False, "local": True, "descends": False, "loss_excess_fraction": 0.01}  # fmt: skip


def test_the_line_gives_the_mcse_and_says_local_but_not_converged():
    line = described(ROW)
    assert line == "35.00 (MCSE 1.9): local, not converged (R-hat 1.027, ESS 97/120)"
    assert "0.26" not in line  # the between-chain spread is no error bar


def test_the_line_says_why_an_estimate_is_not_local():
    assert "not local (loss excess 0.5 of L_n(0)), converged" in described(
        ROW | {"local": False, "converged": True, "loss_excess_fraction": 0.5}
    )
    assert "not local: the chains descend below L_n(w*)" in described(ROW | {"local": False, "descends": True})


def test_grokslt_llc_logs_the_described_line(caplog):
    from estimation_support import tiny_net

    from grokslt.estimation import checkpoint_llc
    from grokslt.estimation.llc import sampler_settings

    data, W, V = tiny_net()
    settings = sampler_settings("paper_code", num_draws=40, num_burnin=10)
    params = {"W": W, "V": V}
    with caplog.at_level(logging.INFO, logger=checkpoint_llc.log.name):
        ((result, _),) = checkpoint_llc.estimate_checkpoints(data, [(50, params)], settings, 16, 0)
    (message,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("llc at step 50")]
    assert f"(MCSE {result.summary()['mcse']:.2g})" in message and ("converged (R-hat" in message)


def test_trace_file_names_sort_by_step():
    from grokslt.estimation.pair_traces import trace_name, trace_step

    names = [trace_name(step) for step in (600, 50, 12000)]
    assert names[0] == "step000600.nc"
    assert [trace_step(name) for name in sorted(names)] == [50, 600, 12000]
    assert trace_step("step600.nc") == 600  # an earlier version's name reads too

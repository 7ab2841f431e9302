"""Claims on final LLCs leave out runs that never reached val 95% and say so; a fall measured against the MCSE of an
estimate that did not converge is not called "within MCSE" (that MCSE is no error bar)."""

import numpy as np
import pandas as pd
from claims_support import linear_evidence, series, summary_row

from grokslt.analysis.claims import CLAIMS
from grokslt.analysis.claims.evidence import Evidence


def test_the_linear_law_fits_only_runs_that_grokked_and_counts_the_others():
    evidence = linear_evidence(1.0)
    rows = evidence.summary.to_dict("records")
    rows.append(summary_row("p73", "vary_p", p=73, grok_step_95=np.nan))  # 5,000 would bend the line
    llc = dict(evidence.llc) | {"p73": series([100, 200], [2500.0, 5000.0])}
    [law, _] = CLAIMS["fig1a_linear_p"].function()(Evidence(pd.DataFrame(rows), {}, llc, None), "paper_code")
    assert law["verdict"] == "holds" and law["n"] == 5
    assert "runs that never reached val 95%, left out: 1" in law["note"]


def test_a_keff_ratio_leaves_out_runs_that_never_grokked():
    rows = [summary_row(f"p{p}", "vary_p", p=p) for p in (53, 59, 61)]
    rows.append(summary_row("p67", "vary_p", p=67, grok_step_95=np.nan))
    llc = {f"p{p}": series([100, 200], [50.0, 100.0]) for p in (53, 59, 61)} | {"p67": series([100, 200], [1, 900.0])}
    [keff] = CLAIMS["keff_closed_form"].function()(Evidence(pd.DataFrame(rows), {}, llc, None), "paper_code")
    assert keff["n"] == 3 and keff["value"] == 1.0 and "never reached val 95%, left out: 1" in keff["note"]


def peak_runs(converged: bool) -> Evidence:
    """21 seeds whose LLC peaks before val 50% and falls by 100 there, each estimate's MCSE 1,000: not converged,
    that MCSE is an ESS artefact of a non-stationary chain (issue 44: margins 101-165 against about 1,200)."""
    steps = np.arange(100, 1100, 100)
    rows, llc = [], {}
    for seed in range(21):
        run = f"s{seed}"
        rows.append(summary_row(run, "seeds", seed=seed, grok_step_50=800))
        values = np.where(steps <= 400, 500.0, 400.0)
        llc[run] = series(steps, values, mcse=1000.0).assign(converged=converged)
    return Evidence(pd.DataFrame(rows), {}, llc, None)


def test_a_fall_against_an_unconverged_mcse_is_not_counted_within_mcse():
    [peak] = CLAIMS["fig2_peak_before_generalisation"].function()(peak_runs(converged=False), "paper_code")
    assert peak["note"].startswith("0 support, 0 contradict, 0 within MCSE, 21 peak before val 50% but an estimate")
    assert "its MCSE is no error bar" in peak["note"]
    [honest] = CLAIMS["fig2_peak_before_generalisation"].function()(peak_runs(converged=True), "paper_code")
    assert honest["note"].startswith("0 support, 0 contradict, 21 within MCSE")  # converged: the MCSE holds

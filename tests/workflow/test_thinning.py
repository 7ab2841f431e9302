"""A thinned LLC trajectory (`llc: every`): which checkpoints it estimates, how its jobs split them, and the
run tables that join it with the Hessian trace at every checkpoint."""

import warnings

import pandas as pd
import pytest

from grokslt.analysis.hessian import write_hessian_table
from grokslt.analysis.theory import THEORY_COLUMNS, checkpoint_theory
from grokslt.errors import BadInput
from grokslt.estimation.checkpoint_llc import Checkpoints, Retry, Sampling, Saved, write_llc_table
from grokslt.training.metrics import transition_steps
from grokslt.training.runs import (
    chunk_names,
    estimated_steps,
    load_run,
    logged_checkpoints,
    run_seed,
    select_run_steps,
    select_steps,
)
from grokslt.training.train import TrainConfig, train
from grokslt.workflow.plan import thinned_count
from grokslt.workflow.tables import loss_data

TINY_SAMPLER = {"num_chains": 2, "num_burnin": 0, "num_draws": 16}
TINY = Sampling(overrides=TINY_SAMPLER)


@pytest.fixture(scope="module")
def memorised(tmp_path_factory):
    """A p = 11 run that memorises early: a dense schedule (every 25 steps up to 200), then every 50 to 1000."""
    config = TrainConfig(p=11, hidden=64, lr=1e-2, batch_size=32, max_steps=1000, eval_every=50, dense_until=200,
                         dense_every=25, early_stop=False)  # fmt: skip
    path = tmp_path_factory.mktemp("run")
    train(config, path, False)
    return path


def test_the_workflow_plans_the_checkpoints_the_llc_job_estimates(memorised):
    log = memorised / "train_log.csv"
    assert estimated_steps(log, 1) == logged_checkpoints(log)
    thinned = estimated_steps(log, 4)
    assert thinned == select_run_steps(load_run(memorised), None, None, every=4)
    assert len(thinned) < len(logged_checkpoints(log))


def test_a_thinned_trajectory_keeps_the_dense_schedule_every_kth_after_the_last_and_each_transition(memorised):
    log = pd.read_csv(memorised / "train_log.csv")
    available = logged_checkpoints(memorised / "train_log.csv")
    thinned = estimated_steps(memorised / "train_log.csv", 4)
    transitions = [s for s in transition_steps(log["step"], log["train_acc"], log["val_acc"]).values() if s]
    assert transitions, "the fixture run must reach a transition"
    dense, regular = [s for s in available if s <= 200], [s for s in available if s > 200]
    assert dense == [25, 50, 75, 100, 125, 150, 175, 200]
    assert set(dense) | set(regular[::4]) <= set(thinned) and available[-1] in thinned
    assert not set(regular[1:4]) & set(thinned) - {s for t in transitions for s in (t - 50, t, t + 50)}
    for step in transitions:
        i = available.index(step)
        assert set(available[max(0, i - 1) : i + 2]) <= set(thinned)
    assert len(thinned) <= thinned_count(len(regular), 4) + len(dense)


def test_chunks_of_a_thinned_trajectory_cover_it_once(memorised):
    run = load_run(memorised)
    chunks = [select_run_steps(run, None, f"{i}/3", every=4) for i in range(3)]
    assert sum(chunks, []) == estimated_steps(memorised / "train_log.csv", 4)
    with pytest.raises(BadInput, match="--every: give it without --steps"):
        select_run_steps(run, "20", None, every=4)


@pytest.mark.parametrize("checkpoints, size", [(1, 50), (50, 50), (51, 50), (159, 50), (400, 200)])
def test_chunk_jobs_split_the_checkpoints_into_blocks_of_at_most_chunk_size(checkpoints, size):
    steps = list(range(100, 100 * (checkpoints + 1), 100))
    names = chunk_names(checkpoints, size)
    blocks = [select_steps(steps, None, name.removeprefix("chunk").replace("of", "/")) for name in names]
    assert sum(blocks, []) == steps and max(map(len, blocks)) <= size
    assert len(names) == -(-checkpoints // size)


def test_the_run_table_leaves_skipped_checkpoints_blank_and_refuses_a_missing_chosen_one(memorised, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few draws make poor diagnostics
        write_llc_table(memorised, tmp_path / "llc.csv", TINY, Checkpoints(every=4))
    write_hessian_table(memorised, tmp_path / "hessian.csv")
    run = load_run(memorised)
    theory = pd.DataFrame(checkpoint_theory(run, run.checkpoints), columns=THEORY_COLUMNS)
    llc, hessian = pd.read_csv(tmp_path / "llc.csv"), pd.read_csv(tmp_path / "hessian.csv")
    table = loss_data(memorised, llc, hessian, theory, llc_every=4)
    assert table.loc[table["llc"].notna(), "step"].tolist() == estimated_steps(memorised / "train_log.csv", 4)
    assert table["trace_hutchinson"].notna().all()
    with pytest.raises(ValueError, match="no LLC or Hessian-trace row"):
        loss_data(memorised, llc, hessian, theory, llc_every=1)
    with pytest.raises(ValueError, match="no LLC or Hessian-trace row"):
        loss_data(memorised, llc.iloc[1:], hessian, theory, llc_every=4)


def test_an_estimate_that_did_not_converge_is_estimated_again_with_more_draws(memorised, tmp_path, monkeypatch):
    """`retry_draws`: the unconverged estimates, and only they, are estimated again at more draws with noise of
    their own, and the second estimate is the row, saying its draws. At 16 draws no estimate converges; the first
    is declared converged here, so that the selection is seen to keep it."""
    import dataclasses

    from grokslt.estimation import checkpoint_llc

    real, tries = checkpoint_llc.estimate_checkpoints, []

    def first_converges(data, checkpoints, settings, *args, attempt=0, **kwargs):
        tries.append(([step for step, _ in checkpoints], settings.num_draws, attempt))
        results = real(data, checkpoints, settings, *args, attempt=attempt, **kwargs)
        if attempt == 0:
            result = results[0][0]
            result.diagnostics = dataclasses.replace(result.diagnostics, converged=True)
        return results

    monkeypatch.setattr(checkpoint_llc, "estimate_checkpoints", first_converges)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few draws make poor diagnostics
        rows = write_llc_table(memorised, tmp_path / "once.csv", TINY, Checkpoints("100,200,300"))
        chosen = Checkpoints("100,200,300")
        retried = write_llc_table(memorised, tmp_path / "retried.csv", TINY, chosen, retry=Retry(48))
    assert tries[-2:] == [([100, 200, 300], 16, 0), ([200, 300], 48, 1)]
    assert [row["num_draws"] for row in retried] == [16, 48, 48]
    assert retried[0]["llc_mean"] == rows[0]["llc_mean"]  # the converged first try is kept as it was
    assert all(again["llc_mean"] != once["llc_mean"] for again, once in zip(retried[1:], rows[1:], strict=True))
    assert pd.read_csv(tmp_path / "retried.csv")["num_draws"].tolist() == [16, 48, 48]


CANNOT_WORK = [
    (16, {}, "expected more than the 16 draws"),
    (48, {"traces": "t.npz"}, "not with saved traces"),
    (48, {"pair_traces": "pairs"}, "not with saved traces or per-pair"),
]


@pytest.mark.parametrize("retry, saved, message", CANNOT_WORK)
def test_a_retry_that_cannot_work_is_refused_before_any_estimate(memorised, tmp_path, retry, saved, message):
    with pytest.raises(BadInput, match=f"retry_draws = {retry}: {message}"):
        saving = Saved(**{key: str(tmp_path / name) for key, name in saved.items()})
        write_llc_table(memorised, tmp_path / "llc.csv", TINY, saved=saving, retry=Retry(retry))
    assert not (tmp_path / "llc.csv").exists()


def test_second_tries_from_a_first_try_table_are_the_rows_of_one_run_with_retries(memorised, tmp_path):
    """A table written without retries, then its unconverged estimates tried again (`first_try`), is byte for byte
    the table of one run with retries: a measured set gains its second tries without sampling its first again."""
    import shutil

    run, steps = shutil.copytree(memorised, tmp_path / "run"), "100,200,300"  # the first tries live in the run's folder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_llc_table(run, run / "at_once.csv", TINY, Checkpoints(steps), retry=Retry(32))
        write_llc_table(run, run / "first.csv", TINY, Checkpoints(steps))
        write_llc_table(run, run / "then.csv", TINY, Checkpoints(steps), retry=Retry(32, str(run / "first.csv")))
    assert (run / "then.csv").read_bytes() == (run / "at_once.csv").read_bytes()
    assert set(pd.read_csv(run / "then.csv")["num_draws"]) == {32}  # none converges at 16 draws
    lines = (run / "first.csv").read_text().splitlines()
    converged = pd.read_csv(run / "first.csv").columns.get_loc("converged")
    cells = lines[1].split(",")
    lines[1] = ",".join([*cells[:converged], "True", *cells[converged + 1 :]])  # as if the first had converged
    (run / "kept.csv").write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_llc_table(run, run / "mixed.csv", TINY, Checkpoints(steps), retry=Retry(32, str(run / "kept.csv")))
    mixed, at_once = (run / "mixed.csv").read_text().splitlines(), (run / "at_once.csv").read_text()
    assert mixed[1] == lines[1] and mixed[2:] == at_once.splitlines()[2:]  # kept as written; the others retried
    first = str(run / "first.csv")
    seeds = [run_seed(base, load_run(run).config) for base in (0, 1)]  # each run's own, from the seed given
    (tmp_path / "elsewhere.csv").write_bytes((run / "first.csv").read_bytes())
    refusals = [
        ((Sampling(overrides=TINY_SAMPLER, seed=1), steps, Retry(32, first)), f"seed = {seeds[0]} in its rows, "
         f"expected {seeds[1]}"),  # fmt: skip
        ((TINY, "100,200", Retry(32, first)), r"steps \['100', '200', '300'\] differ"),
        ((TINY, steps, Retry(32, str(run / "then.csv"))), "num_draws = 32 in its rows, expected 16"),
        ((TINY, steps, Retry(32, str(tmp_path / "elsewhere.csv"))), "not in the run's directory"),
        ((TINY, steps, Retry(first_try=first)), "only with retry_draws"),
    ]
    for (sampling, chosen, retry), message in refusals:
        with pytest.raises(BadInput, match=message):
            write_llc_table(run, run / "x.csv", sampling, Checkpoints(chosen), retry=retry)
    assert not (run / "x.csv").exists()

"""claims.csv's rows per estimator for the claims on the coefficient (Figures 1a, 1b, 2, K_eff): r / 2 from the
coefficient tables beside the LLC and lambda_Q, decided where the data-rank rule applies and said missing where it
does not, with the reach rule kept for the sampler's estimands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grokslt.analysis.claims.data_rank import rank_reason
from grokslt.analysis.claims.table import evaluate, write_claims
from grokslt.artefacts import seal, sha256

PRIMES = (53, 59, 61, 67, 71)
STEPS = np.arange(100, 1100, 100)


def summary_row(run: str, experiment: str, p: int) -> dict:
    return {"run": run, "experiments": experiment, "status": "early_stop", "llc_preset": "local", "p": p,
            "hidden": 1024, "lr": 1e-4, "weight_decay": 1e-5, "batch_size": 128, "gsm": 0.5,
            "memorisation_step": 100, "grok_step_50": 500, "grok_step_95": 700,
            "saturation_step": 800, "final_keff_llc": 1000 * (3 * p - 1) / 2, "regime": "subabundant"}  # fmt: skip


def llc_table(steps, llc, v_reach: float = 6e-4) -> pd.DataFrame:
    """A local preset's estimates: trusted, lambda_Q beside them, reaching 0.06% of V's coefficient."""
    llc = np.asarray(llc, float)
    return pd.DataFrame({"step": steps, "llc": llc, "mcse": 0.01 * llc, "converged": True, "local": True,
                         "lambda_q": 0.98 * llc, "lambda_q_stderr": 0.01, "v_reach": v_reach})  # fmt: skip


def coefficient_table(steps, half_rank, interpolating) -> pd.DataFrame:
    interpolating = np.asarray(interpolating, bool)
    return pd.DataFrame({"step": steps, "loss_fraction": np.where(interpolating, 1e-4, 0.03),
                         "interpolating": interpolating, "rank_gap": True,
                         "half_rank": np.where(interpolating, half_rank, np.nan), "half_rank_stderr": 5.0,
                         "half_trace": 60.0, "keff_llc": 1.0, "half_d": 2.0})  # fmt: skip


def sweep(final_interpolates: bool = True, tabled=PRIMES):
    """Figure 1a's runs: the local preset's final LLC falls with p (tr(H) / 2's way) while r / 2 = p (n - 1) / 2-like
    grows linearly in p; coefficient tables for the runs of `tabled`."""
    summary = pd.DataFrame([summary_row(f"p{p}", "vary_p", p) for p in PRIMES])
    llc = {f"p{p}": llc_table([100, 200], [90.0, 200.0 - p]) for p in PRIMES}
    coefficient = {f"p{p}": coefficient_table([100, 200], [np.nan, 560.0 * p], [False, final_interpolates])
                   for p in tabled}  # fmt: skip
    return summary, llc, coefficient


def rows_of(rows, claim: str, estimator: str) -> list[dict]:
    return [r for r in rows if r["claim"] == claim and r["estimator"] == estimator]


def test_r_half_decides_figure_1a_where_the_finals_interpolate():
    summary, llc, coefficient = sweep()
    rows = evaluate(summary, {}, {"paper_code": llc}, None, coefficient=coefficient)
    [law, null] = rows_of(rows, "fig1a_linear_p", "r/2")
    assert law["verdict"] == "holds" and law["value"] == pytest.approx(1.0) and law["preset"] == "sampler-free"
    assert "r / 2 is the learning coefficient itself" in law["note"] and "reaches only" not in law["note"]
    assert "slope 560" in law["note"]
    assert null["verdict"] == "inconclusive" and "K_eff not measured" in null["note"]
    # the local preset's estimates and lambda_Q: the reach rule keeps them inconclusive
    for estimator in ("llc", "lambda_Q"):
        [estimate, _] = rows_of(rows, "fig1a_linear_p", estimator)
        assert estimate["verdict"] == "inconclusive" and "reaches only 0.06%" in estimate["note"]


def test_r_half_is_said_missing_where_the_finals_do_not_interpolate():
    summary, llc, coefficient = sweep(final_interpolates=False)
    rows = evaluate(summary, {}, {"paper_code": llc}, None, coefficient=coefficient)
    [row] = rows_of(rows, "fig1a_linear_p", "r/2")
    assert row["verdict"] == "inconclusive" and np.isnan(row["value"]) and row["n"] == 5
    assert "of the 5 final checkpoints the claim reads" in row["note"]
    assert "5 not interpolating (L_n / L_n(0) 0.03-0.03, the table's `interpolating` false)" in row["note"]
    assert "no number is given" in row["note"]


def test_a_run_without_a_coefficient_table_leaves_r_half_undecided():
    summary, llc, coefficient = sweep(tabled=PRIMES[:-1])
    [row] = rows_of(evaluate(summary, {}, {"paper_code": llc}, None, coefficient=coefficient), "fig1a_linear_p", "r/2")
    assert row["verdict"] == "inconclusive" and "1 no coefficient table" in row["note"]


def test_a_coefficient_table_without_the_final_step_is_said_so():
    summary, llc, coefficient = sweep()
    coefficient = {run: table.iloc[:1] for run, table in coefficient.items()}
    [row] = rows_of(evaluate(summary, {}, {"paper_code": llc}, None, coefficient=coefficient), "fig1a_linear_p", "r/2")
    assert row["verdict"] == "inconclusive" and "5 no coefficient at the final step (200)" in row["note"]


def test_no_r_half_rows_without_coefficient_tables():
    summary, llc, _ = sweep()
    rows = evaluate(summary, {}, {"paper_code": llc}, None)
    assert {r["estimator"] for r in rows} == {"llc", "lambda_Q"}
    pd.testing.assert_frame_equal(pd.DataFrame(evaluate(summary, {}, {"paper_code": llc}, None, coefficient={})),
                                  pd.DataFrame(rows))  # fmt: skip


def test_r_half_rows_once_whatever_the_presets_and_only_for_claims_that_read_tabled_runs():
    summary, llc, coefficient = sweep()
    rows = evaluate(summary, {}, {"paper_code": llc, "certified": llc}, None, coefficient=coefficient)
    # Figure 1a and K_eff read the tabled vary_p runs; Figure 1b and 2 read no run here: no r / 2 row to give
    assert sorted({r["claim"] for r in rows if r["estimator"] == "r/2"}) == ["fig1a_linear_p", "keff_closed_form"]
    assert len(rows_of(rows, "fig1a_linear_p", "r/2")) == 2  # the law and the d null, once for both presets
    assert {r["preset"] for r in rows if r["estimator"] == "r/2"} == {"sampler-free"}


def test_keff_at_r_half():
    """r / 2 equal to the closed form: the median ratio 1 holds, though the local preset's is inconclusive."""
    summary, llc, _ = sweep()
    coefficient = {f"p{p}": coefficient_table([100, 200], [np.nan, 1000 * (3 * p - 1) / 2], [False, True])
                   for p in PRIMES}  # fmt: skip
    rows = evaluate(summary, {}, {"paper_code": llc}, None, coefficient=coefficient)
    [truth] = rows_of(rows, "keff_closed_form", "r/2")
    assert truth["verdict"] == "holds" and truth["value"] == pytest.approx(1.0)
    [estimate] = rows_of(rows, "keff_closed_form", "llc")
    assert estimate["verdict"] == "inconclusive" and "reaches only" in estimate["note"]


def peak_runs(interpolating_from: int):
    """Figure 2's seeds: the estimates and r / 2 both peak at step 300, before val 50% (step 500); r / 2 is
    tabled at every checkpoint but applies only from `interpolating_from`."""
    shape = 100 + 50 * np.exp(-(((STEPS - 300) / 150.0) ** 2))
    summary = pd.DataFrame([summary_row(f"s{i}", "seeds", 53) for i in range(6)])
    llc = {f"s{i}": llc_table(STEPS, shape) for i in range(6)}
    loss = {f"s{i}": pd.DataFrame({"step": STEPS, "val_loss": shape / 100, "trace_hutchinson": shape})
            for i in range(6)}  # fmt: skip
    coefficient = {f"s{i}": coefficient_table(STEPS, 200 * shape, interpolating_from <= STEPS) for i in range(6)}
    return summary, loss, llc, coefficient


def test_figure_2_at_r_half_needs_it_at_every_tabled_checkpoint():
    summary, loss, llc, coefficient = peak_runs(interpolating_from=100)
    rows = evaluate(summary, loss, {"paper_code": llc}, None, coefficient=coefficient)
    [truth] = rows_of(rows, "fig2_peak_before_generalisation", "r/2")
    assert truth["verdict"] == "holds" and truth["n"] == 6 and truth["preset"] == "sampler-free"
    summary, loss, llc, coefficient = peak_runs(interpolating_from=600)
    rows = evaluate(summary, loss, {"paper_code": llc}, None, coefficient=coefficient)
    [truth] = rows_of(rows, "fig2_peak_before_generalisation", "r/2")
    assert truth["verdict"] == "inconclusive" and "of the 60 tabled checkpoints" in truth["note"]
    assert "30 not interpolating" in truth["note"]
    # the estimates still answer the shape claim (no reach rule in time), about curvature per lambda_Q's twin row
    [estimate] = rows_of(rows, "fig2_peak_before_generalisation", "llc")
    assert estimate["verdict"] == "holds" and "the claim is about curvature" in estimate["note"]


def sealed_csv(table: pd.DataFrame, path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    seal(path, sha256(path.read_bytes()), "a test")
    return str(path)


def test_claims_csv_reads_the_sealed_coefficient_tables(tmp_path):
    summary, llc, coefficient = sweep()
    summary.to_csv(tmp_path / "runs.csv", index=False)
    loss = [sealed_csv(table.assign(diverged=False), tmp_path / run / "loss_data.csv") for run, table in llc.items()]
    tables = [sealed_csv(table, tmp_path / run / "coefficient.csv") for run, table in coefficient.items()]
    write_claims(tmp_path / "runs.csv", loss, [], None, tmp_path / "claims.csv", coefficient_csvs=tables)
    written = pd.read_csv(tmp_path / "claims.csv")
    truth = written[(written["claim"] == "fig1a_linear_p") & (written["estimator"] == "r/2")]
    assert truth["verdict"].tolist() == ["holds", "inconclusive"]


def test_rank_reason_names_why_r_half_is_missing():
    row = {"half_rank": np.nan, "interpolating": True, "rank_gap": False}
    assert rank_reason(pd.Series(row)) == "rank not numerically defined (the threshold is not in a spectral gap)"
    assert rank_reason(pd.Series(row | {"interpolating": False})) == "not interpolating"
    assert rank_reason(pd.Series(row | {"half_rank": 3.0})) == ""

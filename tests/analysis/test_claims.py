"""The claims' statistics and verdicts on synthetic runs whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from claims_support import linear_evidence, series, summary_row
from scipy import stats

from grokslt.analysis.claims import CLAIMS
from grokslt.analysis.claims.evidence import Evidence
from grokslt.analysis.claims.statistics import effective_pairs, ols, spearman, trend_slope, wilson
from grokslt.analysis.claims.table import evaluate
from grokslt.analysis.llc_series import smoothed_peak


def test_ols_and_wilson():
    coef, se, r2 = ols([1, 2, 3, 4], [3, 5, 7, 9])
    assert coef.tolist() == pytest.approx([2, 1]) and r2 == pytest.approx(1.0)
    low, high = wilson(18, 20)
    assert 0.68 < low < 0.9 < high < 0.98
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0  # a claims note printed [-0.00, 0.43] before


@pytest.mark.parametrize(
    "noise, curve, verdict", [(1.0, 0.0, "holds"), (0.0, 30.0, "fails"), (0.0, 0.4, "inconclusive")]
)
def test_a_linear_law_holds_or_fails(noise, curve, verdict):
    """Exactly linear up to noise holds; strongly curved fails; a slight curvature with R^2 above 0.95
    (smoothly convex, no noise) is never `holds`: its quadratic term exceeds the t critical value."""
    [row, _] = CLAIMS["fig1a_linear_p"].function()(linear_evidence(noise, curve), "paper_code")
    assert row["verdict"] == verdict and row["n"] == 5 and row["preset"] == "paper_code"
    if curve == 0.4:
        assert row["value"] > 0.95 and "(t critical 4.3: curved)" in row["note"]


@pytest.mark.parametrize("law, verdict", [("theory", "holds"), ("fraction of d", "fails")])
def test_the_theory_constant_against_the_d_proportional_null(law, verdict):
    """K_eff varies unlike p: an LLC of K_eff (3p - 1) / 2 beats a fixed fraction of 3pK, and an LLC that is a
    fixed fraction of 3pK does not."""
    keff = {53: 10, 59: 30, 61: 12, 67: 25, 71: 15}
    rows, llc = [], {}
    for p, k in keff.items():
        value = k * (3 * p - 1) / 2 if law == "theory" else 0.02 * 3 * p * 1024
        rows.append(summary_row(f"p{p}", "vary_p", p=p, final_K_eff=k))
        llc[f"p{p}"] = series([100, 200], [value / 2, value])
    [_, null] = CLAIMS["fig1a_linear_p"].function()(Evidence(pd.DataFrame(rows), {}, llc, None), "paper_code")
    assert null["verdict"] == verdict, null
    assert ("a = 1 (theory: 1)" in null["note"]) == (law == "theory")


def test_too_few_points_are_inconclusive():
    evidence = linear_evidence(1.0)
    evidence.llc = {run: table for run, table in list(evidence.llc.items())[:3]}
    [row] = CLAIMS["fig1a_linear_p"].function()(evidence, "certified")  # no null row without a law
    assert row["verdict"] == "inconclusive" and row["preset"] == "certified"


def peak_evidence(peak_first: bool, runs: int = 20) -> Evidence:
    steps = np.arange(100, 1100, 100)
    rows, llc, loss = [], {}, {}
    for i in range(runs):
        run = f"s{i}"
        rows.append(summary_row(run, "seeds", grok_step_50=600))
        shape = np.exp(-(((steps - (300 if peak_first else 900)) / 150.0) ** 2)) * 50 + 100
        llc[run] = series(steps, shape)
        loss[run] = pd.DataFrame({"step": steps, "val_loss": shape / 100, "trace_hutchinson": shape})
    return Evidence(pd.DataFrame(rows), loss, llc, None)


@pytest.mark.parametrize("peak_first, verdict", [(True, "holds"), (False, "fails")])
def test_the_peak_before_generalisation(peak_first, verdict):
    [row] = CLAIMS["fig2_peak_before_generalisation"].function()(peak_evidence(peak_first), "paper_code")
    assert row["verdict"] == verdict and row["n"] == 20


def test_a_peak_first_whose_fall_is_within_the_mcse_decides_nothing():
    evidence = peak_evidence(True)
    evidence.llc = {run: table.assign(mcse=100.0) for run, table in evidence.llc.items()}
    [row] = CLAIMS["fig2_peak_before_generalisation"].function()(evidence, "paper_code")
    assert row["verdict"] == "inconclusive" and row["value"] == 0 and "20 within MCSE" in row["note"]


def test_mirroring_the_validation_loss():
    [row] = CLAIMS["fig2_mirrors_val_loss"].function()(peak_evidence(True), "paper_code")
    assert row["value"] == pytest.approx(1.0) and row["verdict"] == "holds"


def test_trace_after_saturation():
    steps = np.arange(100, 3100, 100)
    llc = np.where(steps < 800, steps / 10.0, 80.0)
    trace = np.where(steps < 800, steps / 5.0, 160.0 + (steps - 800) / 10.0)
    evidence = Evidence(
        pd.DataFrame([summary_row("long", "baseline_long")]),
        {"long": pd.DataFrame({"step": steps, "trace_hutchinson": trace, "val_loss": 0.1})},
        {"long": series(steps, llc + np.random.default_rng(0).normal(0, 0.1, len(steps)))},
        None,
    )
    [row] = CLAIMS["fig2_trace_aligned_then_diverges"].function()(evidence, "paper_code")
    assert row["verdict"] == "holds", row
    assert row["note"].startswith("Hutchinson trace")


def test_the_trace_claim_reads_the_exact_trace_where_the_run_has_it():
    """Hutchinson's estimate rises after saturation, the exact trace falls: the exact one decides."""
    steps = np.arange(100, 3100, 100)
    llc = np.where(steps < 800, steps / 10.0, 80.0) + np.random.default_rng(0).normal(0, 0.1, len(steps))
    exact = np.where(steps < 800, steps / 5.0, 160.0 - (steps - 800) / 50.0)
    hutchinson = exact + np.where(steps < 800, 0.0, (steps - 800) / 10.0)
    loss = pd.DataFrame({"step": steps, "trace_hutchinson": hutchinson, "trace_exact": exact, "val_loss": 0.1})
    evidence = Evidence(pd.DataFrame([summary_row("long", "baseline_long")]), {"long": loss},
                        {"long": series(steps, llc)}, None)  # fmt: skip
    [row] = CLAIMS["fig2_trace_aligned_then_diverges"].function()(evidence, "paper_code")
    assert row["verdict"] == "fails" and row["note"].startswith("exact trace"), row


def test_trend_errors_keep_their_coverage_under_autocorrelated_residuals():
    """No trend, AR(1) residuals (phi 0.8): OLS's own error calls a trend in about half the series, the
    corrected error in close to the nominal 5%; the lag-1 rule counts about n (1 - 0.64) / (1 + 0.64) pairs."""
    rng = np.random.default_rng(1)
    x, calls = np.arange(200.0), []
    for _ in range(300):
        noise = np.zeros(200)
        for t in range(1, 200):
            noise[t] = 0.8 * noise[t - 1] + rng.standard_normal()
        slope, se = trend_slope(x, noise)
        (ols_slope, _), (ols_se, _), _ = ols(x, noise)
        calls.append((abs(slope) > 1.96 * se, abs(ols_slope) > 1.96 * ols_se))
    corrected, naive = np.mean(calls, axis=0)
    assert naive > 0.3 and corrected < 0.1, (corrected, naive)
    assert effective_pairs(noise, noise) == pytest.approx(200 * 0.36 / 1.64, rel=0.25)


def test_every_claim_answers_on_empty_evidence():
    """No run of an experiment: every claim says inconclusive rather than failing."""
    empty = pd.DataFrame([summary_row("x", "other")])
    rows = evaluate(empty, {"x": pd.DataFrame()}, {"paper_code": {"x": pd.DataFrame({"step": [1], "llc": [1.0],
                    "mcse": [0.1], "converged": [True], "local": [True]})}}, None)  # fmt: skip
    assert {row["verdict"] for row in rows} == {"inconclusive"}
    # (Figure 9's GSM claim reads no LLC; the WAIC claim is asked only where per-pair losses were traced)
    assert {row["claim"] for row in rows} >= set(CLAIMS) - {"fig9_gsm_falls_with_lr", "waic_predicts_val_loss"}


def test_only_local_converged_estimates_decide():
    """The same linear law: holds on trusted estimates, inconclusive (its statistic kept) when one
    estimate of a run it read is not local, or not converged."""
    evidence = linear_evidence(noise=0.1)
    trusted = evaluate(evidence.summary, {}, {"paper_code": evidence.llc}, None)
    [law, _] = [r for r in trusted if r["claim"] == "fig1a_linear_p"]
    assert law["verdict"] == "holds", law
    for column in ("local", "converged"):
        llc = {run: table.copy() for run, table in evidence.llc.items()}
        llc["p59"].loc[1, column] = False  # its final estimate, the one the law reads
        rows = evaluate(evidence.summary, {}, {"paper_code": llc}, None)
        [law, _] = [r for r in rows if r["claim"] == "fig1a_linear_p"]
        assert law["verdict"] == "inconclusive" and "own verdict: holds" in law["note"]
        count = "1 not local, 0 not converged" if column == "local" else "0 not local, 1 not converged"
        assert f"of the 5 estimates it read, {count}" in law["note"]


def flat_linear_evidence(estimates: int = 20) -> Evidence:
    """Five runs whose LLC sits at 10 p at every one of `estimates` checkpoints: the linear law holds."""
    rows = [summary_row(f"p{p}", "vary_p", p=p) for p in (53, 59, 61, 67, 71)]
    llc = {row["run"]: series(np.arange(1, estimates + 1) * 100, np.full(estimates, 10.0 * row["p"])) for row in rows}
    return Evidence(pd.DataFrame(rows), {}, llc, None)


def claim_row(evidence: Evidence, claim: str) -> dict:
    rows = evaluate(evidence.summary, evidence.loss, {"paper_code": evidence.llc}, None)
    return next(r for r in rows if r["claim"] == claim)


def test_a_fit_reads_each_runs_final_estimate_and_cannot_lose_one():
    evidence = flat_linear_evidence()
    evidence.llc["p59"].loc[3, ["converged", "llc"]] = [False, 1e5]  # not a point of the fit: not read
    assert claim_row(evidence, "fig1a_linear_p")["verdict"] == "holds"
    evidence.llc["p59"].loc[19, "converged"] = False  # on the line, but a point of the fit
    law = claim_row(evidence, "fig1a_linear_p")
    assert (
        law["verdict"] == "inconclusive" and "of the 5 estimates it read, 0 not local, 1 not converged" in law["note"]
    )
    assert "each is a point this row's statistic cannot lose" in law["note"], law


def test_an_untrusted_point_voids_its_own_line_and_no_other():
    """Figure 1a fits one line per width: a K = 1024 final that did not converge leaves the K = 512 line decided
    on its own five trusted points. The closed form's median ratio pools every run: one untrusted final of ten
    cannot move it out of [0.8, 1.25], half of them can."""
    rows, llc = [], {}
    for hidden in (512, 1024):
        for p in (53, 59, 61, 67, 71):
            run = f"p{p}_K{hidden}"
            final = 10.0 * p + 5  # K_eff (3p - 1) / 2 exactly: the theory leaves no residual, the null some
            rows.append(summary_row(run, "vary_p", p=p, hidden=hidden, final_keff_llc=final,
                                    final_K_eff=2 * final / (3 * p - 1)))  # fmt: skip
            llc[run] = series([100, 200], [5.0 * p, final])
    llc["p71_K1024"].loc[1, "converged"] = False
    claims = evaluate(pd.DataFrame(rows), {}, {"paper_code": llc}, None)
    laws = {r["statistic"]: r for r in claims if r["claim"] == "fig1a_linear_p"}
    assert laws["R^2 of final LLC on p (K = 512)"]["verdict"] == "holds"
    null = laws["residual SS of LLC = a K_eff (3p - 1)/2 over that of LLC = b 3pK (K = 512)"]
    assert null["verdict"] == "holds" and "not converged" not in null["note"], null
    wide = laws["R^2 of final LLC on p (K = 1024)"]
    assert wide["verdict"] == "inconclusive" and "own verdict: holds" in wide["note"], wide
    assert "of the 5 estimates it read, 0 not local, 1 not converged" in wide["note"]
    assert all("reads" not in r for r in claims)
    [ratio] = [r for r in claims if r["claim"] == "keff_closed_form"]
    assert ratio["verdict"] == "holds" and "every one of which gives this verdict" in ratio["note"], ratio
    assert "of the 10 estimates it read, 0 not local, 1 not converged" in ratio["note"]
    for p in (53, 59, 61, 67):
        llc[f"p{p}_K1024"].loc[1, "converged"] = False
    claims = evaluate(pd.DataFrame(rows), {}, {"paper_code": llc}, None)
    [ratio] = [r for r in claims if r["claim"] == "keff_closed_form"]
    assert ratio["verdict"] == "inconclusive" and "own verdict: holds" in ratio["note"], ratio
    assert "of the 10 estimates it read, 0 not local, 5 not converged" in ratio["note"]


@pytest.mark.parametrize(
    "trusted_ratios, verdict",
    [
        ([0.1, 0.1, 3.0, 3.0], "inconclusive"),  # both ends fail, yet an untrusted ratio of 1 would make it hold
        ([1.0, 1.0, 1.0, 3.0], "holds"),  # at +inf the median is 1; at -inf, 1 too
        ([0.1, 0.1, 0.1, 1.0], "fails"),  # the median lies in [0.1, 0.1] whatever the untrusted final says
        ([1.0, 1.1, 1.5, 1.6], "inconclusive"),  # holds at -inf (median 1.1), not at +inf (1.5)
    ],
)
def test_the_closed_form_median_keeps_a_verdict_only_when_no_value_of_an_untrusted_final_changes_it(
    trusted_ratios, verdict
):
    rows = [summary_row(f"p{p}", "vary_K", p=p, final_keff_llc=1.0) for p in (53, 59, 61, 67, 71)]
    llc = {r["run"]: series([100], [ratio]) for r, ratio in zip(rows, [*trusted_ratios, 1.0], strict=True)}
    llc["p71"].loc[0, "converged"] = False
    claims = evaluate(pd.DataFrame(rows), {}, {"paper_code": llc}, None)
    [ratio] = [r for r in claims if r["claim"] == "keff_closed_form"]
    assert ratio["verdict"] == verdict, ratio
    assert "0 not local, 1 not converged" in ratio["note"]


def test_figure_1b_and_the_closed_form_read_only_subabundant_runs():
    """Five widths on a line of slope 1 and a sixth, superabundant, far below it: the law holds over the five
    and the note says one run was left out; the closed-form ratio ignores it too."""
    rows, llc = [], {}
    widths = [(K, "subabundant", float(K)) for K in (128, 256, 512, 1024, 1536)] + [(2048, "superabundant", 1.0)]
    for K, regime, value in widths:
        run = f"K{K}"
        rows.append(summary_row(run, "vary_K", hidden=K, regime=regime, final_keff_llc=value))
        llc[run] = series([100, 200], [value / 2, value])
    evidence = Evidence(pd.DataFrame(rows), {}, llc, None)
    law = claim_row(evidence, "fig1b_linear_K")
    assert law["verdict"] == "holds" and law["n"] == 5 and "runs not subabundant, left out: 1" in law["note"], law
    keff = claim_row(evidence, "keff_closed_form")
    assert keff["value"] == pytest.approx(1.0) and keff["n"] == 5, keff


NOISE = (0.5, 1.0, 1.5, 2.0, 2.5)  # per run: its LLC's noise around 10 x its validation loss


def mirror_evidence() -> Evidence:
    """Five seeds, 20 estimates each after memorisation, whose LLC follows the validation loss less
    closely from one run to the next (Pearson r about 0.98 down to 0.76): the mirror claim holds."""
    rng = np.random.default_rng(1)
    steps = np.arange(1, 21) * 100
    val_loss = 1 - np.arange(20) / 20
    rows, loss, llc = [], {}, {}
    for i, noise in enumerate(NOISE):
        run = f"s{i}"
        rows.append(summary_row(run, "seeds", memorisation_step=100))
        loss[run] = pd.DataFrame({"step": steps, "val_loss": val_loss})
        llc[run] = series(steps, 10 * val_loss + noise * rng.standard_normal(20))
    return Evidence(pd.DataFrame(rows), loss, llc, None)


def median_r(evidence: Evidence) -> float:
    return float(np.median([stats.pearsonr(evidence.llc[run]["llc"], evidence.loss[run]["val_loss"])[0]
                            for run in evidence.llc]))  # fmt: skip


def test_a_few_untrusted_trajectory_estimates_are_set_aside_and_the_claim_computed_without_them():
    """1 of 100 estimates not converged, an outlier in the median run: the claim reports the median r
    without it (which differs from the one with it), holds either way, and says so."""
    evidence = mirror_evidence()
    trusted_r = median_r(evidence)
    evidence.llc["s2"].loc[10, ["converged", "llc"]] = [False, 60.0]
    assert abs(median_r(evidence) - trusted_r) > 0.01  # the outlier moves the median
    mirror = claim_row(evidence, "fig2_mirrors_val_loss")
    assert mirror["verdict"] == "holds" and mirror["value"] == pytest.approx(trusted_r), (mirror, trusted_r)
    assert (
        "of the 100 estimates it read, 0 not local, 1 not converged, set aside: computed without them"
        in (mirror["note"])
    )


def test_untrusted_estimates_that_change_the_verdict_leave_it_undecided():
    """5 of 100 (the most that may be set aside) pull three runs' r down: with them the median r is
    too low to hold, without them it holds, so neither is the answer."""
    evidence = mirror_evidence()
    for run, at in (("s0", [5, 15]), ("s1", [5, 15]), ("s2", [10])):
        evidence.llc[run].loc[at, ["local", "llc"]] = [False, 60.0]
    mirror = claim_row(evidence, "fig2_mirrors_val_loss")
    assert mirror["verdict"] == "inconclusive", mirror
    assert "setting them aside changes the verdict (without them: holds)" in mirror["note"], mirror


def test_untrusted_estimates_beyond_the_share_or_emptying_a_run_leave_it_undecided():
    evidence = mirror_evidence()
    for run in ("s0", "s1", "s2"):  # 6 of 100, more than UNTRUSTED_SHARE
        evidence.llc[run].loc[[0, 1], "local"] = False
    mirror = claim_row(evidence, "fig2_mirrors_val_loss")
    assert mirror["verdict"] == "inconclusive" and "6% of them untrusted, more than the 5%" in mirror["note"], mirror
    evidence = mirror_evidence()
    evidence.summary.loc[len(evidence.summary)] = summary_row("s5", "seeds", memorisation_step=100)
    evidence.loss["s5"] = evidence.loss["s0"]
    evidence.llc["s5"] = series([100], [5.0]).assign(local=False)  # 1 of 101, but all of s5's
    mirror = claim_row(evidence, "fig2_mirrors_val_loss")
    assert mirror["verdict"] == "inconclusive" and "runs with no trusted estimate: 1 (s5)" in mirror["note"], mirror


def sensitivity_grid(local: bool) -> pd.DataFrame:
    rows = [dict(step_size=e, localization=g, llc_mean=100 * np.exp(-g / 50), local=local, converged=True)
            for e in (1e-4, 5e-4) for g in (1, 5, 20, 50, 100)]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("local, verdict", [(True, "holds"), (False, "inconclusive")])
def test_the_sensitivity_grid_decides_only_with_local_estimates(local, verdict):
    empty = pd.DataFrame([summary_row("x", "other")])
    rows = evaluate(empty, {}, {"paper_code": {}}, sensitivity_grid(local))
    [b2] = [r for r in rows if r["claim"] == "b2_log_linear_gamma"]
    assert b2["verdict"] == verdict, b2
    assert ("10 not local" in b2["note"]) == (not local)


def test_a_smoke_test_marks_every_verdict(tmp_path):
    from grokslt.analysis.claims.table import SMOKE_TEST, write_claims
    from grokslt.artefacts import seal, sha256

    summary = pd.DataFrame([summary_row("x", "other")])
    summary.to_csv(tmp_path / "runs.csv", index=False)
    (tmp_path / "x").mkdir()
    pd.DataFrame({"step": [1], "llc": [1.0], "mcse": [0.1], "converged": [True], "local": [True],
                  "diverged": [False]}).to_csv(tmp_path / "x" / "loss_data.csv", index=False)  # fmt: skip
    loss = (tmp_path / "x" / "loss_data.csv").read_bytes()
    seal(tmp_path / "x" / "loss_data.csv", sha256(loss), "a test")  # the seal `grokslt tables` writes
    rows = write_claims(tmp_path / "runs.csv", [tmp_path / "x" / "loss_data.csv"], [], None, tmp_path / "c.csv", True)
    assert rows and all(row["note"].startswith(SMOKE_TEST) for row in rows)
    assert pd.read_csv(tmp_path / "c.csv")["note"].str.startswith("smoke test").all()


def waic_table(predicted_gap_share: float, lead: int = 0) -> pd.DataFrame:
    """Decisive checkpoints of a grokking run: the measured Bayes validation loss falls from 1 to 0.1 between
    steps 1000 and 3000; WAIC predicts `predicted_gap_share` of the gap, its fall `lead` steps earlier."""
    steps = np.array([100, 500, 1000, 2000, 3000, 4000])
    train = np.full(len(steps), 0.01)
    measured = train + np.interp(steps, [1000, 3000], [1.0, 0.1])
    predicted = train + predicted_gap_share * np.interp(steps + lead, [1000, 3000], [1.0, 0.1])
    return pd.DataFrame({"step": steps, "waic": predicted, "bayes_val_loss": measured, "bayes_train_loss": train,
                         "predicted_gap": predicted - train, "measured_gap": measured - train})  # fmt: skip


def traced(local=True, converged=True) -> pd.DataFrame:
    return pd.DataFrame({"step": [100, 1000], "llc_mean": [1.0, 2.0], "mcse": 0.1, "converged": converged,
                         "local": local, "preset": "local"})  # fmt: skip


def waic_predicts_val_loss(waic, traced) -> list[dict]:
    """The WAIC claim's rows as `grokslt claims` asks it: an entry of the registry like every claim."""
    return evaluate(pd.DataFrame({"run": []}), {}, {}, None, waic, traced)


def test_waic_claim_holds_when_waic_tracks_and_sizes_the_gap_and_fails_when_it_sees_none():
    from grokslt.analysis.claims.evidence import FAILS, HOLDS, INCONCLUSIVE
    from grokslt.analysis.claims.statistics import half_fall_step

    assert half_fall_step(np.array([0, 10, 20]), np.array([1.0, 1.0, 0.0])) == 15
    runs = {f"r{i}": waic_table(1.0, lead=200) for i in range(3)}
    tracks, sized = waic_predicts_val_loss(runs, {run: traced() for run in runs})
    assert (tracks["verdict"], sized["verdict"]) == (HOLDS, HOLDS) and tracks["value"] > 0.99
    assert "+200 steps" in tracks["note"] and sized["value"] == pytest.approx(1.0)
    blind = {f"r{i}": waic_table(1e-4) for i in range(3)}
    _, sized = waic_predicts_val_loss(blind, {run: traced() for run in blind})
    assert sized["verdict"] == FAILS and sized["value"] == pytest.approx(1e-4)
    late = {f"r{i}": waic_table(1.0, lead=-300) for i in range(3)}
    assert waic_predicts_val_loss(late, {run: traced() for run in late})[0]["verdict"] == FAILS
    untrusted = waic_predicts_val_loss(runs, {run: traced(converged=False) for run in runs})
    assert {r["verdict"] for r in untrusted} == {INCONCLUSIVE} and "not converged" in untrusted[0]["note"]
    short = {run: table.iloc[:2] for run, table in runs.items()}  # no run at 3 checkpoints: nothing was read
    [unread] = waic_predicts_val_loss(short, {run: traced(converged=False) for run in short})
    assert unread["note"] == "no run with per-pair traces at 3 checkpoints (refined.traces)"


def test_the_trajectory_claims_are_decided_for_each_model_family_on_its_own_runs():
    """A summary with quadratic runs that peak first and MLP runs (in no paper experiment) that peak late: the
    family claims get a row per family, each from that family's runs alone; the paper's other claims only one."""
    quadratic, mlp = peak_evidence(True), peak_evidence(False, runs=8)
    mlp_summary = mlp.summary.assign(run=lambda t: "mlp_" + t["run"], experiments="mlp_devinterp", model="mlp")
    summary = pd.concat([quadratic.summary.assign(model="quadratic"), mlp_summary], ignore_index=True)
    rename = {run: f"mlp_{run}" for run in mlp.llc}
    llc = quadratic.llc | {rename[run]: table for run, table in mlp.llc.items()}
    loss = quadratic.loss | {rename[run]: table for run, table in mlp.loss.items()}
    rows = evaluate(summary, loss, {"paper_code": llc}, None)
    peak = {r["model"]: r for r in rows if r["claim"] == "fig2_peak_before_generalisation"}
    assert peak["quadratic"]["verdict"] == "holds" and peak["quadratic"]["n"] == 20
    assert peak["mlp"]["verdict"] == "fails" and peak["mlp"]["n"] == 8
    assert {r["claim"] for r in rows if r["model"] == "mlp"} == {
        "fig2_peak_before_generalisation", "fig2_mirrors_val_loss", "fig2_trace_aligned_then_diverges"
    }  # fmt: skip


def lr_grid_evidence(converged: bool = True) -> Evidence:
    """Six (batch, weight decay) groups of five learning rates whose GSM falls with lr; each run's LLC rises
    to a peak that falls with lr, but one run (batch 16, lr 1e-2) falls from its first estimate."""
    rows, llc = [], {}
    for batch in (16, 32, 64, 128, 256, 512):
        for lr in (1e-4, 5e-4, 1e-3, 5e-3, 1e-2):
            run = f"bs{batch}_lr{lr:g}"
            rows.append(summary_row(run, "vary_lr_wd", batch_size=batch, lr=lr, gsm=-np.log10(lr) / 10))
            top = 100 * (1 - np.log10(lr) / 10)
            shape = [0.2, 0.6, 1.0, 0.7, 0.5, 0.4] if (batch, lr) != (16, 1e-2) else [1.0, 0.8, 0.6, 0.5, 0.4, 0.3]
            llc[run] = series(np.arange(1, 7) * 100, top * np.array(shape)).assign(converged=converged)
    return Evidence(pd.DataFrame(rows), {}, llc, None)


def test_gsm_and_peak_llc_fall_with_lr_pooled_and_in_each_group():
    rows = evaluate(lr_grid_evidence().summary, {}, {"paper_code": lr_grid_evidence().llc}, None)
    gsm = [r for r in rows if r["claim"] == "fig9_gsm_falls_with_lr" and "reaching" not in r["statistic"]]
    pooled, *groups = gsm
    assert pooled["value"] == 1.0 and pooled["n"] == 6 and pooled["verdict"] == "holds", pooled
    assert len(groups) == 6 and {g["verdict"] for g in groups} == {"holds"}
    assert [g["value"] for g in groups] == pytest.approx([-1] * 6)
    assert "batch 16, wd 1e-05" in groups[0]["statistic"] and "p (rho < 0) = 0.00833" in groups[0]["note"]
    peak = [r for r in rows if r["claim"] == "fig9_peak_llc_falls_with_lr"]
    left_out, kept = peak[0], next(r for r in peak if "censored peaks kept" in r["statistic"])
    assert (
        left_out["verdict"] == "holds"
        and "1 of 30 runs peak at their first estimate (censored, left out" in (left_out["note"])
    )
    assert left_out["n"] == 6 and "kept at their observed value" in kept["note"]


def test_an_exact_p_value_never_lets_three_points_decide():
    """Three learning rates in order happen once in six orderings: p = 1/6, not scipy's approximate 0."""
    assert spearman([1, 2, 3], [3, 2, 1]) == (pytest.approx(-1.0), pytest.approx(1 / 6), pytest.approx(1.0))
    rho, falling, _ = spearman([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
    assert rho == pytest.approx(-1.0) and falling == pytest.approx(1 / 120)


def test_unconverged_estimates_leave_the_peak_undecided_but_not_the_gsm():
    evidence = lr_grid_evidence(converged=False)
    rows = evaluate(evidence.summary, {}, {"paper_code": evidence.llc}, None)
    verdicts = {r["claim"]: set() for r in rows}
    for r in rows:
        verdicts[r["claim"]].add(r["verdict"])
    assert verdicts["fig9_gsm_falls_with_lr"] == {"holds"}
    assert verdicts["fig9_peak_llc_falls_with_lr"] == {"inconclusive"}


def test_the_peak_llc_is_that_of_the_smoothed_trajectory_and_censored_at_the_first_estimate():
    spike = series(np.arange(11) * 100, [1, 2, 3, 4, 5, 20, 5, 4, 3, 2, 1])
    assert smoothed_peak(spike) == (pytest.approx((4 + 5 + 20 + 5 + 4) / 5), False)
    assert smoothed_peak(series(np.arange(5) * 100, [10, 8, 6, 4, 2]))[1]

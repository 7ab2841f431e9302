"""The paper's claims (`shared/CLAIMS.md`), each tested by a statistic with its uncertainty.

Every claim reads the run summary, the runs' loss tables and an LLC series per run for one preset:
`paper_code` (the runs' own LLC, at every checkpoint) or `certified` (the calibrated sampler at a subset
of checkpoints, `runs/RUN/certified.csv`). A verdict is `holds`, `fails` or `inconclusive` by the
thresholds written beside each claim below, never tuned to the result; where the data cannot decide
(too few runs, no run of the experiment) the verdict is `inconclusive` and `note` says why.

Only local, honestly converged estimates decide (`trusted`: `grokslt.estimation.locality`,
`grokslt.estimation.diagnostics`): an untrusted estimate is reported, never counted for or against a claim.
Which estimates a claim read is recorded as it reads them (`Evidence.llc`, by run; a claim that fits the grid
of the sampler sensitivity, `READS_SENSITIVITY`, reads its cells). When all are
trusted the claim stands as computed. When some are not, a claim on trajectories is computed again without
them and reports that, provided (a) they are at most UNTRUSTED_SHARE of what it read, (b) every run it read
keeps a trusted estimate, and (c) it tests the same things with the same verdicts with them in: setting aside
more, or estimates that would change the answer, is a selection the data cannot justify. A claim that fits
points cannot lose one (its fit would change design); where it fits several lines (Figure 1a's widths, 1b's
primes), each row names the runs it fitted (`reads`) and is decided on those points alone, so an untrusted point
voids the line it lies on, not the others. K_eff's median ratio weighs its untrusted finals itself: its verdict
stands when it is the same at any values of theirs. Otherwise the verdict is `inconclusive`. The note says
how many were not local and how many not converged either way.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from grokslt.analysis.membership import in_experiments
from grokslt.analysis.theory import SUBABUNDANT
from grokslt.io import write_csv

COLUMNS = ["claim", "model", "preset", "statistic", "value", "uncertainty", "verdict", "n", "note"]
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


class ReadRecord(dict):
    """{run: LLC series} that remembers which runs were read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, run):
        self.read.add(run)
        return super().__getitem__(run)


@dataclass
class Evidence:
    """What one preset's claims read about one model family. `llc`: {run: DataFrame[step, llc, mcse, converged,
    local]}. For the quadratic network an experiment's runs are the config's; another family has no paper
    experiments, so every run of that family stands for each (`FAMILY_CLAIMS` are statements about each run)."""

    summary: pd.DataFrame
    loss: Mapping[str, pd.DataFrame]
    llc: ReadRecord
    sensitivity: pd.DataFrame | None
    model: str = "quadratic"

    def runs(self, experiment: str) -> pd.DataFrame:
        family = models(self.summary) == self.model
        member = in_experiments(self.summary, experiment) if self.model == "quadratic" else family
        rows = self.summary[family & member & (self.summary["status"] != "diverged")]
        return rows[rows["run"].isin(self.llc)]


def models(summary: pd.DataFrame) -> pd.Series:
    """Each run's model family; a quadratic network trained with another loss than the paper's counts as a family
    of its own, `quadratic/LOSS` (summaries written before families existed hold the paper's model only)."""
    model = summary["model"].fillna("quadratic") if "model" in summary else pd.Series("quadratic", summary.index)
    loss = summary["loss"].fillna("centred_mse") if "loss" in summary else pd.Series("centred_mse", summary.index)
    return model.where((model != "quadratic") | (loss == "centred_mse"), "quadratic/" + loss)


def row(claim, preset, statistic, value, uncertainty, verdict, n, note="", model="quadratic") -> dict:
    return dict(claim=claim, model=model, preset=preset, statistic=statistic, value=value, uncertainty=uncertainty,
                verdict=verdict, n=n, note=note)  # fmt: skip


def label(evidence: Evidence, preset: str, runs: pd.DataFrame) -> str:
    """The rows' preset: `certified`, or the sampler presets the runs' own LLCs come from."""
    if preset == "certified" or runs.empty or "llc_preset" not in runs:
        return preset
    return ";".join(sorted(runs["llc_preset"].dropna().astype(str).unique())) or preset


def ols(x, y, degree: int = 1) -> tuple[np.ndarray, np.ndarray, float]:
    """(coefficients highest power first, their standard errors, R^2) of a least-squares polynomial."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    design = np.vander(x, degree + 1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    dof = len(x) - degree - 1
    sigma2 = residual @ residual / dof if dof > 0 else math.nan
    covariance = sigma2 * np.linalg.pinv(design.T @ design)
    total = ((y - y.mean()) ** 2).sum()
    return coef, np.sqrt(np.diag(covariance)), 1 - (residual @ residual) / total if total > 0 else math.nan


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def final_llc(evidence: Evidence, runs: pd.DataFrame) -> pd.Series:
    return runs["run"].map(lambda run: evidence.llc[run]["llc"].iloc[-1])


def final_estimates(evidence: Evidence, runs) -> pd.DataFrame:
    """The last row of each run's LLC series (step, llc, mcse, converged, local), in the order of `runs`."""
    return pd.concat([evidence.llc[run].iloc[-1:] for run in runs], ignore_index=True)


# -- the claims ------------------------------------------------------------------------------------------
# Linear laws: holds when R^2 >= 0.95, the slope exceeds 3 standard errors and no quadratic term exceeds its
# two-sided 95% t critical value (residual degrees of freedom n - 3: curvature decides linearity), for every
# line; fails when some line has R^2 < 0.8 or a slope <= 0; otherwise (or with fewer than 4 points) inconclusive.
# Figure 1b's law is the subabundant regime's (K (d + p - 1) < p d (d + 1) / 2): wider runs are left out.
# Each line also reports the final LLC over the parameter count d = 3pK, and the trivial null: d is itself
# linear in p and K, so a second row fits LLC = a K_eff (3p - 1) / 2 (Corollary 5.4, K_eff measured) and
# LLC = b d, both through 0, and holds when the theory's fit leaves at most half the null's residual sum of
# squares, fails when it leaves more than the null's, else inconclusive.
LINEAR_HOLDS_R2, LINEAR_FAILS_R2, SLOPE_SE = 0.95, 0.8, 3.0
NULL_RSS_HOLDS = 0.5


def linear_law(evidence, preset, claim, experiment, x, line, regime: str | None = None) -> list[dict]:
    """The law per line; with `regime`, over the runs in that regime of Corollary 4.2 only (the note says how
    many others were left out)."""
    runs = evidence.runs(experiment)
    tag = label(evidence, preset, runs)
    runs, outside = in_regime(runs, regime)
    out = []
    for value, group in sorted(runs.assign(final=final_llc(evidence, runs)).groupby(line)):
        left_out = regime_note(outside[outside[line] == value], regime)
        means = group.groupby(x)["final"].mean()
        name = f"{'K' if line == 'hidden' else line} = {value}"
        fitted = {"reads": tuple(group["run"])}
        if len(means) < 4:
            out.append(row(claim, tag, f"R^2 of final LLC on {x} ({name})", math.nan, math.nan, INCONCLUSIVE,
                           len(means), "fewer than 4 sizes") | fitted)  # fmt: skip
            continue
        coef, se, r2 = ols(means.index, means.to_numpy())
        quadratic, quadratic_se, _ = ols(means.index, means.to_numpy(), 2)
        critical = stats.t.ppf(0.975, len(means) - 3)
        curved = abs(quadratic[0]) > critical * quadratic_se[0]
        slope, slope_se = coef[0], se[0]
        if r2 >= LINEAR_HOLDS_R2 and slope > SLOPE_SE * slope_se and not curved:
            verdict = HOLDS
        elif r2 < LINEAR_FAILS_R2 or slope <= 0:
            verdict = FAILS
        else:
            verdict = INCONCLUSIVE
        per_d = group["final"] / (3 * group["p"] * group["hidden"])
        note = (f"slope {slope:.4g} +- {slope_se:.2g}, intercept {coef[1]:.4g}; quadratic term {quadratic[0]:.3g} "
                f"+- {quadratic_se[0]:.2g} (t critical {critical:.3g}: {'curved' if curved else 'not curved'}); "
                f"LLC / 3pK {per_d.min():.3g}-{per_d.max():.3g}")  # fmt: skip
        out.append(row(claim, tag, f"R^2 of final LLC on {x} ({name})", r2, math.nan, verdict, len(means),
                       note + left_out) | fitted)  # fmt: skip
        out.append(beats_d_null(claim, tag, group, name) | fitted)
    note = f"no runs of {experiment}{regime_note(outside, regime)}"
    return out or [row(claim, tag, "R^2", math.nan, math.nan, INCONCLUSIVE, 0, note) | {"reads": ()}]


def in_regime(runs: pd.DataFrame, regime: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs in Corollary 4.2's `regime` (all for None), and those left out."""
    if regime is None:
        return runs, runs.iloc[:0]
    inside = runs["regime"] == regime
    return runs[inside], runs[~inside]


def regime_note(outside: pd.DataFrame, regime: str | None) -> str:
    return f"; runs not {regime}, left out: {len(outside)}" if len(outside) else ""


def beats_d_null(claim, tag, group: pd.DataFrame, name: str) -> dict:
    """The theory's constant K_eff (3p - 1) / 2 against a fixed fraction of d = 3pK, as predictors of the
    final LLC of one line's runs (each fitted through 0 by least squares)."""
    statistic = f"residual SS of LLC = a K_eff (3p - 1)/2 over that of LLC = b 3pK ({name})"
    if "final_K_eff" not in group or group["final_K_eff"].isna().any() or len(group) < 3:
        return row(claim, tag, statistic, math.nan, math.nan, INCONCLUSIVE, len(group), "K_eff not measured")
    y = group["final"].to_numpy(float)
    theory = (group["final_K_eff"] * (3 * group["p"] - 1) / 2).to_numpy(float)
    null = (3 * group["p"] * group["hidden"]).to_numpy(float)

    def rss(xs):
        a = xs @ y / (xs @ xs)
        return float(((y - a * xs) ** 2).sum()), a

    (theory_rss, a), (null_rss, b) = rss(theory), rss(null)
    ratio = theory_rss / null_rss if null_rss > 0 else math.nan
    verdict = HOLDS if ratio <= NULL_RSS_HOLDS else FAILS if ratio > 1 else INCONCLUSIVE
    note = f"a = {a:.3g} (theory: 1), b = {b:.3g}; runs {len(group)}"
    return row(claim, tag, statistic, ratio, math.nan, verdict, len(group), note)


def fig1a_linear_p(evidence, preset):
    return linear_law(evidence, preset, "fig1a_linear_p", "vary_p", "p", "hidden")


def fig1b_linear_K(evidence, preset):  # the paper's claim is about the subabundant regime (section 6, line 258)
    return linear_law(evidence, preset, "fig1b_linear_K", "vary_K", "hidden", "p", SUBABUNDANT)


# The peak before generalisation: a run supports the claim when the peak of its smoothed LLC (a centred
# rolling mean over SMOOTH checkpoints) comes before the val-50% step and exceeds the LLC there by more
# than their combined MCSE; it contradicts it when the peak comes at or after that step; a peak before it
# whose fall is within the MCSE decides nothing. Holds when the Wilson 95% interval of the supporting share
# lies above 1/2; fails when that of the share not contradicting lies below 1/2; otherwise inconclusive.
SMOOTH = 5


def smoothed_llc(series: pd.DataFrame) -> pd.Series:
    """The LLC's centred rolling mean over SMOOTH estimates: where a noisy trajectory's peak is read."""
    return series["llc"].rolling(SMOOTH, center=True, min_periods=1).mean()


def peak_before_generalisation(evidence, preset):
    claim = "fig2_peak_before_generalisation"
    runs = pd.concat([evidence.runs("baseline"), evidence.runs("seeds")]).drop_duplicates("run")
    tag = label(evidence, preset, runs)
    supports, contradicts, total, notes = 0, 0, 0, []
    for _, run in runs.iterrows():
        series = evidence.llc[run["run"]]
        if pd.isna(run["grok_step_50"]) or len(series) < 3:
            notes.append(f"{run['run']}: never reached val 50% or too few estimates")
            continue
        peak = smoothed_llc(series).idxmax()
        at = (series["step"] - run["grok_step_50"]).abs().idxmin()
        margin = series.loc[peak, "llc"] - series.loc[at, "llc"]
        combined = math.hypot(series.loc[peak, "mcse"], series.loc[at, "mcse"])
        before = series.loc[peak, "step"] < run["grok_step_50"]
        total += 1
        supports += bool(before and margin > combined)
        contradicts += not before
    low, high = wilson(supports, total)
    verdict = HOLDS if low > 0.5 else FAILS if wilson(total - contradicts, total)[1] < 0.5 else INCONCLUSIVE
    counts = f"{supports} support, {contradicts} contradict, {total - supports - contradicts} within MCSE"
    note = f"{counts}; Wilson 95% [{low:.2f}, {high:.2f}]; " + "; ".join(notes[:3])
    share = supports / total if total else math.nan
    return [row(claim, tag, "share of runs whose LLC peaks before val 50% and falls by more than its MCSE", share,
                (high - low) / 2, verdict, total, note.strip("; "))]  # fmt: skip


# Mirrors the validation loss: per run, Pearson's r of LLC and validation loss after memorisation (at
# the checkpoints with both). Holds when the median r >= 0.7 and its bootstrap 95% interval excludes 0;
# fails when the median r <= 0; otherwise inconclusive.
MIRROR_R = 0.7


def mirrors_val_loss(evidence, preset):
    claim = "fig2_mirrors_val_loss"
    runs = pd.concat([evidence.runs("baseline"), evidence.runs("seeds")]).drop_duplicates("run")
    tag = label(evidence, preset, runs)
    correlations = []
    for _, run in runs.iterrows():
        merged = evidence.llc[run["run"]].merge(evidence.loss[run["run"]][["step", "val_loss"]], on="step")
        after = merged[merged["step"] >= (run["memorisation_step"] if pd.notna(run["memorisation_step"]) else 0)]
        if len(after) >= 4 and after["llc"].std() > 0:
            correlations.append(stats.pearsonr(after["llc"], after["val_loss"])[0])
    if not correlations:
        return [row(claim, tag, "median Pearson r", math.nan, math.nan, INCONCLUSIVE, 0, "no run with 4 estimates")]
    r = np.array(correlations)
    boot = np.median(np.random.default_rng(0).choice(r, (2000, len(r))), axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    median = float(np.median(r))
    verdict = HOLDS if median >= MIRROR_R and low > 0 else FAILS if median <= 0 else INCONCLUSIVE
    return [row(claim, tag, "median Pearson r of LLC and val loss after memorisation", median, (high - low) / 2,
                verdict, len(r), f"bootstrap 95% [{low:.2f}, {high:.2f}]")]  # fmt: skip


# Trace aligned, then diverging (the long baseline): Pearson's r of LLC and trace up to the end of
# grokking (val 95%), then after saturation the slope of each against the step. The trace is the exact one
# (closed form, the quadratic network) where the run has it at every checkpoint used, else Hutchinson's, and
# its slope reads every checkpoint (the LLC's, its estimates). A trajectory's residuals are autocorrelated:
# the slopes' errors are corrected for it (`trend_slope`) and r's error counts the effective pairs (blank
# where fewer than 3: two trends say little about each other). Holds when r >= 0.7 before, and after
# saturation the trace rises (slope > 2 SE) while the LLC does not (slope < 2 SE); fails when r < 0.3 or the
# trace falls (slope < -2 SE); otherwise inconclusive, and with fewer than MIN_BEFORE estimates up to val 95%
# or MIN_AFTER after saturation (the lag-1 correction needs them).
ALIGNED_R, UNALIGNED_R, RISE_SE = 0.7, 0.3, 2.0
MIN_BEFORE, MIN_AFTER = 4, 10


def trend_slope(x, y) -> tuple[float, float]:
    """The least-squares slope of y on x and its standard error corrected for autocorrelated residuals: a
    trend's slope has variance inflated by (1 + r) / (1 - r) for residuals of lag-1 autocorrelation r > 0 (an
    AR(1) correction; at r = 0.8 it keeps a 5% test near 7% where the plain error gives about 50%, and where
    Newey-West with its usual lags still gives about 28%)."""
    (slope, intercept), (se, _), _ = ols(x, y)
    residual = np.asarray(y, float) - (slope * np.asarray(x, float) + intercept)
    r = max(0.0, float(np.corrcoef(residual[:-1], residual[1:])[0, 1])) if residual.std() > 0 else 0.0
    return float(slope), float(se) * math.sqrt((1 + r) / max(1 - r, 1e-12))


def effective_pairs(x, y) -> float:
    """Pairs of two autocorrelated series worth as much as independent ones for their correlation:
    n (1 - r_x r_y) / (1 + r_x r_y) with the lag-1 autocorrelations r_x, r_y (Bretherton et al. 1999)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    lag1 = [np.corrcoef(z[:-1], z[1:])[0, 1] for z in (x, y)]
    product = max(0.0, lag1[0] * lag1[1])
    return len(x) * (1 - product) / (1 + product)


def trace_aligned_then_diverges(evidence, preset):
    claim = "fig2_trace_aligned_then_diverges"
    runs = evidence.runs("baseline_long")
    tag = label(evidence, preset, runs)
    if runs.empty:
        return [row(claim, tag, "r before, slopes after", math.nan, math.nan, INCONCLUSIVE, 0, "no baseline_long run")]
    run = runs.iloc[0]
    loss = evidence.loss[run["run"]]
    if pd.isna(run["grok_step_95"]) or pd.isna(run["saturation_step"]):
        return [row(claim, tag, "r before", math.nan, math.nan, INCONCLUSIVE, len(loss), "never saturated")]
    exact = "trace_exact" in loss and loss["trace_exact"].notna().all()
    trace = loss[["step", "trace_exact" if exact else "trace_hutchinson"]].set_axis(["step", "trace"], axis=1)
    merged = evidence.llc[run["run"]].merge(trace, on="step")
    before = merged[merged["step"] <= run["grok_step_95"]]
    after, trace_after = (t[t["step"] >= run["saturation_step"]] for t in (merged, trace))
    if len(before) < MIN_BEFORE or len(after) < MIN_AFTER:
        note = f"too few estimates: {len(before)} up to val 95%, {len(after)} after saturation"
        return [row(claim, tag, "r before", math.nan, math.nan, INCONCLUSIVE, len(merged), note)]
    pairs = effective_pairs(before["llc"], before["trace"])
    r = stats.pearsonr(before["llc"], before["trace"])[0]
    llc_slope, llc_se = trend_slope(after["step"], after["llc"])
    trace_slope, trace_se = trend_slope(trace_after["step"], trace_after["trace"])
    if r >= ALIGNED_R and trace_slope > RISE_SE * trace_se and llc_slope < RISE_SE * llc_se:
        verdict = HOLDS
    elif r < UNALIGNED_R or trace_slope < -RISE_SE * trace_se:
        verdict = FAILS
    else:
        verdict = INCONCLUSIVE
    note = (f"{'exact' if exact else 'Hutchinson'} trace; {pairs:.1f} effective pairs before val 95%; after "
            f"saturation (step {int(run['saturation_step'])}): LLC slope {llc_slope:.3g} +- {llc_se:.2g}, trace slope "
            f"{trace_slope:.3g} +- {trace_se:.2g} per step (errors corrected for autocorrelation)")  # fmt: skip
    se = math.sqrt((1 - r * r) / (pairs - 2)) if pairs > 2 else math.nan  # two trends are worth few pairs
    return [row(claim, tag, "Pearson r of LLC and trace up to val 95%", r, se, verdict, len(before), note)]


# Severity and peak LLC fall with the learning rate: Spearman's rho against lr within each (batch size,
# weight decay) with >= 3 learning rates. Pooled: holds when at least 80% of the groups have rho < 0 and a sign
# test rejects a coin (p < 0.05); fails when most groups have rho > 0; otherwise inconclusive. Each group: holds
# when its exact one-sided p for rho < 0 is below 0.05 (three learning rates can never: in order once in six),
# fails when that for rho > 0 is. Pooled rows are asked of all runs and of those reaching val 95% (GSM is 0 for
# the others, and early stopping shapes it); group rows of all runs. The peak LLC is the largest value of the
# smoothed LLC (a centred rolling mean over SMOOTH estimates); a run whose smoothed LLC peaks at its first
# estimate has its true peak at or before it, unobserved (censored): the group rows leave such runs out, and
# a pooled row with them kept at their observed value (a lower bound) says whether that changes the verdict.
FALLING_SHARE, SIGN_P = 0.8, 0.05
EXACT_UP_TO = 8  # points; beyond, scipy's t approximation of Spearman's p


def smoothed_peak(series: pd.DataFrame) -> tuple[float, bool]:
    """The largest value of the smoothed LLC, and whether it sits at the first estimate (censored)."""
    smooth = smoothed_llc(series).reset_index(drop=True)
    return float(smooth.max()), int(smooth.idxmax()) == 0


def spearman(x, y) -> tuple[float, float, float]:
    """Spearman's rho and its one-sided p-values (rho < 0, rho > 0), exact over every ordering of y up to
    EXACT_UP_TO points (the t approximation gives p = 0 to any perfectly ordered set, however small)."""
    rank_x, rank_y = stats.rankdata(x), stats.rankdata(y)
    rho = float(np.corrcoef(rank_x, rank_y)[0, 1]) if np.std(rank_y) > 0 else math.nan
    if len(rank_x) > EXACT_UP_TO:
        return rho, stats.spearmanr(x, y, alternative="less")[1], stats.spearmanr(x, y, alternative="greater")[1]
    orderings = np.array(list(itertools.permutations(rank_y)))
    centred = orderings - orderings.mean(axis=1, keepdims=True)
    null = (
        centred @ (rank_x - rank_x.mean()) / (np.linalg.norm(centred, axis=1) * np.linalg.norm(rank_x - rank_x.mean()))
    )
    return rho, float(np.mean(null <= rho + 1e-12)), float(np.mean(null >= rho - 1e-12))


def lr_runs(evidence, column: str, keep_censored: bool) -> tuple[pd.DataFrame, str]:
    """The vary_lr_wd runs with `column` (the smoothed peak LLC computed where asked) and a note on censoring."""
    runs = evidence.runs("vary_lr_wd")
    if column != "peak_llc":
        return runs, ""
    peaks = [smoothed_peak(evidence.llc[run]) for run in runs["run"]]
    runs = runs.assign(peak_llc=[value for value, _ in peaks], censored=np.array([f for _, f in peaks], bool))
    how = "kept at their observed value, a lower bound" if keep_censored else "left out"
    note = f"; {int(runs['censored'].sum())} of {len(runs)} runs peak at their first estimate (censored, {how})"
    return (runs if keep_censored else runs.loc[~runs["censored"]]), note


def falls_with_lr(evidence, preset, claim, column, reached_only=False, keep_censored=False, by_group=True):
    runs, censored = lr_runs(evidence, column, keep_censored)
    tag = label(evidence, preset, evidence.runs("vary_lr_wd"))
    if reached_only:
        runs = runs[runs["grok_step_95"].notna()]
    scope = " (runs reaching val 95%)" if reached_only else ""
    scope += " (censored peaks kept)" if keep_censored else ""
    groups = [(key, group) for key, group in runs.groupby(["batch_size", "weight_decay"])
              if group["lr"].nunique() >= 3 and group[column].nunique() > 1]  # fmt: skip
    statistic = f"share of (batch, wd) groups with Spearman rho({column}, lr) < 0{scope}"
    if not groups:
        note = f"no group with 3 learning rates{censored}"
        return [row(claim, tag, statistic, math.nan, math.nan, INCONCLUSIVE, 0, note)]
    tests = [spearman(group["lr"], group[column]) for _, group in groups]
    rhos = [rho for rho, _, _ in tests]
    negative = sum(rho < 0 for rho in rhos)
    p_value = stats.binomtest(negative, len(rhos), 0.5, alternative="greater").pvalue
    share = negative / len(rhos)
    verdict = HOLDS if share >= FALLING_SHARE and p_value < SIGN_P else FAILS if share < 0.5 else INCONCLUSIVE
    note = f"median rho {np.median(rhos):.2f}; sign test p = {p_value:.3g}{censored}"
    pooled = row(claim, tag, statistic, share, math.nan, verdict, len(rhos), note)
    by_groups = zip(groups, tests, strict=True) if by_group else ()
    return [pooled, *(group_falls(claim, tag, column, key, group, test) for (key, group), test in by_groups)]


def group_falls(claim, tag, column, key, group, test: tuple[float, float, float]) -> dict:
    """One (batch size, weight decay) group's row: its `spearman` test of `column` against the learning rate."""
    batch, weight_decay = key
    rho, falling, rising = test
    verdict = HOLDS if falling < SIGN_P else FAILS if rising < SIGN_P else INCONCLUSIVE
    statistic = f"Spearman rho({column}, lr) at batch {batch}, wd {weight_decay:g}"
    rates = ", ".join(f"{lr:g}" for lr in sorted(group["lr"]))
    note = f"learning rates {rates}; exact one-sided p (rho < 0) = {falling:.3g}"
    return row(claim, tag, statistic, rho, math.nan, verdict, len(group), note)


def fig9_gsm_falls_with_lr(evidence, preset):
    """Reads no LLC: the sampler's trust does not enter its verdict."""
    claim = "fig9_gsm_falls_with_lr"
    return [
        *falls_with_lr(evidence, preset, claim, "gsm"),
        *falls_with_lr(evidence, preset, claim, "gsm", reached_only=True, by_group=False),
    ]


def fig9_peak_llc_falls_with_lr(evidence, preset):
    claim = "fig9_peak_llc_falls_with_lr"
    return [
        *falls_with_lr(evidence, preset, claim, "peak_llc"),
        *falls_with_lr(evidence, preset, claim, "peak_llc", reached_only=True, by_group=False),
        *falls_with_lr(evidence, preset, claim, "peak_llc", keep_censored=True, by_group=False),
    ]


# Log-linear in gamma (appendix B.2): per step size, R^2 of log LLC on gamma and of LLC on log gamma.
# Holds when the better form has R^2 >= 0.9 at every step size; fails when it has R^2 < 0.5 at some.
LOG_LINEAR_R2, NOT_LOG_LINEAR_R2 = 0.9, 0.5


def b2_log_linear_gamma(evidence, preset):
    claim = "b2_log_linear_gamma"
    table = evidence.sensitivity
    if table is None or table.empty or preset != "paper_code":
        return [
            row(claim, preset, "R^2", math.nan, math.nan, INCONCLUSIVE, 0, "sensitivity grid at the run's preset only")
        ]
    fits = []
    for step_size, group in sorted(table.groupby("step_size")):
        group = group[group["llc_mean"] > 0]
        if group["localization"].nunique() < 3:
            continue
        log_on_gamma = ols(group["localization"], np.log(group["llc_mean"]))[2]
        on_log_gamma = ols(np.log(group["localization"]), group["llc_mean"])[2]
        fits.append((step_size, log_on_gamma, on_log_gamma))
    if not fits:
        return [row(claim, preset, "R^2", math.nan, math.nan, INCONCLUSIVE, 0, "fewer than 3 localizations")]
    best = [max(a, b) for _, a, b in fits]
    form = (
        "LLC on log gamma" if np.mean([b for *_, b in fits]) >= np.mean([a for _, a, _ in fits]) else "log LLC on gamma"
    )
    verdict = HOLDS if min(best) >= LOG_LINEAR_R2 else FAILS if min(best) < NOT_LOG_LINEAR_R2 else INCONCLUSIVE
    note = "; ".join(f"eps {e:g}: R^2 log-on-gamma {a:.3f}, on-log-gamma {b:.3f}" for e, a, b in fits)
    return [
        row(claim, preset, f"smallest R^2 of the better form ({form})", min(best), math.nan, verdict, len(fits), note)
    ]


# K_eff (3p - 1) / 2 (Remark 5.5): the ratio of the final LLC to the closed form at the final K_eff, per
# run of vary_p and vary_K in the subabundant regime (where Remark 5.5 gives it). Holds when the median ratio
# lies in [0.8, 1.25]; fails outside [0.5, 2]. A median does not need every point: where some finals are not
# trusted, the median lies, at any values of theirs, between the medians with those ratios at -inf and at +inf,
# and the verdict stands when that whole interval gives it.
RATIO_HOLDS, RATIO_FAILS = (0.8, 1.25), (0.5, 2.0)


def ratio_verdict(median: float) -> str:
    if RATIO_HOLDS[0] <= median <= RATIO_HOLDS[1]:
        return HOLDS
    return FAILS if not RATIO_FAILS[0] <= median <= RATIO_FAILS[1] else INCONCLUSIVE


def one_verdict_between(lowest: float, highest: float) -> bool:
    """Whether every median in [lowest, highest] gets the same verdict (no threshold lies inside)."""
    inside = [bound for bound in (*RATIO_FAILS, *RATIO_HOLDS) if lowest < bound < highest]
    return not inside and ratio_verdict(lowest) == ratio_verdict(highest)


def keff_closed_form(evidence, preset):
    claim = "keff_closed_form"
    runs = pd.concat([evidence.runs("vary_p"), evidence.runs("vary_K")]).drop_duplicates("run")
    runs = runs[runs["final_keff_llc"].notna() & (runs["final_keff_llc"] > 0)]
    tag = label(evidence, preset, runs)
    runs, outside = in_regime(runs, SUBABUNDANT)  # Remark 5.5's value holds there
    left_out = regime_note(outside, SUBABUNDANT)
    statistic = "median final LLC / K_eff (3p-1)/2"
    if runs.empty:
        return [row(claim, tag, statistic, math.nan, math.nan, INCONCLUSIVE, 0, f"no runs{left_out}") | {"reads": ()}]
    finals = final_estimates(evidence, runs["run"])
    ratio = finals["llc"] / runs["final_keff_llc"].to_numpy()
    median = float(ratio.median())
    low, high = np.percentile(ratio, [25, 75])
    result = row(claim, tag, statistic, median, (high - low) / 2, ratio_verdict(median), len(ratio),
                 f"interquartile range [{low:.3g}, {high:.3g}]{left_out}") | {"reads": ()}  # fmt: skip
    trusted = is_trusted(finals)
    if trusted.all():
        return [result]
    lowest, highest = (float(ratio.where(trusted, bound).median()) for bound in (-math.inf, math.inf))
    reason = f"{untrusted(finals)}; at any values of theirs the median lies in [{lowest:.3g}, {highest:.3g}]"
    if one_verdict_between(lowest, highest):
        return [result | {"note": f"{reason}, every one of which gives this verdict; {result['note']}"}]
    return [undecided(result, reason, "the verdict is not the same throughout that interval")]


CLAIMS: dict[str, Callable[[Evidence, str], list[dict]]] = {
    "fig1a_linear_p": fig1a_linear_p,
    "fig1b_linear_K": fig1b_linear_K,
    "fig2_peak_before_generalisation": peak_before_generalisation,
    "fig2_mirrors_val_loss": mirrors_val_loss,
    "fig2_trace_aligned_then_diverges": trace_aligned_then_diverges,
    "fig9_gsm_falls_with_lr": fig9_gsm_falls_with_lr,
    "fig9_peak_llc_falls_with_lr": fig9_peak_llc_falls_with_lr,
    "b2_log_linear_gamma": b2_log_linear_gamma,
    "keff_closed_form": keff_closed_form,
}


# WAIC predicts the validation loss (beyond the paper; ../shared/CLAIMS.md `waic_predicts_val_loss`): per run
# with per-pair traces (runs/RUN/waic.csv, at the decisive checkpoints), (1) Pearson's r between WAIC and the
# Bayes loss measured on the validation pairs, and the lead of WAIC's fall: the step at which the measured loss
# falls halfway from its largest value to its last, minus the step at which WAIC does (positive: WAIC first),
# by linear interpolation between checkpoints; (2) at the checkpoint of the largest measured gap, the ratio of
# the gap WAIC predicts (WAIC - T_n) to the measured one (G_n - T_n): 1 by Watanabe's theorem for a prior that
# does not depend on the data; the local posterior's prior is centred at w*, fitted to the same pairs, so (2) asks
# whether the local posterior sees the gap at all, not whether a theorem holds. A positive lead also passes when
# WAIC merely follows the training loss: (1) needs the correlation as well.
# (1) holds when the median r >= 0.7 and the median lead >= 0; fails when the median r <= 0 or the median lead
# < 0; (2) holds when the median ratio lies in [0.5, 2], fails otherwise. Uncertainty: the spread over runs
# (half the range), and per run the standard errors over pairs in waic.csv. Trust: the traced estimates
# (runs/RUN/refined/traced.csv) must all be local and converged.
WAIC_R, GAP_RATIO = 0.7, (0.5, 2.0)


def half_fall_step(steps: np.ndarray, values: np.ndarray) -> float:
    """The first step at which `values` fall halfway from their largest value to their last one."""
    top = int(np.argmax(values))
    level = (values[top] + values[-1]) / 2
    for i in range(top, len(values) - 1):
        if values[i] >= level >= values[i + 1] and values[i] > values[i + 1]:
            return float(steps[i] + (values[i] - level) / (values[i] - values[i + 1]) * (steps[i + 1] - steps[i]))
    return math.nan


def waic_predicts_val_loss(waic: Mapping[str, pd.DataFrame], traced: Mapping[str, pd.DataFrame]) -> list[dict]:
    claim = "waic_predicts_val_loss"
    preset = ";".join(sorted({str(p) for t in traced.values() for p in t.get("preset", pd.Series()).dropna()})) or "-"
    correlations, leads, ratios = [], [], []
    for table in waic.values():
        table = table.sort_values("step")
        if len(table) < 3:
            continue
        steps, predicted, measured = table["step"].to_numpy(), table["waic"].to_numpy(), table["bayes_val_loss"]
        measured = measured.to_numpy()
        if np.std(predicted) > 0 and np.std(measured) > 0:
            correlations.append(stats.pearsonr(predicted, measured)[0])
        leads.append(half_fall_step(steps, measured) - half_fall_step(steps, predicted))
        widest = int(np.argmax(table["measured_gap"].to_numpy()))
        ratios.append(table["predicted_gap"].iloc[widest] / table["measured_gap"].iloc[widest])
    if not correlations:
        return [row(claim, preset, "median Pearson r of WAIC and the Bayes validation loss", math.nan, math.nan,
                    INCONCLUSIVE, 0, "no run with per-pair traces at 3 checkpoints (refined.traces)")]  # fmt: skip
    r, lead, ratio = np.median(correlations), np.nanmedian(leads), np.median(ratios)
    spread = lambda values: (np.nanmax(values) - np.nanmin(values)) / 2 if len(values) > 1 else math.nan  # noqa: E731
    tracks = HOLDS if r >= WAIC_R and lead >= 0 else FAILS if r <= 0 or lead < 0 else INCONCLUSIVE
    sized = HOLDS if GAP_RATIO[0] <= ratio <= GAP_RATIO[1] else FAILS
    leads_text = ", ".join(f"{value:+.0f}" for value in leads)
    rows = [
        row(claim, preset, "median Pearson r of WAIC and the Bayes validation loss (decisive checkpoints)", r,
            spread(correlations), tracks, len(correlations),
            f"median lead of WAIC's halfway fall over the measured one: {lead:+.0f} steps (per run: {leads_text})"),
        row(claim, preset, "median predicted / measured generalisation gap at the widest measured gap", ratio,
            spread(ratios), sized, len(ratios), f"Watanabe: 1; holds in [{GAP_RATIO[0]}, {GAP_RATIO[1]}]"),
    ]  # fmt: skip
    series = ReadRecord({run: llc_series(table) for run, table in traced.items()})
    series.read |= set(series)  # every traced estimate is evidence
    return decided(Evidence(pd.DataFrame(), {}, series, None), rows)


def llc_series(table: pd.DataFrame) -> pd.DataFrame:
    """step, llc, mcse, converged, local of an LLC table (a run's loss_data or certified.csv)."""
    llc = table.rename(columns={"llc_mean": "llc"})
    llc = llc[llc["llc"].notna()][["step", "llc", "mcse", "converged", "local"]].reset_index(drop=True)
    return llc.astype({"converged": bool, "local": bool})


UNTRUSTED_SHARE = 0.05  # the most of a trajectory claim's estimates that may be set aside (module docstring)
READS_SENSITIVITY = {"b2_log_linear_gamma"}  # claims that fit the sampler-sensitivity grid (paper_code), a point a cell


def read_estimates(evidence: Evidence, claim: str, preset: str) -> pd.DataFrame:
    """The LLC estimates the claim read: each run's series, and the sensitivity grid where the claim reads it."""
    series = [evidence.llc[run] for run in sorted(evidence.llc.read)]
    grid = evidence.sensitivity
    if claim in READS_SENSITIVITY and preset == "paper_code" and grid is not None and not grid.empty:
        series.append(grid)
    if not series:
        return pd.DataFrame(columns=["local", "converged"])
    return pd.concat(series).astype({"local": bool, "converged": bool})


def is_trusted(table: pd.DataFrame) -> pd.Series:
    return table["local"].astype(bool) & table["converged"].astype(bool)


def untrusted(table: pd.DataFrame) -> str:
    """How many of the estimates read are not trusted ('' when all are local and converged)."""
    not_local, not_converged = int((~table["local"]).sum()), int((~table["converged"]).sum())
    if not (not_local or not_converged):
        return ""
    return (f"only local, honestly converged estimates decide: of the {len(table)} estimates it read, "
            f"{not_local} not local, {not_converged} not converged")  # fmt: skip


def without_untrusted(evidence: Evidence) -> Evidence:
    """The same evidence with every untrusted estimate set aside."""
    trusted = {run: table[is_trusted(table)].reset_index(drop=True) for run, table in evidence.llc.items()}
    return Evidence(evidence.summary, evidence.loss, ReadRecord(trusted), evidence.sensitivity, evidence.model)


def set_aside_blocker(evidence: Evidence, claim: str, read: pd.DataFrame) -> str:
    """Why the untrusted estimates the claim read cannot simply be set aside ('' when they can)."""
    if claim in READS_SENSITIVITY:
        return "each is a point of the claim's fit, which cannot lose one"
    share = float((~is_trusted(read)).mean())
    if share > UNTRUSTED_SHARE:
        return f"{share:.0%} of them untrusted, more than the {UNTRUSTED_SHARE:.0%} that may be set aside"
    emptied = [run for run in sorted(evidence.llc.read) if not is_trusted(evidence.llc[run]).any()]
    if emptied:
        return f"runs with no trusted estimate: {len(emptied)} ({emptied[0]}{', ...' if len(emptied) > 1 else ''})"
    return ""


def decided(evidence: Evidence, rows: list[dict], test: Callable[[Evidence], list[dict]] | None = None,
            preset: str = "") -> list[dict]:  # fmt: skip
    """The claim's rows by the module's rule; `test` computes them from other evidence (without it, any
    untrusted estimate makes the rows inconclusive). Rows that name the runs whose points they need trusted
    (`reads`; none where the row weighed its untrusted points itself) are decided on those points alone."""
    if rows and all("reads" in r for r in rows):
        return [decided_on_points(evidence, r) for r in rows]
    claim = rows[0]["claim"] if rows else ""
    read = read_estimates(evidence, claim, preset)
    reason = untrusted(read)
    if not reason:
        return rows
    blocker = set_aside_blocker(evidence, claim, read) if test else "the claim is not recomputed without them"
    if not blocker:
        kept = test(without_untrusted(evidence))
        if [(r["statistic"], r["verdict"]) for r in kept] == [(r["statistic"], r["verdict"]) for r in rows]:
            return [r | {"note": f"{reason}, set aside: computed without them (the same verdict with them in); "
                         f"{r['note']}".strip("; ")} for r in kept]  # fmt: skip
        verdicts = ", ".join(sorted({r["verdict"] for r in kept})) or "nothing to test"
        blocker = f"setting them aside changes the verdict (without them: {verdicts})"
    return [undecided(r, reason, blocker) for r in rows]


def decided_on_points(evidence: Evidence, fit: dict) -> dict:
    """One row of a claim that fits one point per run, on the final estimates of the runs it names (`reads`,
    dropped)."""
    fit = dict(fit)
    runs = fit.pop("reads")
    reason = untrusted(final_estimates(evidence, runs)) if runs else ""
    return undecided(fit, reason, "each is a point this row's statistic cannot lose") if reason else fit


def undecided(r: dict, reason: str, blocker: str) -> dict:
    note = f"{reason}; {blocker} (the statistic's own verdict: {r['verdict']}); {r['note']}"
    return r | {"verdict": INCONCLUSIVE, "note": note.strip("; ")}


# The claims about each run's trajectory, tested for every other model family in the summary as well (the paper's
# closed forms and sweeps are the quadratic network's: its other claims are not asked of other families).
FAMILY_CLAIMS = ("fig2_peak_before_generalisation", "fig2_mirrors_val_loss", "fig2_trace_aligned_then_diverges")


def claim_test(name: str, preset: str) -> Callable[[Evidence], list[dict]]:
    return lambda evidence: CLAIMS[name](evidence, preset)


def evaluate(summary: pd.DataFrame, loss: Mapping[str, pd.DataFrame], llc_by_preset: Mapping[str, Mapping],
             sensitivity: pd.DataFrame | None) -> list[dict]:  # fmt: skip
    """Every claim for every preset; the family claims for every other model family too (`model` column)."""
    rows = []
    others = sorted(set(models(summary)) - {"quadratic"})
    for preset, llc in llc_by_preset.items():
        tests = [("quadratic", name) for name in CLAIMS] + [(m, name) for m in others for name in FAMILY_CLAIMS]
        for model, name in tests:
            series = ReadRecord({run: llc_series(table) for run, table in llc.items()})
            evidence = Evidence(summary, loss, series, sensitivity, model)
            test = claim_test(name, preset)
            rows.extend(r | {"model": model} for r in decided(evidence, test(evidence), test, preset))
    return rows


SMOKE_TEST = "smoke test: a configuration shrunk to test the pipeline, no evidence for or against the paper"


def write_claims(summary_csv, loss_csvs, certified_csvs, sensitivity_csv, out, smoke_test: bool = False,
                 waic_csvs=(), traced_csvs=()) -> list[dict]:  # fmt: skip
    """claims.csv; `waic_csvs` (runs/RUN/waic.csv) with the estimates behind them (`traced_csvs`,
    runs/RUN/refined/traced.csv) add the WAIC claim."""
    from pathlib import Path

    summary = pd.read_csv(summary_csv)
    loss = {Path(path).parent.name: pd.read_csv(path) for path in loss_csvs}
    loss = {run: table[~table["diverged"]] for run, table in loss.items()}
    presets = {"paper_code": loss}
    certified = {Path(path).parent.name: pd.read_csv(path) for path in certified_csvs or []}
    if certified:  # empty tables where the calibration chose no settings
        presets["certified"] = {run: table for run, table in certified.items() if len(table)}
    sensitivity = pd.read_csv(sensitivity_csv) if sensitivity_csv else None
    rows = evaluate(summary, loss, presets, sensitivity)
    if waic_csvs:
        waic = {Path(path).parent.name: pd.read_csv(path) for path in waic_csvs}
        traced = {Path(path).parent.parent.name: pd.read_csv(path) for path in traced_csvs}
        rows += waic_predicts_val_loss(waic, traced)
    if certified and not presets["certified"]:
        why = "the calibration chose no settings (calibration.json says why): no certified estimates"
        rows = [r | {"note": f"{why}; {r['note']}"} if r["preset"] == "certified" else r for r in rows]
    if smoke_test:
        rows = [r | {"note": f"{SMOKE_TEST}; {r['note']}"} for r in rows]
    write_csv(out, rows, COLUMNS)
    return rows

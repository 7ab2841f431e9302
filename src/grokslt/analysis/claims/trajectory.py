"""Figure 2: each run's LLC trajectory peaks before generalisation, mirrors the validation loss, and follows
the Hessian trace until grokking ends, then parts from it. Asked of every model family."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from grokslt.analysis.claims.evidence import FAILS, HOLDS, INCONCLUSIVE, label, row
from grokslt.analysis.claims.statistics import effective_pairs, trend_slope, wilson
from grokslt.analysis.llc_series import smoothed_llc

# The peak before generalisation: a run supports the claim when the peak of its smoothed LLC (a centred
# rolling mean over SMOOTH checkpoints, `grokslt.analysis.llc_series`) comes before the val-50% step and
# exceeds the LLC there by more than their combined MCSE; it contradicts it when the peak comes at or after that
# step; a peak before it whose fall is within the MCSE decides nothing. The MCSE is an error bar only where both
# estimates converged: the ESS-based MCSE of a non-stationary chain can be 50-90 times the spread between sampler
# replicates (measured/, issue 44), so a fall measured against it is neither support nor "within MCSE", and the
# note counts such runs apart. Holds when the Wilson 95% interval of the supporting share lies above 1/2; fails
# when that of the share not contradicting lies below 1/2; otherwise inconclusive.


def peak_before_generalisation(evidence, preset):
    claim = "fig2_peak_before_generalisation"
    runs = pd.concat([evidence.runs("baseline"), evidence.runs("seeds")]).drop_duplicates("run")
    tag = label(evidence, preset, runs)
    supports, contradicts, total, dishonest, notes = 0, 0, 0, 0, []
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
        honest = bool(series.loc[peak, "converged"] and series.loc[at, "converged"])
        total += 1
        supports += bool(before and honest and margin > combined)
        contradicts += not before
        dishonest += bool(before and not honest)
    low, high = wilson(supports, total)
    verdict = HOLDS if low > 0.5 else FAILS if wilson(total - contradicts, total)[1] < 0.5 else INCONCLUSIVE
    within = total - supports - contradicts - dishonest
    counts = f"{supports} support, {contradicts} contradict, {within} within MCSE"
    if dishonest:
        counts += (f", {dishonest} peak before val 50% but an estimate there did not converge: its MCSE is no error "
                   "bar, the fall undecided")  # fmt: skip
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

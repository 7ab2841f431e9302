"""Figure 9: grokking's severity (GSM) and the peak LLC fall with the learning rate."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from grokslt.analysis.claims.evidence import FAILS, HOLDS, INCONCLUSIVE, label, row
from grokslt.analysis.claims.statistics import spearman
from grokslt.analysis.llc_series import smoothed_peak

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

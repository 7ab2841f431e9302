"""Remark 5.5: the final LLC equals the closed form K_eff (3p - 1) / 2 at the measured K_eff."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from grokslt.analysis.claims.evidence import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    final_estimates,
    grokked,
    label,
    never_grokked_note,
    row,
)
from grokslt.analysis.claims.scaling import in_regime, regime_note
from grokslt.analysis.claims.trust import undecided, untrusted
from grokslt.analysis.llc_series import is_trusted
from grokslt.analysis.theory import SUBABUNDANT

# K_eff (3p - 1) / 2 (Remark 5.5): the ratio of the final LLC to the closed form at the final K_eff, per
# run of vary_p and vary_K that reached val 95%, in the subabundant regime (where Remark 5.5 gives it). Holds when
# the median ratio lies in [0.8, 1.25]; fails outside [0.5, 2]. A median does not need every point: where some
# finals are not trusted, the median lies, at any values of theirs, between the medians with those ratios at -inf
# and at +inf, and the verdict stands when that whole interval gives it.
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
    runs, never = grokked(runs)  # a run that never generalised has no final LLC of the paper's
    runs, outside = in_regime(runs, SUBABUNDANT)  # Remark 5.5's value holds there
    left_out = regime_note(outside, SUBABUNDANT) + never_grokked_note(never)
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

"""Appendix B.2: the LLC is log-linear in the localization gamma, on the sampler-sensitivity grid."""

from __future__ import annotations

import math

import numpy as np

from grokslt.analysis.claims.evidence import FAILS, HOLDS, INCONCLUSIVE, row
from grokslt.analysis.claims.statistics import ols

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

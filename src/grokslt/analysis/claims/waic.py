"""Beyond the paper: WAIC, from the per-pair traces at the decisive checkpoints, predicts the validation loss."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from grokslt.analysis.claims.evidence import FAILS, HOLDS, INCONCLUSIVE, Evidence, row
from grokslt.analysis.claims.statistics import half_fall_step

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


def waic_predicts_val_loss(evidence: Evidence, preset: str) -> list[dict]:
    """Asked once, of the traced estimates (`evidence.llc`, every one read where a run has WAIC at 3 checkpoints):
    no rows where nothing was traced."""
    if evidence.waic is None:
        return []
    claim, waic, traced = "waic_predicts_val_loss", evidence.waic, evidence.traced
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
    evidence.llc.read |= set(evidence.llc)  # every traced estimate is evidence
    return rows

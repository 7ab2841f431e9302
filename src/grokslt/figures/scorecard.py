"""New: the reproduction scorecard: for every run with an authors' log of the same settings, the relative
deviation of ours from theirs per metric (grokking markers, LLC at them and at its peak, GSM)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from grokslt.figures import inputs, style


def scorecard(read):
    table = read.csv("scorecard")
    inputs.require_columns(table, ["experiment", "run"], "scorecard.csv")
    rows = table[(table["run"] != "worst") & table["relative_deviation"].notna()]
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    if rows.empty:
        ax.text(0.5, 0.5, "no run matches an authors' log\n(see scorecard.csv)", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    metrics = list(dict.fromkeys(rows["metric"]))
    for colour, (experiment, group) in zip(style.PALETTE, rows.groupby("experiment"), strict=False):
        y = group["metric"].map(metrics.index) + np.random.default_rng(0).uniform(-0.15, 0.15, len(group))
        ax.plot(100 * group["relative_deviation"], y, "o", color=colour, markersize=3, alpha=0.8, label=experiment)
    ax.axvline(0, color="0.4", linewidth=0.8)
    ax.set_yticks(range(len(metrics)), metrics, fontsize=6)
    ax.set_xlabel("ours vs the authors' log (%)")
    ax.set_title(f"{rows['run'].nunique()} matched runs", fontsize=7)
    ax.legend(fontsize=5)
    return fig

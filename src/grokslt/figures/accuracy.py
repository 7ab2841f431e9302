"""New: how accurate each LLC method is on small quadratic networks: its relative bias against the
exact MALA reference (bars: its spread over seeds, relative to the reference), per nbeta, one panel
per point (grokslt.analysis.accuracy); and the reference itself against nbeta beside the learning coefficient
theory gives at the point."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from grokslt.figures import inputs, style


def estimator_accuracy(read):
    table = read.csv("accuracy")
    inputs.require_columns(
        table, ["point", "method", "nbeta", "estimate", "spread", "reference", "truth"], "accuracy.csv"
    )
    finite = table[np.isfinite(table["nbeta"])]
    points = list(dict.fromkeys(finite["point"]))
    fig, axes = plt.subplots(2, len(points), figsize=(max(style.COLUMN_WIDTH, 2.6 * len(points)), 4.4), squeeze=False)
    methods = list(dict.fromkeys(finite["method"]))
    for column, point in enumerate(points):
        rows = finite[finite["point"] == point]
        bias_ax, truth_ax = axes[0, column], axes[1, column]
        for offset, (colour, method) in enumerate(zip(style.PALETTE, methods, strict=False)):
            line = rows[rows["method"] == method].sort_values("nbeta")
            x = line["nbeta"] * (1 + 0.06 * (offset - len(methods) / 2))
            bias_ax.errorbar(x, line["relative_bias"], yerr=line["spread"] / line["reference"].abs(), fmt="o-",
                             color=colour, markersize=3, linewidth=0.8, capsize=1.5, label=method)  # fmt: skip
        bias_ax.axhline(0, color="0.4", linewidth=0.8)
        bias_ax.set_xscale("log")
        bias_ax.set_title(point, fontsize=6)
        bias_ax.set_ylabel("(estimate - exact) / exact")
        reference = rows.drop_duplicates("nbeta").sort_values("nbeta")
        truth_ax.errorbar(reference["nbeta"], reference["reference"], yerr=reference["reference_mcse"], fmt="ko-",
                          markersize=3, linewidth=0.8, label="exact estimand (MALA)")  # fmt: skip
        truth = reference["truth"].iloc[0]
        if not math.isnan(truth):
            truth_ax.axhline(truth, color=style.LLC, linestyle="--", linewidth=1, label=f"theory: {truth:g}")
        truth_ax.set_xscale("log")
        truth_ax.set_xlabel(r"$n\beta$")
        truth_ax.set_ylabel(r"$E[n\beta (L_n - L_n^*)]$")
        truth_ax.set_title(str(reference["truth_rule"].iloc[0])[:48], fontsize=5)
        truth_ax.legend(fontsize=5)
    axes[0, 0].legend(fontsize=5)
    return fig

"""New: how accurate each LLC method is on small quadratic networks: its relative bias against the
exact MALA reference (bars: its spread over seeds, relative to the reference), per nbeta, one panel
per point (grokslt.analysis.accuracy), or its absolute bias where the reference is not bounded away from
zero (`relative_scale`); and the reference itself against nbeta beside the learning coefficient theory gives at
the point."""

from __future__ import annotations

import math
import re
import textwrap

import matplotlib.pyplot as plt
import numpy as np

from grokslt.figures import inputs, style


def point_title(point: str) -> str:
    """A point's panel title in words: `RUN@STEP` is a trained minimum, `RUN@init` the run's initial point."""
    run, _, where = str(point).rpartition("@")
    sizes = re.match(r"p(\d+)_K(\d+)", run)
    network = f"p = {sizes[1]}, K = {sizes[2]}" if sizes else ""
    if where == "init":
        return f"random initial point ({network})" if network else "random initial point"
    if where.isdigit():
        return f"trained minimum ({network}, step {int(where):,})" if network else f"trained minimum (step {where})"
    return f"point {point}"


def relative_scale(reference, reference_mcse) -> bool:
    """Whether a panel's bias may be relative to the exact reference: only where the reference keeps one sign
    over the panel's nbeta and lies MCSE_AWAY standard errors from zero at each (a reference that crosses zero,
    -0.8 at a random point, turns a bias of 3.7 into "-460%")."""
    reference, mcse = np.asarray(reference, float), np.nan_to_num(np.asarray(reference_mcse, float))
    one_sign = bool((reference > 0).all() or (reference < 0).all())
    return one_sign and bool((np.abs(reference) > MCSE_AWAY * mcse).all())


MCSE_AWAY = 3.0


def estimator_accuracy(read):
    table = read.csv("accuracy")
    needed = ["point", "method", "nbeta", "estimate", "spread", "bias", "reference", "reference_mcse", "truth"]
    inputs.require_columns(table, needed, "accuracy.csv")
    finite = table[np.isfinite(table["nbeta"])]
    points = list(dict.fromkeys(finite["point"]))
    fig, axes = plt.subplots(2, len(points), figsize=(max(style.COLUMN_WIDTH, 3.0 * len(points)), 5.0), squeeze=False)
    methods = list(dict.fromkeys(finite["method"]))
    for column, point in enumerate(points):
        rows = finite[finite["point"] == point]
        bias_ax, truth_ax = axes[0, column], axes[1, column]
        reference = rows.drop_duplicates("nbeta").sort_values("nbeta")
        relative = relative_scale(reference["reference"], reference["reference_mcse"])
        for offset, (colour, method) in enumerate(zip(style.PALETTE, methods, strict=False)):
            line = rows[rows["method"] == method].sort_values("nbeta")
            x = line["nbeta"] * (1 + 0.06 * (offset - len(methods) / 2))
            scale = line["reference"].abs() if relative else 1.0
            bias_ax.errorbar(x, line["bias"] / scale, yerr=line["spread"] / scale, fmt="o-", color=colour,
                             markersize=3, linewidth=0.8, capsize=1.5, label=method)  # fmt: skip
        bias_ax.axhline(0, color="0.4", linewidth=0.8)
        bias_ax.set_xscale("log")
        if relative:
            bias_ax.set_title(f"{point_title(point)}:\nrelative bias of each method", fontsize=7)
            bias_ax.set_ylabel("(estimate - exact) / exact")
        else:
            bias_ax.set_title(f"{point_title(point)}:\nabsolute bias (the exact estimand nears or crosses 0)",
                              fontsize=7)  # fmt: skip
            bias_ax.set_ylabel("estimate - exact")
        truth_ax.errorbar(reference["nbeta"], reference["reference"], yerr=reference["reference_mcse"], fmt="ko-",
                          markersize=3, linewidth=0.8, label="exact estimand (MALA)")  # fmt: skip
        truth = reference["truth"].iloc[0]
        if not math.isnan(truth):
            truth_ax.axhline(truth, color=style.LLC, linestyle="--", linewidth=1, label=f"theory: {truth:g}")
        truth_ax.set_xscale("log")
        truth_ax.set_xlabel(r"$n\beta$")
        truth_ax.set_ylabel(r"$E[n\beta (L_n - L_n^*)]$")
        rule = str(reference["truth_rule"].iloc[0])
        truth_ax.set_title(f"exact estimand at this point\ntheory: {textwrap.fill(rule, 50)}", fontsize=6)
        truth_ax.legend(fontsize=5)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), fontsize=6, ncols=len(methods), loc="outside upper center",
               title="LLC method", title_fontsize=6)  # fmt: skip
    return fig

"""Appendix B.2: the LLC estimate of one trained model against the localization gamma (log scale),
one line per SGLD step size: the log-linear relation of the paper."""

from __future__ import annotations

import matplotlib.pyplot as plt

from grokslt.figures import inputs, style


def sensitivity(read):
    table = read.csv("sensitivity")
    inputs.require_columns(table, ["step_size", "localization", "llc_mean", "llc_std"], "sensitivity.csv")
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.6))
    for colour, (step_size, group) in zip(style.PALETTE, sorted(table.groupby("step_size")), strict=False):
        group = group.sort_values("localization")
        ax.errorbar(
            group["localization"],
            group["llc_mean"],
            yerr=group["llc_std"],
            fmt="o-",
            color=colour,
            markersize=3,
            linewidth=1,
            capsize=2,
            label=rf"$\epsilon$ = {step_size:g}",
        )
    ax.set_xscale("log")
    ax.set_xlabel(r"localization $\gamma$")
    ax.set_ylabel(r"LLC estimate $\hat\lambda$")
    ax.set_title(f"Sampler sensitivity: LLC of the checkpoint at step {int(table['step'].iloc[0])}\nagainst the "
                 "localization, one line per SGLD step size", fontsize=7)  # fmt: skip
    ax.legend(fontsize=6)
    return fig

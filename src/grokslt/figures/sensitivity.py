"""Appendix B.2: the LLC estimate of one trained model against the localization gamma (log scale),
one line per SGLD step size: the log-linear relation of the paper. Every estimate is marked as
`style.mark_estimates` marks it: the grid's corners are rarely local."""

from __future__ import annotations

import matplotlib.pyplot as plt

from grokslt.figures import inputs, style


def sensitivity(read):
    table = read.csv("sensitivity")
    needed = ["step", "step_size", "localization", "llc_mean", "llc_std", "converged", "local"]
    inputs.require_columns(table, needed, "sensitivity.csv")
    table = table.rename(columns={"llc_mean": "llc"})
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    for colour, (step_size, group) in zip(style.PALETTE, sorted(table.groupby("step_size")), strict=False):
        group = group.sort_values("localization")
        shown = style.on_scale(group)
        ax.errorbar(group["localization"], shown, yerr=group["llc_std"], fmt="-", color=colour, linewidth=1,
                    capsize=2, label=rf"$\epsilon$ = {step_size:g}")  # fmt: skip
        style.mark_estimates(ax, group, colour, labelled=False, size=3.5, x="localization")
    style.legend_marks(ax, table)
    ax.set_xscale("log")
    ax.set_xlabel(r"localization $\gamma$")
    ax.set_ylabel(r"LLC estimate $\hat\lambda$ ($\pm$ chain sd)")
    not_local = int((~table["local"].astype(bool)).sum())
    title = (f"Sampler sensitivity: LLC of the checkpoint at step {int(table['step'].iloc[0])}\nagainst the "
             "localization, one line per SGLD step size")  # fmt: skip
    if not_local:
        title += f"\n{not_local} of {len(table)} estimates not local: they measure the sampler, not the basin"
    ax.set_title(title, fontsize=7)
    ax.legend(fontsize=5)
    return fig

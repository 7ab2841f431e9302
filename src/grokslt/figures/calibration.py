"""New: the sampler calibration at one checkpoint: the LLC estimate (with its MCSE) against the step
size, one line per (nbeta, localization); grid points that fail the rule hollow, the chosen one starred
(grokslt.estimation.calibration)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from grokslt.figures import inputs, style


def calibration(read):
    table = read.csv("calibration")
    needed = ["step_size", "nbeta", "localization", "llc_mean", "mcse", "qualifies", "chosen", "step"]
    inputs.require_columns(table, needed, "calibration.csv")
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    groups = sorted(table.groupby(["nbeta", "localization"]))
    for colour, ((nbeta, gamma), group) in zip(style.PALETTE * 3, groups, strict=False):
        group = group.sort_values("step_size")
        ax.errorbar(group["step_size"], group["llc_mean"], yerr=group["mcse"], color=colour, linewidth=0.8,
                    capsize=1.5, label=rf"$n\beta$ = {nbeta:.3g}, $\gamma$ = {gamma:g}")  # fmt: skip
        good = group["qualifies"].astype(bool)
        ax.plot(group["step_size"][good], group["llc_mean"][good], "o", color=colour, markersize=3.5)
        ax.plot(group["step_size"][~good], group["llc_mean"][~good], "o", mfc="white", color=colour, markersize=3.5)
    chosen = table[table["chosen"].astype(bool)]
    if len(chosen):
        ax.plot(chosen["step_size"], chosen["llc_mean"], "*", color="black", markersize=9, label="chosen")
    ax.set_xscale("log")
    ax.set_xlabel(r"step size $\epsilon$")
    ax.set_ylabel(r"LLC estimate $\hat\lambda$ $\pm$ MCSE")
    verdict = "" if len(chosen) else " (nothing qualifies)"
    ax.set_title(f"calibration at step {int(table['step'].iloc[0])}; hollow: fails the rule{verdict}", fontsize=7)
    ax.legend(fontsize=5)
    return fig

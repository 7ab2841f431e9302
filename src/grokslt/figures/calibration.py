"""New: the sampler calibration at its checkpoints: the LLC estimate (with its MCSE) against the step size,
one row per nbeta and one column per checkpoint (linear axes: a row's estimates share a scale), colour for the
localization; filled where the grid point
passes the rule there, hollow where it fails, a cross where its chains were not local, a triangle at the bottom
edge where they descended below L_n(w*), the chosen point starred (grokslt.estimation.calibration)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from grokslt.figures import inputs, style


def calibration(read):
    table = read.csv("calibration")
    needed = ["step_size", "nbeta", "localization", "llc_mean", "mcse", "passes", "local", "chosen", "step"]
    inputs.require_columns(table, needed, "calibration.csv")
    steps = sorted(table["step"].unique())
    nbetas, gammas = sorted(table["nbeta"].unique()), sorted(table["localization"].unique())
    colour = dict(zip(gammas, style.PALETTE * 3, strict=False))
    fig, axes = plt.subplots(len(nbetas), len(steps), figsize=(style.PAGE_WIDTH, 0.4 + 1.7 * len(nbetas)),
                             sharex=True, sharey="row", squeeze=False)  # fmt: skip
    step_sizes = sorted(table["step_size"].unique())
    for row, nbeta in enumerate(nbetas):
        for ax, step in zip(axes[row], steps, strict=True):
            cell = table[(table["step"] == step) & (table["nbeta"] == nbeta)]
            for gamma, group in cell.groupby("localization"):
                grid_line(ax, group.sort_values("step_size"), colour[gamma])
            chosen = cell[cell["chosen"].astype(bool)]
            ax.plot(chosen["step_size"], chosen["llc_mean"], "*", color="black", markersize=8)
            ax.set_xscale("log")
            ax.tick_params(labelsize=6)
            if row == 0:
                ax.set_title(f"checkpoint at step {int(step)}", fontsize=7)
        axes[row][0].set_ylabel(f"$n\\beta$ = {nbeta:.3g}\n" + r"$\hat\lambda$ $\pm$ MCSE", fontsize=7)
    for ax in axes[-1]:
        ax.xaxis.set_minor_formatter(NullFormatter())  # the grid's own step sizes label the axis
        ax.set_xticks(step_sizes, [f"{s:.2g}" for s in step_sizes], fontsize=5, rotation=30)
        ax.set_xlabel(r"step size $\epsilon$", fontsize=7)
    handles = [Line2D([], [], color=colour[g], label=rf"$\gamma$ = {g:g}") for g in gammas]
    handles += [Line2D([], [], color="0.3", marker=m, mfc=f, linestyle="none", label=name)
                for m, f, name in legend_marks(table)]  # fmt: skip
    fig.legend(handles=handles, fontsize=6, loc="outside right center", frameon=False)
    verdict = "the star is chosen" if table["chosen"].astype(bool).any() else "none qualifies"
    fig.suptitle(f"Sampler calibration (a setting qualifies only if it passes at every checkpoint): {verdict}",
                 fontsize=7)  # fmt: skip
    return fig


def legend_marks(table) -> list[tuple[str, str, str]]:
    """(marker, face, label) of the kinds of point the grid holds."""
    kinds = style.estimate_kinds(table.rename(columns={"llc_mean": "llc"}).assign(converged=True))
    local = ~kinds["not local"] & ~kinds["descends"]
    passes = table["passes"].astype(bool)
    marks = [(passes.any(), ("o", "0.3", "passes")), ((local & ~passes).any(), ("o", "white", "local, fails")),
             (kinds["not local"].any(), ("x", "0.3", "not local")),
             (kinds["descends"].any(), ("v", "0.3", "descends below $L_n(w^*)$")),
             (table["chosen"].astype(bool).any(), ("*", "black", "chosen"))]  # fmt: skip
    return [mark for present, mark in marks if present]


def grid_line(ax, group, colour) -> None:
    """One localization's estimates against the step size, marked by whether each passes the rule."""
    look = {"color": colour, "linewidth": 0.7}
    marks = style.estimate_kinds(group.rename(columns={"llc_mean": "llc"}).assign(converged=True))
    shown = style.on_scale(group, "llc_mean")
    ax.errorbar(group["step_size"], shown, yerr=group["mcse"], capsize=1, **look)
    local = ~marks["not local"] & ~marks["descends"]
    passes = group["passes"].astype(bool)
    ax.plot(group["step_size"][passes], shown[passes], "o", markersize=3, **look)
    ax.plot(group["step_size"][~passes & local], shown[~passes & local], "o", mfc="white", markersize=3, **look)
    ax.plot(group["step_size"][marks["not local"]], shown[marks["not local"]], "x", markersize=3, **look)
    descends = marks["descends"]
    if descends.any():
        ax.plot(group["step_size"][descends], [style.EDGE] * int(descends.sum()), "v", markersize=3, clip_on=False,
                transform=ax.get_xaxis_transform(), **look)  # fmt: skip

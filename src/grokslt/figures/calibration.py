"""New: the sampler calibration at its checkpoints: the LLC estimate (with its MCSE) against the step size,
one panel per checkpoint, colour for nbeta and line style for the localization; filled where the grid point
passes the rule there, hollow where it fails, a cross where its chains were not local, the chosen point
starred (grokslt.estimation.calibration)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from grokslt.figures import inputs, style

LINESTYLES = ["-", "--", ":", "-."]


def calibration(read):
    table = read.csv("calibration")
    needed = ["step_size", "nbeta", "localization", "llc_mean", "mcse", "passes", "local", "chosen", "step"]
    inputs.require_columns(table, needed, "calibration.csv")
    steps = sorted(table["step"].unique())
    nbetas, gammas = sorted(table["nbeta"].unique()), sorted(table["localization"].unique())
    colour = dict(zip(nbetas, style.PALETTE * 3, strict=False))
    dash = dict(zip(gammas, LINESTYLES * 3, strict=False))
    fig, axes = plt.subplots(1, len(steps), figsize=(style.PAGE_WIDTH, 2.6), sharey=True, squeeze=False)
    for ax, step in zip(axes[0], steps, strict=True):
        for (nbeta, gamma), group in table[table["step"] == step].groupby(["nbeta", "localization"]):
            group = group.sort_values("step_size")
            look = {"color": colour[nbeta], "linewidth": 0.7}
            ax.errorbar(group["step_size"], group["llc_mean"], yerr=group["mcse"], linestyle=dash[gamma], capsize=1,
                        **look)  # fmt: skip
            passes, local = group["passes"].astype(bool), group["local"].astype(bool)
            ax.plot(group["step_size"][passes], group["llc_mean"][passes], "o", markersize=3, **look)
            ax.plot(group["step_size"][~passes & local], group["llc_mean"][~passes & local], "o", mfc="white",
                    markersize=3, **look)  # fmt: skip
            ax.plot(group["step_size"][~local], group["llc_mean"][~local], "x", markersize=3, **look)
        chosen = table[(table["step"] == step) & table["chosen"].astype(bool)]
        ax.plot(chosen["step_size"], chosen["llc_mean"], "*", color="black", markersize=8)
        ax.set_xscale("log")
        step_sizes = sorted(table["step_size"].unique())
        ax.xaxis.set_minor_formatter(NullFormatter())  # the grid's own step sizes label the axis
        ax.set_xticks(step_sizes, [f"{s:.2g}" for s in step_sizes], fontsize=5, rotation=30)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_title(f"checkpoint at step {int(step)}", fontsize=7)
        ax.set_xlabel(r"step size $\epsilon$", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].set_ylabel(r"LLC estimate $\hat\lambda$ $\pm$ MCSE", fontsize=7)
    handles = [Line2D([], [], color=colour[b], label=rf"$n\beta$ = {b:.3g}") for b in nbetas]
    handles += [Line2D([], [], color="0.3", linestyle=dash[g], label=rf"$\gamma$ = {g:g}") for g in gammas]
    handles += [Line2D([], [], color="0.3", marker=m, mfc=f, linestyle="none", label=name)
                for m, f, name in [("o", "0.3", "passes"), ("o", "white", "local, fails"), ("x", "0.3", "not local"),
                                   ("*", "black", "chosen")]]  # fmt: skip
    fig.legend(handles=handles, fontsize=5, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    verdict = "the star is chosen" if table["chosen"].astype(bool).any() else "none qualifies"
    fig.suptitle(f"Sampler calibration (a setting qualifies only if it passes at every checkpoint): {verdict}",
                 fontsize=7)  # fmt: skip
    return fig

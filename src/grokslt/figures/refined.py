"""New: where the complexity lives along training. One run's refined LLCs (grokslt.estimation.refined), all at
the same sampler settings: (a) each weight group sampled alone (the others held at w*) beside all weights;
(b) all weights on the training loss beside the posterior of each data subset (the validation pairs: the
complexity the network's function has on data it was not trained on); (c) WAIC from the training pairs'
traces alone against the held-out Bayes loss measured on the validation pairs and the validation loss at w*.
Markers say which estimates are local and converged (style.mark_estimates)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter

from grokslt.figures import inputs, style
from grokslt.training.metrics import transition_steps

WEIGHT_LABELS = {"all": "all weights", "W": "W (first layer)", "V": "V (second layer)", "W_a": "W rows of a",
                 "W_b": "W rows of b", "atoms:top": "top atoms (K_eff)", "atoms:rest": "other atoms"}  # fmt: skip


def refined(read, experiment):
    [(run, log)] = read.loss_data.items()
    table = read.csv("refined").rename(columns={"llc_mean": "llc"})
    inputs.require_columns(table, ["step", "weights", "data", "llc", "converged", "local"], "refined.csv")
    marks = transition_steps(log["step"], log["train_acc"], log["val_acc"])
    fig, (weights_ax, data_ax, waic_ax) = plt.subplots(3, 1, figsize=(style.PAGE_WIDTH * 0.72, 6.2), sharex=True)
    on_train = table[table["data"] == "train"]
    for i, (group, rows) in enumerate(on_train.groupby("weights", sort=False)):
        draw_trajectory(weights_ax, rows, style.PALETTE[i], WEIGHT_LABELS.get(group, group), labelled=i == 0)
    weights_ax.set_ylabel("LLC, training loss")
    weights_ax.set_title(f"Refined LLCs of the run with {style.run_words(run)}\n(sampler preset "
                         f"{', '.join(table['preset'].astype(str).unique())})", fontsize=7)  # fmt: skip
    all_weights = table[table["weights"] == "all"]
    for i, (subset, rows) in enumerate(all_weights.groupby("data", sort=False)):
        draw_trajectory(data_ax, rows, style.PALETTE[i + 4], f"posterior of {subset} pairs", labelled=False)
    data_ax.set_ylabel("LLC, all weights")
    if style.descending(table).any():
        data_ax.set_title("triangles at the bottom: w* is not a minimum of that loss, the chains descend it (no "
                          "basin's LLC, value off the axis)", fontsize=5, color="0.35")  # fmt: skip
    draw_waic(waic_ax, read, log)
    for ax in (weights_ax, data_ax, waic_ax):
        for key, label in (
            ("memorisation_step", "memorised"),
            ("grok_step_50", "val 50%"),
            ("grok_step_95", "val 95%"),
        ):
            if marks[key] is not None:
                ax.axvline(marks[key], color="0.4", linestyle=":", linewidth=0.8)
                if ax is weights_ax:
                    ax.annotate(label, (marks[key], 1.0), xycoords=("data", "axes fraction"), rotation=90,
                                fontsize=6, va="top", ha="right", color="0.3")  # fmt: skip
        ax.legend(fontsize=5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    waic_ax.set_xlabel("training step")
    waic_ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x else "0"))
    fig.tight_layout()
    return fig


def draw_trajectory(ax, rows: pd.DataFrame, colour, label: str, labelled: bool) -> None:
    rows = rows.sort_values("step")
    ax.plot(rows["step"], style.on_scale(rows), color=colour, linewidth=1.0, label=label)
    style.mark_estimates(ax, rows, colour, labelled=labelled, size=2.0)


def draw_waic(ax, read, log: pd.DataFrame) -> None:
    waic = read.csv("waic").sort_values("step")
    inputs.require_columns(waic, ["step", "waic", "waic_stderr", "bayes_val_loss", "bayes_train_loss"], "waic.csv")
    ax.errorbar(waic["step"], waic["waic"], yerr=2 * waic["waic_stderr"], color=style.PALETTE[0], marker="o",
                markersize=2.5, linewidth=1.0, capsize=1.5, label="WAIC (training pairs only)")  # fmt: skip
    held_out = 2 * waic["bayes_val_loss_stderr"]
    ax.errorbar(waic["step"], waic["bayes_val_loss"], yerr=held_out, color=style.PALETTE[1], marker="s",
                markersize=2.5, linewidth=1.0, capsize=1.5, label="Bayes loss on validation pairs")  # fmt: skip
    ax.plot(waic["step"], waic["bayes_train_loss"], color="0.5", marker=".", linewidth=0.8,
            label="Bayes loss on training pairs")  # fmt: skip
    ax.plot(log["step"], log["val_loss"], color=style.PALETTE[1], alpha=0.35, linewidth=0.8, label="val loss at w*")
    ax.set_yscale("log")
    ax.set_ylabel("loss per pair\n(bars: 2 SE over pairs)")

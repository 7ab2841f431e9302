"""Figure 9 and appendix H.4: grokking severity and peak LLC against learning rate, one line per
weight decay, one column per batch size."""

from __future__ import annotations

import matplotlib.pyplot as plt

from grokslt.figures import inputs, style


def fig9(read, experiment: str):
    rows = inputs.experiment_rows(read.summary, experiment, "summary/runs.csv")
    inputs.require_columns(rows, ["lr", "weight_decay", "batch_size", "gsm", "peak_llc"], "summary/runs.csv")
    batches = sorted(rows["batch_size"].unique())
    fig, axes = plt.subplots(
        2, len(batches), figsize=(max(style.COLUMN_WIDTH, 2.0 * len(batches)), 3.6), sharex=True, squeeze=False
    )
    decays = sorted(rows["weight_decay"].unique())
    for column, batch in enumerate(batches):
        subset = rows[rows["batch_size"] == batch]
        for colour, decay in zip(style.PALETTE, decays, strict=False):
            line = subset[subset["weight_decay"] == decay].groupby("lr", as_index=False)[["gsm", "peak_llc"]].mean()
            axes[0, column].plot(line["lr"], line["gsm"], "o-", color=colour, markersize=3, label=f"wd = {decay:g}")
            axes[1, column].plot(line["lr"], line["peak_llc"], "o-", color=colour, markersize=3)
        axes[0, column].set_title(f"batch size {batch}", fontsize=7)
        axes[1, column].set_xlabel("learning rate")
        for ax in axes[:, column]:
            ax.set_xscale("log")
    axes[0, 0].set_ylabel("grokking severity (GSM)")
    axes[1, 0].set_ylabel(r"peak LLC $\hat\lambda$" + style.preset_note(rows))
    axes[0, -1].legend(fontsize=6)
    return fig

"""Figure 9 and appendix H.4: grokking severity and peak LLC against learning rate, one line per
weight decay, one column per batch size; the authors' runs of the same settings as open markers."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from grokslt.figures import inputs, style
from grokslt.training.metrics import grokking_severity


def authors_values(rows: pd.DataFrame, authors) -> pd.DataFrame:
    """Per run of ours with an authors' log of the same settings: their GSM and, where their sampler was
    ours, their peak LLC (the scorecard's rule)."""
    from grokslt.analysis.reference import find_match
    from grokslt.analysis.scorecard import sampler_comparable

    values = []
    for _, row in rows.iterrows():
        match = find_match(row, authors)
        if match is None:
            continue
        log = match.log
        peak = log["llc"].max() if sampler_comparable(row["llc_preset"], match) else math.nan
        values.append({"batch_size": row["batch_size"], "weight_decay": row["weight_decay"], "lr": row["lr"],
                       "gsm": grokking_severity(log["train_acc"], log["val_acc"]), "peak_llc": peak})  # fmt: skip
    return pd.DataFrame(values, columns=["batch_size", "weight_decay", "lr", "gsm", "peak_llc"])


def fig9(read, experiment: str):
    rows = inputs.experiment_rows(read.summary, experiment, "summary/runs.csv")
    inputs.require_columns(rows, ["lr", "weight_decay", "batch_size", "gsm", "peak_llc"], "summary/runs.csv")
    theirs = authors_values(rows, read.authors_runs())
    batches = sorted(rows["batch_size"].unique())
    fig, axes = plt.subplots(
        2, len(batches), figsize=(max(style.COLUMN_WIDTH, 2.0 * len(batches)), 4.2), sharex=True, squeeze=False
    )
    decays = sorted(rows["weight_decay"].unique())
    for column, batch in enumerate(batches):
        for colour, decay in zip(style.PALETTE, decays, strict=False):
            for table, marker in ((rows, "o-"), (theirs, "o")):
                subset = table[(table["batch_size"] == batch) & (table["weight_decay"] == decay)]
                line = subset.groupby("lr", as_index=False)[["gsm", "peak_llc"]].mean()
                hollow = {"mfc": "none", "markersize": 5} if table is theirs else {"markersize": 3}
                label = f"wd = {decay:g}" if table is rows else None
                axes[0, column].plot(line["lr"], line["gsm"], marker, color=colour, label=label, **hollow)
                axes[1, column].plot(line["lr"], line["peak_llc"], marker, color=colour, **hollow)
        axes[0, column].set_title(f"batch size {batch}", fontsize=7)
        axes[1, column].set_xlabel("learning rate")
        for ax in axes[:, column]:
            ax.set_xscale("log")
    axes[0, 0].set_ylabel("grokking severity (GSM)")
    axes[1, 0].set_ylabel(r"peak LLC $\hat\lambda$" + style.preset_note(rows).replace(" (", "\n(", 1))
    if not theirs.empty:
        axes[0, -1].plot([], [], "o", mfc="none", color="0.45", label="authors' log")
    handles, labels = axes[0, -1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncols=len(labels), loc="outside lower center")
    fig.suptitle("Grokking severity (top) and peak LLC (bottom) against learning rate,\none line per weight decay, "
                 "one column per batch size", fontsize=7)  # fmt: skip
    return fig

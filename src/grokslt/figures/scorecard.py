"""New: the reproduction scorecard: for every run with an authors' log of the same settings, the relative
deviation of ours from theirs per metric (grokking markers, LLC at them and at its peak, GSM). Where no run
of the config matches one of theirs (the quick config's small networks), the figure says so in words: which
reference set was searched, and which configs reproduce the authors' settings."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grokslt.analysis.membership import experiment_names
from grokslt.figures import inputs, style

PAPER_CONFIGS = "config.yaml (the paper's full set), config/paper_subset.yaml or config/fig9_batch128.yaml"


def scorecard(read):
    table = read.csv("scorecard")
    inputs.require_columns(table, ["experiment", "run"], "scorecard.csv")
    rows = table[(table["run"] != "worst") & table["relative_deviation"].notna()]
    if rows.empty:
        return nothing_matched(table, read.authors_runs())
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    metrics = list(dict.fromkeys(rows["metric"]))
    for colour, (experiment, group) in zip(style.PALETTE, rows.groupby("experiment"), strict=False):
        y = group["metric"].map(metrics.index) + np.random.default_rng(0).uniform(-0.15, 0.15, len(group))
        label = " & ".join(experiment_names(experiment))  # a run of two experiments
        ax.plot(100 * group["relative_deviation"], y, "o", color=colour, markersize=3, alpha=0.8, label=label)
    ax.axvline(0, color="0.4", linewidth=0.8)
    ax.set_yticks(range(len(metrics)), metrics, fontsize=6)
    ax.set_xlabel("ours vs the authors' log (%)")
    ax.set_title(f"Our runs against the authors' logs of the same settings ({rows['run'].nunique()} runs)", fontsize=7)
    fig.legend(fontsize=5, loc="outside lower center", ncols=3, title="experiment", title_fontsize=5)
    return fig


def nothing_matched(table: pd.DataFrame, authors) -> plt.Figure:
    """A figure of words: no run of ours has an authors' log to compare with, what was searched, and how to
    get runs that do."""
    ours = table[table["run"] != "worst"]
    notes = set(ours["note"].dropna()) if "note" in ours else set()
    experiments = sorted({name for cell in ours["experiment"] for name in experiment_names(cell)})
    checked = f"{ours['run'].nunique()} runs of this config ({', '.join(experiments)})"
    if authors or not any("reference: none" in note for note in notes):
        sweeps = sorted({run.name.split("/")[0] for run in authors})
        searched = (f"the authors' {len(authors)} logged runs in reference/authors/ ({', '.join(sweeps)})" if authors
                    else "the authors' logged runs in reference/authors/")  # fmt: skip
        lines = [
            "No run of this config matches an authors' run: nothing to compare.",
            f"Searched {searched} for runs whose training settings equal ours (task, p, K, train fraction, "
            "optimizer, learning rate, weight decay, batch size, seed, split and early stop); "
            f"checked {checked}.",
            f"The authors' settings are run by the paper-scale configs: {PAPER_CONFIGS}.",
        ]
    else:
        lines = [
            "No comparison with the authors' runs: this config sets reference: none.",
            f"Checked {checked} against nothing.",
            f"Set reference: authors, and run a paper-scale config ({PAPER_CONFIGS}) to get runs that match theirs.",
        ]
    fig = plt.figure(figsize=(style.COLUMN_WIDTH * 1.5, 2.4))
    fig.text(0.03, 0.97, "Reproduction scorecard: ours against the authors' logs", ha="left", va="top", fontsize=8,
             fontweight="bold")  # fmt: skip
    fig.text(0.03, 0.86, "\n\n".join(textwrap.fill(line, 70) for line in lines), ha="left", va="top", fontsize=7)
    return fig

"""Figure 9 and appendix H.4: grokking severity and peak LLC against learning rate, one line per
weight decay, one column per batch size; the authors' runs of the same settings as open markers. Where the
experiment's runs have certified estimates (`certified.experiments`), a third row draws each run's smoothed peak
at that preset (the peak claim's statistic, drawn for every run: the claim also reads it without the runs that
peak at their first estimate, and without untrusted estimates where it may set them aside)."""

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


def certified_peaks(rows: pd.DataFrame, certified: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per run with certified estimates: the smoothed peak of its series (the peak claim's statistic) and whether
    every estimate of that series is trusted (local and converged)."""
    from grokslt.analysis.llc_series import is_trusted, llc_series, smoothed_peak

    values = []
    for _, row in rows[rows["run"].isin(list(certified))].iterrows():
        series = llc_series(certified[row["run"]])
        if not series.empty:
            peak, trusted = smoothed_peak(series)[0], bool(is_trusted(series).all())
            values.append({"batch_size": row["batch_size"], "weight_decay": row["weight_decay"], "lr": row["lr"],
                           "peak_llc": peak, "trusted": trusted})  # fmt: skip
    return pd.DataFrame(values, columns=["batch_size", "weight_decay", "lr", "peak_llc", "trusted"])


def certified_presets(certified: dict[str, pd.DataFrame]) -> str:
    """The sampler presets the certified tables name (`preset` column), or 'certified' where none does."""
    names = {str(name) for table in certified.values() if "preset" in table for name in table["preset"].dropna()}
    return ", ".join(sorted(names)) or "certified"


def certified_row(ax, peaks: pd.DataFrame, batch, decays) -> None:
    """The certified preset's smoothed peaks of one batch size, one line per weight decay (the mean of runs that
    share a learning rate, as above); hollow where a run's estimates are not all trusted."""
    for colour, decay in zip(style.PALETTE, decays, strict=False):
        subset = peaks[(peaks["batch_size"] == batch) & (peaks["weight_decay"] == decay)]
        line = subset.groupby("lr", as_index=False).agg(peak_llc=("peak_llc", "mean"), trusted=("trusted", "all"))
        ax.plot(line["lr"], line["peak_llc"], "o-", color=colour, markersize=3)
        doubtful = line[~line["trusted"]]
        ax.plot(doubtful["lr"], doubtful["peak_llc"], "o", color=colour, mfc="white", markersize=4)


def severity_line(ax, rows: pd.DataFrame, colour, label: str) -> None:
    """The GSM of one weight decay against learning rate, averaged over the runs that grokked; a learning rate
    none of whose runs reached val 95% has no GSM (the measure's 0 would read as "no delay"): an open triangle
    at the axes' bottom edge marks it, censored."""
    grokked = rows[rows["grokked"]].groupby("lr", as_index=False)["gsm"].mean()
    ax.plot(grokked["lr"], grokked["gsm"], "o-", color=colour, markersize=3, label=label)
    never = sorted(set(rows.loc[~rows["grokked"], "lr"]) - set(grokked["lr"]))
    if never:
        ax.plot(never, [style.EDGE] * len(never), "^", mfc="none", color=colour, markersize=4, clip_on=False,
                transform=ax.get_xaxis_transform())  # fmt: skip


def fig9(read, experiment: str):
    rows = inputs.experiment_rows(read.summary, experiment, "summary/runs.csv")
    inputs.require_columns(rows, ["lr", "weight_decay", "batch_size", "gsm", "peak_llc"], "summary/runs.csv")
    theirs = authors_values(rows, read.authors_runs())
    certified = read.certified
    peaks_certified = certified_peaks(rows, certified)
    inputs.require_columns(rows, ["peak_converged", "peak_local"], "summary/runs.csv")
    batches = sorted(rows["batch_size"].unique())
    height = 6.0 if len(peaks_certified) else 4.2
    fig, axes = plt.subplots(
        3 if len(peaks_certified) else 2, len(batches), figsize=(max(style.COLUMN_WIDTH, 2.0 * len(batches)), height),
        sharex=True, squeeze=False,
    )  # fmt: skip
    decays = sorted(rows["weight_decay"].unique())
    rows = rows.assign(grokked=inputs.grokked(rows), converged=rows["peak_converged"].astype(bool),
                       local=rows["peak_local"].astype(bool))  # fmt: skip
    for column, batch in enumerate(batches):
        for colour, decay in zip(style.PALETTE, decays, strict=False):
            ours = rows[(rows["batch_size"] == batch) & (rows["weight_decay"] == decay)]
            severity_line(axes[0, column], ours, colour, f"wd = {decay:g}")
            peaks = ours.groupby("lr", as_index=False).agg(llc=("peak_llc", "mean"), converged=("converged", "all"),
                                                           local=("local", "all"))  # fmt: skip
            axes[1, column].plot(peaks["lr"], peaks["llc"], "-", color=colour, linewidth=1)
            style.mark_estimates(axes[1, column], peaks, colour, labelled=False, size=3, x="lr")
            mine = theirs[(theirs["batch_size"] == batch) & (theirs["weight_decay"] == decay)]
            line = mine.groupby("lr", as_index=False)[["gsm", "peak_llc"]].mean()
            for ax, value in ((axes[0, column], "gsm"), (axes[1, column], "peak_llc")):
                ax.plot(line["lr"], line[value], "D", color=colour, mfc="none", markersize=4)
        axes[0, column].set_title(f"batch size {batch}", fontsize=7)
        axes[-1, column].set_xlabel("learning rate")
        for ax in axes[:, column]:
            ax.set_xscale("log")
        if len(peaks_certified):
            certified_row(axes[2, column], peaks_certified, batch, decays)
    axes[0, 0].set_ylabel("grokking severity (GSM)")
    axes[1, 0].set_ylabel(r"peak LLC $\hat\lambda$" + style.preset_note(rows).replace(" (", "\n(", 1))
    if len(peaks_certified):
        axes[2, 0].set_ylabel(f"smoothed peak LLC\n(certified: {certified_presets(certified)})")
    if not theirs.empty:
        axes[0, -1].plot([], [], "D", mfc="none", color="0.45", label="authors' log")
    if (~rows["grokked"]).any():
        axes[0, -1].plot([], [], "^", mfc="none", color="0.45", label="never reached val 95%: no GSM (censored)")
    style.legend_marks(axes[0, -1], rows, "peak LLC ", size=3)
    if len(peaks_certified) and not peaks_certified["trusted"].all():
        axes[0, -1].plot([], [], "o", mfc="white", color="0.45", label="bottom: an estimate not local or not converged")
    handles, labels = axes[0, -1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, ncols=min(3, len(labels)), loc="outside lower center")
    rows_said = ("peak LLC at the runs' sampler (middle), smoothed peak at the certified one (bottom)"
                 if len(peaks_certified) else "peak LLC (bottom)")  # fmt: skip
    fig.suptitle(f"Grokking severity (top) and {rows_said}\nagainst learning rate, one line per weight decay, "
                 "one column per batch size", fontsize=7)  # fmt: skip
    return fig

"""Figure 2 and its appendix-H small multiples: losses, accuracies, the LLC with its between-chain
spread, and the Hutchinson trace of one run against training step."""

from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grokslt.figures import inputs, style

SWEPT = {
    "p": "p",
    "hidden": "K",
    "lr": "lr",
    "weight_decay": "wd",
    "batch_size": "batch",
    "seed": "seed",
    "task": "task",
}
# and llc_std, where an estimate had more than one chain
COLUMNS = [
    "step", "train_loss", "val_loss", "train_acc", "val_acc", "llc", "trace_hutchinson", "converged", "local",
]  # fmt: skip


def seed_band(tables: dict[str, pd.DataFrame], runs: list[str], steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """10th and 90th percentiles of the LLC across runs, each interpolated onto `steps` (runs that
    stopped earlier contribute up to their last step)."""
    curves = []
    for run in runs:
        table = inputs.estimated(inputs.loss_table(tables, run, ["step", "llc"]))
        curve = np.interp(steps, table["step"], table["llc"], right=np.nan)
        curves.append(curve)
    stacked = np.vstack(curves)
    with np.errstate(all="ignore"):
        return np.nanpercentile(stacked, 10, axis=0), np.nanpercentile(stacked, 90, axis=0)


TITLES = {
    "baseline": "The baseline run",
    "baseline_long": "The long baseline: trained without early stop, past saturation",
}
OFFSET = {"linestyle": (0, (3, 1.5)), "linewidth": 1.0}  # offset-corrected accuracy, drawn over the raw one


def settings_words(row: pd.Series) -> str:
    """A run's training settings in words (the run id's content, readable)."""
    words = []
    for column, name in (("p", "p"), ("hidden", "K"), ("lr", "lr"), ("weight_decay", "wd"), ("batch_size", "batch"),
                         ("seed", "seed")):  # fmt: skip
        if column in row and pd.notna(row[column]):
            words.append(f"{name} {row[column]:g}")
    if "task" in row and pd.notna(row["task"]) and row["task"] != "add":
        words.append(f"task {row['task']}")
    return ", ".join(words)


def offset_differs(table: pd.DataFrame) -> bool:
    """Whether the table has offset-corrected accuracies that differ visibly from the raw ones."""
    columns = ["train_acc_offset", "val_acc_offset"]
    if any(c not in table or table[c].isna().all() for c in columns):
        return False
    raw, offset = table[["train_acc", "val_acc"]].to_numpy(), table[columns].to_numpy()
    return bool(np.nanmax(np.abs(offset - raw)) > 0.005)


def offset_note(table: pd.DataFrame) -> str:
    """The accuracy panel's title where the offset-corrected accuracy differs from the raw one."""
    note = "dashed: offset-corrected accuracy (arg-max after removing each output's training-set mean, which the "
    note += "centred loss leaves free)"
    raw, offset = table["train_acc"], table["train_acc_offset"]
    if raw.max() - raw.iloc[-1] > 0.01 and offset.max() - offset.iloc[-1] <= 0.01:
        note += (f"; raw train accuracy falls to {raw.iloc[-1]:.3f} while the corrected one stays at "
                 f"{offset.iloc[-1]:.3f}: an output offset, not forgetting")  # fmt: skip
    return note


LOSS_LABELS = {"centred_mse": "centred loss $L$", "cross_entropy": "cross-entropy"}


def family_fig2(read, experiment: str):
    """Figure 2's panels for the first run of an experiment (another model family's, say), with the band of
    LLCs over all of the experiment's runs."""
    return fig2(read, experiment, band_experiment=experiment)


def fig2(read, experiment: str, band_experiment: str | None):
    """Losses, accuracies and the LLC at the run's sampler with Tr(H); below them, where the run has certified
    estimates (a local preset, say), those as a fourth panel: the estimate to trust beside the authors' sampler."""
    summary, tables = read.summary, read.loss_data
    run = inputs.experiment_rows(summary, experiment, "summary/runs.csv").iloc[0]
    table = inputs.loss_table(tables, run["run"], COLUMNS)
    trusted = certified_estimates(read.certified, run["run"])
    panels = 3 if trusted is None else 4
    fig, axes = plt.subplots(panels, 1, figsize=(style.COLUMN_WIDTH, 1.9 * panels), sharex=True)
    loss_ax, acc_ax, llc_ax = axes[:3]
    loss_ax.plot(table["step"], table["train_loss"], color=style.TRAIN, label="train")
    loss_ax.plot(table["step"], table["val_loss"], color=style.VALIDATION, label="validation")
    loss_ax.set_yscale("log")
    loss_ax.set_ylabel(LOSS_LABELS[run.get("loss", "centred_mse")])
    acc_ax.plot(table["step"], table["train_acc"], color=style.TRAIN)
    acc_ax.plot(table["step"], table["val_acc"], color=style.VALIDATION)
    if offset_differs(table) and run.get("loss", "centred_mse") == "centred_mse":  # the centred loss frees the offset
        acc_ax.plot(table["step"], table["train_acc_offset"], color=style.TRAIN, alpha=0.8, **OFFSET)
        acc_ax.plot(table["step"], table["val_acc_offset"], color=style.VALIDATION, alpha=0.8, **OFFSET)
        acc_ax.plot([], [], color="0.3", label="accuracy, raw arg-max")
        acc_ax.plot([], [], color="0.3", label="accuracy, offset-corrected", **OFFSET)
        acc_ax.set_title(textwrap.fill(offset_note(table), 62), fontsize=5.5)
    acc_ax.set_ylabel("accuracy")
    acc_ax.set_ylim(-0.03, 1.03)
    if band_experiment:
        band_runs = list(inputs.experiment_rows(summary, band_experiment, "summary/runs.csv")["run"])
        low, high = seed_band(tables, band_runs, table["step"].to_numpy())
        band = f"LLC over the {band_experiment} runs: 10-90%"
        llc_ax.fill_between(table["step"], low, high, color="0.85", label=band)
    rows = inputs.estimated(table)
    spread = "llc_std" in rows and rows["llc_std"].notna().any()  # one chain per estimate has none
    if spread:
        low, high = rows["llc"] - rows["llc_std"], rows["llc"] + rows["llc_std"]
        llc_ax.fill_between(rows["step"], low, high, color=style.LLC, alpha=0.3, linewidth=0)
    label = r"LLC $\pm$ chain sd" if spread else "LLC (one chain: no spread)"
    llc_ax.plot(rows["step"], rows["llc"], color=style.LLC, label=label)
    style.mark_estimates(llc_ax, rows, style.LLC)
    llc_ax.set_ylabel(r"LLC $\hat\lambda$" + style.preset_note(summary[summary["run"] == run["run"]]))
    axes[-1].set_xlabel("training step")
    trace_ax = llc_ax.twinx()
    trace_ax.plot(table["step"], table["trace_hutchinson"], color=style.TRACE, linestyle="--", label="Tr(H)")
    trace_ax.set_ylabel("Hutchinson Tr(H)")
    trace_ax.grid(False)
    if trusted is not None:
        trusted_panel(axes[3], trusted)
    for ax in axes:
        style.mark_transitions(ax, run, labelled=ax is loss_ax)
    overlay_authors(read.authors_runs(), run, acc_ax, llc_ax)
    entries = {}  # one legend under the panels, off the data
    for ax in (*axes, trace_ax):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    fig.legend(entries.values(), entries.keys(), fontsize=6, ncols=2, loc="outside lower center")
    title = TITLES.get(experiment, f"The first run of experiment {experiment}")
    fig.suptitle(f"{title}\n({settings_words(run)})", fontsize=7)
    return fig


def certified_estimates(certified: dict[str, pd.DataFrame], run: str) -> pd.DataFrame | None:
    """The run's certified estimates (certified.csv) with an LLC, as `llc`; None where it has none."""
    table = certified.get(run)
    if table is None or table["llc_mean"].isna().all():
        return None
    return table[table["llc_mean"].notna()].rename(columns={"llc_mean": "llc"}).sort_values("step")


def trusted_panel(ax, table: pd.DataFrame) -> None:
    """The certified estimates, marked like every LLC: filled where local and converged (the estimates to trust,
    with their MCSE), hollow where local only, a cross where not local (an MCSE is honest only where converged)."""
    ax.plot(table["step"], table["llc"], color=style.TRUSTED, linewidth=0.9, label="LLC, certified sampler")
    honest = table[table["converged"].astype(bool) & table["local"].astype(bool)]
    ax.errorbar(honest["step"], honest["llc"], yerr=honest["mcse"], color=style.TRUSTED, linestyle="none",
                elinewidth=0.6, capsize=1.5, label="MCSE (converged only)")  # fmt: skip
    style.mark_estimates(ax, table, style.TRUSTED)
    first = table.iloc[0]
    settings = rf"$n\beta$ {first['nbeta']:g}, $\gamma$ {first['localization']:g}"
    ax.set_ylabel(f"LLC, {first['preset']} preset\n({settings})")


def overlay_authors(authors, run, acc_ax, llc_ax, width: float = 0.6) -> bool:
    """The authors' log of the same settings, thin and grey: accuracies always, the LLC where their
    sampler settings were ours. Whether there was one."""
    from grokslt.analysis.reference import find_match
    from grokslt.analysis.scorecard import sampler_comparable

    match = find_match(run, authors)
    if match is None:
        return False
    log = match.log
    acc_ax.plot(log["step"], log["train_acc"], color="0.5", linewidth=width, label="authors' log")
    acc_ax.plot(log["step"], log["val_acc"], color="0.5", linewidth=width)
    if sampler_comparable(run["llc_preset"], match):
        llc_ax.plot(log["step"], log["llc"], color="0.45", linewidth=width + 0.1, label="authors' log")
    return True


def small_multiples(read, experiment: str):
    """One panel per run: LLC (left axis) and train/validation accuracy (right axis)."""
    summary, tables, authors = read.summary, read.loss_data, read.authors_runs()
    rows = inputs.experiment_rows(summary, experiment, "summary/runs.csv", diverged=True)
    swept = [c for c in SWEPT if c in rows and rows[c].nunique() > 1] or ["seed"]
    rows = rows.sort_values(swept)
    count = len(rows)
    columns = min(4, count)
    nrows = math.ceil(count / columns)
    fig, axes = plt.subplots(nrows, columns, figsize=(style.PAGE_WIDTH, 1.7 * nrows + 0.3), squeeze=False)
    matched = False
    for ax, (_, row) in zip(axes.flat, rows.iterrows(), strict=False):
        ax.set_title(
            "  ".join(f"{SWEPT[c]}={row[c]:g}" if c != "task" else f"task={row[c]}" for c in swept), fontsize=6
        )
        if row["status"] == "diverged":
            ax.text(0.5, 0.5, f"training diverged\nat step {row['final_step']}", transform=ax.transAxes, ha="center")
            if row["run"] not in tables or tables[row["run"]].empty:
                ax.set_axis_off()
                continue
        table = inputs.loss_table(tables, row["run"], COLUMNS)
        estimates = inputs.estimated(table)
        ax.plot(estimates["step"], estimates["llc"], color=style.LLC, linewidth=0.8)
        style.mark_estimates(ax, estimates, style.LLC, labelled=False, size=1.5)
        ax.set_ylabel("LLC", fontsize=6)
        acc = ax.twinx()
        acc.plot(table["step"], table["train_acc"], color=style.TRAIN, linewidth=0.8)
        acc.plot(table["step"], table["val_acc"], color=style.VALIDATION, linewidth=0.8)
        acc.set_ylim(-0.03, 1.03)
        acc.grid(False)
        acc.tick_params(labelsize=5)
        ax.tick_params(labelsize=5)
        style.mark_transitions(ax, row, labelled=False)
        matched = overlay_authors(authors, row, acc, ax, width=0.5) or matched
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    fig.supxlabel("training step", fontsize=7)
    fig.suptitle(
        f"Training trajectories of the {count} runs of experiment {experiment}, one panel per run, titled by the "
        f"settings it sweeps\nLLC{style.preset_note(rows)} (green, left) with train (blue) and validation (orange) "
        "accuracy (right); hollow: not converged, x: not local; dotted: memorised, val 50%, val 95%, saturated"
        + ("; grey: authors' log" if matched else ""),
        fontsize=7,
    )
    return fig

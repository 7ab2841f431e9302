"""One style for every figure: paper column width, colour-blind-safe palette, labelled axes, and
inputs checked before anything is drawn."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from grokslt.io import atomic_path  # noqa: E402

COLUMN_WIDTH = 3.4  # inches, one column of a two-column paper
PAGE_WIDTH = 7.0
PALETTE = sns.color_palette("colorblind")
TRAIN, VALIDATION, LLC, TRACE = PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[4]


def apply() -> None:
    sns.set_theme(context="paper", style="ticks", palette=PALETTE, font_scale=0.9)
    plt.rcParams.update(
        {
            "figure.constrained_layout.use": True,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "legend.frameon": False,
            "savefig.bbox": "tight",
            "pdf.fonttype": 42,
        }
    )


def save(fig, prefix: str | Path, dpi: int) -> None:
    """PDF and PNG beside each other, each written atomically."""
    prefix = Path(prefix)
    for suffix in (".pdf", ".png"):
        with atomic_path(prefix.with_suffix(suffix)) as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=dpi)
    plt.close(fig)


def require_columns(table: pd.DataFrame, columns: Iterable[str], source: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{source}: missing columns {missing}")
    empty = [c for c in columns if table[c].isna().all()]
    if empty:
        raise ValueError(f"{source}: columns {empty} hold no values")


def experiment_rows(summary: pd.DataFrame, experiment: str, source: str, diverged: bool = False) -> pd.DataFrame:
    """The summary rows of an experiment's runs; those whose training diverged only if asked."""
    require_columns(summary, ["run", "experiments", "status"], source)
    member = summary["experiments"].fillna("").str.split(";").apply(lambda names: experiment in names)
    rows = summary[member if diverged else member & (summary["status"] != "diverged")]
    if rows.empty:
        raise ValueError(f"{source}: no runs of experiment {experiment!r} (that did not diverge)")
    return rows


def note_diverged(fig, summary: pd.DataFrame, experiments: Iterable[str]) -> None:
    """Name, under the figure, the runs of `experiments` left out because their training diverged."""
    member = summary["experiments"].fillna("").str.split(";").apply(lambda names: bool(set(experiments) & set(names)))
    runs = summary.loc[member & (summary["status"] == "diverged"), "run"].tolist()
    if runs:
        fig.text(0.0, 0.0, f"training diverged, not shown: {', '.join(runs)}", fontsize=5, color="0.35", va="top")


def read_loss_tables(paths: Iterable[str | Path]) -> dict[str, pd.DataFrame]:
    """{run id: loss_data.csv} keyed by the run directory's name, without the evaluation at which a
    run's training diverged."""
    tables = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"{path}: missing loss table of run {path.parent.name}")
        table = pd.read_csv(path)
        tables[path.parent.name] = table[~table["diverged"]]
    return tables


def loss_table(tables: dict[str, pd.DataFrame], run: str, columns: Iterable[str]) -> pd.DataFrame:
    if run not in tables:
        raise ValueError(f"loss tables: run {run!r} is missing (have {sorted(tables)[:5]}...)")
    require_columns(tables[run], columns, f"runs/{run}/loss_data.csv")
    return tables[run]


def mark_transitions(ax, row: pd.Series, labelled: bool = True) -> None:
    """Dotted lines at the memorisation and grokking steps of a summary row, labelled if asked."""
    labels = {"memorisation_step": "memorised", "grok_step_50": "val 50%", "grok_step_95": "val 95%"}
    for key, label in labels.items():
        if key not in row or pd.isna(row[key]):
            continue
        ax.axvline(row[key], color="0.4", linestyle=":", linewidth=0.8)
        if labelled:
            ax.annotate(
                label,
                (row[key], 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                fontsize=6,
                va="top",
                ha="right",
                color="0.3",
            )

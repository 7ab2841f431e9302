"""One style for every figure: paper column width, colour-blind-safe palette, labelled axes, marks."""

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


def note_diverged(fig, summary: pd.DataFrame, experiments: Iterable[str]) -> None:
    """Name, under the figure, the runs of `experiments` left out because their training diverged."""
    member = summary["experiments"].fillna("").str.split(";").apply(lambda names: bool(set(experiments) & set(names)))
    runs = summary.loc[member & (summary["status"] == "diverged"), "run"].tolist()
    if runs:
        fig.text(0.0, 0.0, f"training diverged, not shown: {', '.join(runs)}", fontsize=5, color="0.35", va="top")


def mark_estimates(ax, table: pd.DataFrame, colour, labelled: bool = True, size: float = 2.5) -> None:
    """LLC markers per checkpoint: filled where the estimate is local and passed the convergence
    diagnostics, hollow where it is local but did not converge, a cross where its chains were not local
    (they sampled networks far worse than w*: grokslt.estimation.locality), whatever its diagnostics."""
    converged = table["converged"].astype(bool)
    local = table["local"].astype(bool)
    kinds = [
        (local & converged, {"marker": "o"}, "local, converged"),
        (local & ~converged, {"marker": "o", "mfc": "none", "markeredgewidth": 0.6}, "local, not converged"),
        (~local, {"marker": "x", "markeredgewidth": 0.6}, "not local"),
    ]
    for chosen, look, label in kinds:
        if chosen.any():
            ax.plot(table["step"][chosen], table["llc"][chosen], linestyle="none", color=colour, markersize=size,
                    label=label if labelled else None, **look)  # fmt: skip


def preset_note(rows: pd.DataFrame) -> str:
    """' (sampler preset X)' for the LLC of these summary rows, or '' where the table does not say."""
    if "llc_preset" not in rows or rows["llc_preset"].isna().all():
        return ""
    return f" ({', '.join(sorted(rows['llc_preset'].dropna().astype(str).unique()))})"


def mark_transitions(ax, row: pd.Series, labelled: bool = True) -> None:
    """Dotted lines at the memorisation and grokking steps of a summary row, labelled if asked."""
    labels = {
        "memorisation_step": "memorised",
        "grok_step_50": "val 50%",
        "grok_step_95": "val 95%",
        "saturation_step": "saturated",
    }
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

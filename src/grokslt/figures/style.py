"""One style for every figure: paper column width, colour-blind-safe palette, labelled axes, marks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from grokslt.analysis.membership import in_experiments  # noqa: E402
from grokslt.io import atomic_path  # noqa: E402

COLUMN_WIDTH = 3.4  # inches, one column of a two-column paper
PAGE_WIDTH = 7.0
PALETTE = sns.color_palette("colorblind")
TRAIN, VALIDATION, LLC, TRACE = PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[4]
TRUSTED = PALETTE[3]  # the certified (local) sampler's LLC, beside the runs' own


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
    member = in_experiments(summary, experiments)
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


TRANSITIONS = {
    "memorisation_step": "memorised",
    "grok_step_50": "val 50%",
    "grok_step_95": "val 95%",
    "saturation_step": "saturated",
}
LABEL_POINTS = 7  # the width of a rotated 6-point label (its line height)


def mark_transitions(ax, row: pd.Series, labelled: bool = True) -> None:
    """Dotted lines at the memorisation and grokking steps of a summary row, labelled if asked (call it after the
    data are drawn: where lines are closer than a label's width, which the x-axis decides, their labels move)."""
    marks = [(row[key], label) for key, label in TRANSITIONS.items() if key in row and not pd.isna(row[key])]
    marks.sort(key=lambda mark: mark[0])  # stable: transitions at one step keep their order
    for step, _ in marks:
        ax.axvline(step, color="0.4", linestyle=":", linewidth=0.8)
    if not labelled:
        return
    for step, label, align in placed_labels(ax, marks):
        ax.annotate(label, (step, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize=6, va="top",
                    ha=align, color="0.3")  # fmt: skip


def placed_labels(ax, marks: list[tuple[float, str]]) -> list[tuple[float, str, str]]:
    """(step, label, horizontal alignment) of the marks' labels, each left of its line (alignment "right") unless
    its neighbour is closer than LABEL_POINTS on the axes: then of two close marks the second's label goes right
    of its line, and three or more share one label, left of the first."""
    left, right = ax.get_xlim()
    points_per_step = ax.get_position().width * ax.figure.get_figwidth() * 72 / (right - left)
    groups: list[list[tuple[float, str]]] = []
    for step, label in marks:
        if groups and (step - groups[-1][-1][0]) * points_per_step < LABEL_POINTS:
            groups[-1].append((step, label))
        else:
            groups.append([(step, label)])
    placed = []
    for group in groups:
        if len(group) == 2:
            (first, first_label), (second, second_label) = group
            placed += [(first, first_label, "right"), (second, second_label, "left")]
        else:
            placed.append((group[0][0], ", ".join(label for _, label in group), "right"))
    return placed

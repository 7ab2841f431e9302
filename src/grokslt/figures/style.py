"""One style for every figure: paper column width, colour-blind-safe palette, labelled axes, marks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from grokslt.analysis.membership import in_experiments  # noqa: E402
from grokslt.io import atomic_path  # noqa: E402

COLUMN_WIDTH = 3.4  # inches, one column of a two-column paper
PAGE_WIDTH = 7.0
# seaborn's colour-blind palette, and its "paper" context in the "ticks" style at font scale 0.9, written out: importing
# seaborn for them cost a second of every figure job
PALETTE = [to_rgb(c) for c in ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494",
                               "#ece133", "#56b4e9")]  # fmt: skip
INK = ".15"
PAPER, FONT_SCALE = 0.8, 0.9  # seaborn's paper context scales its notebook sizes by 0.8; its fonts by 0.9 more
FONT, SMALL_FONT = 12 * PAPER * FONT_SCALE, 11 * PAPER * FONT_SCALE
THEME = {
    **dict.fromkeys(["font.size", "axes.labelsize", "axes.titlesize", "legend.title_fontsize"], FONT),
    **dict.fromkeys(["legend.fontsize", "xtick.labelsize", "ytick.labelsize"], SMALL_FONT),
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    **dict.fromkeys(["text.color", "axes.labelcolor", "axes.edgecolor", "xtick.color", "ytick.color"], INK),
    "axes.linewidth": 1.25 * PAPER,
    "axes.axisbelow": True,
    "axes.prop_cycle": cycler(color=PALETTE),
    "grid.color": ".8",
    "lines.linewidth": 1.5 * PAPER,
    "lines.markersize": 6 * PAPER,
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "patch.linewidth": 1 * PAPER,
    **{f"{axis}.major.size": 6 * PAPER for axis in ("xtick", "ytick")},
    **{f"{axis}.major.width": 1.25 * PAPER for axis in ("xtick", "ytick")},
    **{f"{axis}.minor.size": 4 * PAPER for axis in ("xtick", "ytick")},
    **{f"{axis}.minor.width": 1 * PAPER for axis in ("xtick", "ytick")},
}
TRAIN, VALIDATION, LLC, TRACE = PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[4]
TRUSTED = PALETTE[3]  # the certified (local) sampler's LLC, beside the runs' own


def apply() -> None:
    plt.rcParams.update(
        THEME
        | {
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


def mark_estimates(ax, table: pd.DataFrame, colour, labelled: bool = True, size: float = 2.5, x: str = "step",
                   y: str = "llc") -> None:  # fmt: skip
    """LLC markers: filled where the estimate is local and passed the convergence diagnostics, hollow where it
    is local but did not converge, a cross where its chains were not local (they sampled networks far worse
    than w*: grokslt.estimation.locality), whatever its diagnostics; and, where the chains descended below
    L_n(w*) (w* no minimum), a down-pointing triangle at the axes' bottom edge, off the data's scale: its
    value, negative, estimates no basin and must not stretch the axis."""
    for kind, chosen in estimate_kinds(table).items():
        if not chosen.any():
            continue
        label = MARK_LABELS[kind] if labelled else None
        if kind == "descends":  # x in data, y in axes fraction: the autoscaled y-range never sees them
            ax.plot(table[x][chosen], [EDGE] * int(chosen.sum()), linestyle="none", color=colour, markersize=size + 1,
                    clip_on=False, transform=ax.get_xaxis_transform(), label=label, **MARKS[kind])  # fmt: skip
        else:
            ax.plot(table[x][chosen], table[y][chosen], linestyle="none", color=colour, markersize=size, label=label,
                    **MARKS[kind])  # fmt: skip


EDGE = 0.04  # axes fraction: where marks of values off the axis sit, just inside its bottom edge
MARKS = {
    "converged": {"marker": "o"},
    "not converged": {"marker": "o", "mfc": "none", "markeredgewidth": 0.6},
    "not local": {"marker": "x", "markeredgewidth": 0.6},
    "descends": {"marker": "v"},
}
MARK_LABELS = {
    "converged": "local, converged",
    "not converged": "local, not converged",
    "not local": "not local",
    "descends": r"chains descend below $L_n(w^*)$ (value off axis)",
}


def estimate_kinds(table: pd.DataFrame) -> dict[str, pd.Series]:
    """Which of a table's estimates are drawn as each kind of mark (`converged`, `local`, `descends` columns)."""
    converged, local, descends = table["converged"].astype(bool), table["local"].astype(bool), descending(table)
    return {
        "converged": local & converged,
        "not converged": local & ~converged,
        "not local": ~local & ~descends,
        "descends": descends,
    }


def legend_marks(ax, table: pd.DataFrame, prefix: str = "", size: float = 3.5) -> None:
    """Grey legend entries for the kinds of mark the table's estimates get (where lines carry the colours)."""
    for kind, chosen in estimate_kinds(table).items():
        if chosen.any():
            ax.plot([], [], linestyle="none", color="0.3", markersize=size, label=prefix + MARK_LABELS[kind],
                    **MARKS[kind])  # fmt: skip


def descending(table: pd.DataFrame) -> pd.Series:
    """Whether each estimate's chains descended below L_n(w*) (`descends`; tables written before the column
    existed have none)."""
    if "descends" not in table:
        return pd.Series(False, index=table.index)
    return table["descends"].fillna(False).astype(bool)


def with_marks(rows: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """Summary rows with the columns `mark_estimates` reads, from one estimate's (`final_`, `peak_`) columns."""
    named = rows.rename(columns={f"{prefix}{c}": c for c in ("converged", "local", "descends")})
    return rows.assign(converged=named["converged"].astype(bool), local=named["local"].astype(bool),
                       descends=descending(named))  # fmt: skip


def on_scale(table: pd.DataFrame, column: str = "llc") -> pd.Series:
    """The column with the descending estimates blanked: what a line or band through the LLCs may draw."""
    return table[column].where(~descending(table))


def run_words(run: str) -> str:
    """A run id's settings in words (p53_K1024_adam_lr1e-02_wd1e-04_bs128_s0 -> 'p 53, K 1024, lr 0.01, wd 0.0001,
    batch 128, seed 0'); an id of another form as it is."""
    import re

    match = re.match(r"p(\d+)_K(\d+)_[a-z]+_lr([^_]+)_wd([^_]+)_bs(\d+)_s(\d+)", run)
    if not match:
        return run
    p, hidden, lr, wd, batch, seed = match.groups()
    return f"p {p}, K {hidden}, lr {float(lr):g}, wd {float(wd):g}, batch {batch}, seed {seed}"


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
    """Dotted lines at the memorisation and grokking steps of a summary row, labelled if asked above the axes, off
    the curves (call it after the data are drawn: where lines are closer than a label's width, which the x-axis
    decides, their labels move)."""
    marks = [(row[key], label) for key, label in TRANSITIONS.items() if key in row and not pd.isna(row[key])]
    marks.sort(key=lambda mark: mark[0])  # stable: transitions at one step keep their order
    for step, _ in marks:
        ax.axvline(step, color="0.4", linestyle=":", linewidth=0.8)
    if not labelled:
        return
    for step, label, align in placed_labels(ax, marks):
        ax.annotate(label, (step, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 2), textcoords="offset points",
                    rotation=90, fontsize=6, va="bottom", ha=align, color="0.3")  # fmt: skip


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

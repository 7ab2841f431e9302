"""Figures 1a and 1b: the final LLC against p (one line per width K) and against K (one line per p),
each line with its least-squares linear fit and R^2 (Corollary 5.4 predicts linear laws)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grokslt.figures import inputs, style


def linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(slope, intercept, R^2) of the least-squares line."""
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    total = ((y - y.mean()) ** 2).sum()
    return slope, intercept, 1 - (residual**2).sum() / total if total > 0 else float("nan")


def draw_scaling(summary: pd.DataFrame, experiment: str, x: str, line: str, xlabel: str, line_label: str, authors=(),
                 title: str = ""):  # fmt: skip
    """Each line's runs that reached val 95% are averaged per x and fitted, marked as `style.mark_estimates` does,
    with +-MCSE bars where converged (a non-converged chain's MCSE is no honest error bar); the final LLCs of runs
    that never grokked are drawn apart (grey squares) and left out of the fits."""
    rows = inputs.experiment_rows(summary, experiment, "summary/runs.csv")
    needed = [x, line, "final_llc", "final_mcse", "final_converged", "final_local"]  # grok_step_95 may be all blank
    inputs.require_columns(rows, needed, "summary/runs.csv")
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    grokked = inputs.grokked(rows)
    for colour, (value, group) in zip(style.PALETTE, sorted(rows[grokked].groupby(line)), strict=False):
        group = final_estimates(group, x)
        style.mark_estimates(ax, group, colour, False, 3.5, x=x)
        bars = group[group["converged"] & group["local"]]
        ax.errorbar(bars[x], bars["llc"], yerr=bars["mcse"], fmt="none", color=colour, linewidth=0.7, capsize=1.5)
        label = f"{line_label} = {value}"
        fitted = group[~style.descending(group)]
        if len(fitted) >= 2:
            slope, intercept, r2 = linear_fit(fitted[x].to_numpy(float), fitted["llc"].to_numpy(float))
            grid = np.linspace(fitted[x].min(), fitted[x].max(), 50)
            ax.plot(grid, slope * grid + intercept, "-", color=colour, linewidth=1)
            label += f" (R$^2$ = {r2:.3f})"
        ax.plot([], [], "-", color=colour, linewidth=1, label=label)
    overlay_authors(ax, rows[grokked], x, authors)
    draw_never_grokked(ax, rows[~grokked], x)
    style.legend_marks(ax, final_estimates(rows[grokked], x))
    ax.set_title(title + counts_note(rows, grokked), fontsize=6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"final LLC $\hat\lambda$" + style.preset_note(rows))
    ax.legend(fontsize=5)
    return fig


def draw_never_grokked(ax, never: pd.DataFrame, x: str) -> None:
    """The final LLCs of runs that never reached val 95% as open grey squares, inside the fitted runs' y-range:
    one beyond it sits at the edge (its value off the axis) rather than stretching the scale of the fits."""
    if never.empty:
        return
    values = style.on_scale(style.with_marks(never, "final_"), "final_llc")
    limits = ax.get_ylim() if ax.has_data() else (values.min(), values.max())
    shown = values.clip(*limits)
    edge = "; at the edge: off the axis" if (shown != values).any() else ""
    ax.plot(never[x], shown, "s", mfc="none", color="0.5", markersize=3.5, markeredgewidth=0.6, clip_on=False,
            label=f"never reached val 95% (not fitted{edge})")  # fmt: skip
    if ax.has_data():
        ax.set_ylim(*limits)


def final_estimates(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """The final estimates averaged per x, in mark_estimates' columns: converged, local, descends only where all
    averaged runs are; the MCSE of the mean."""
    rows = style.with_marks(rows, "final_")
    return rows.groupby(x, as_index=False).agg(
        llc=("final_llc", "mean"), mcse=("final_mcse", lambda m: float(np.sqrt((m**2).sum())) / len(m)),
        converged=("converged", "all"), local=("local", "all"), descends=("descends", "any"),
    ).sort_values(x)  # fmt: skip


def counts_note(rows: pd.DataFrame, grokked: pd.Series) -> str:
    """How many final LLCs are fitted, and how many of them are not local (chains far from w*)."""
    fitted = rows[grokked]
    note = f"\nfitted: the {len(fitted)} of {len(rows)} runs that reached val 95%; bars: $\\pm$MCSE where converged"
    not_local = int((~fitted["final_local"].astype(bool)).sum())
    if not_local:
        note += f"; {not_local} of their final LLCs not local"
    return note


def overlay_authors(ax, rows: pd.DataFrame, x: str, authors) -> None:
    """The authors' final LLC for each run of the same settings and sampler (open grey markers)."""
    from grokslt.analysis.reference import find_match
    from grokslt.analysis.scorecard import sampler_comparable

    points = []
    for _, row in rows.iterrows():
        match = find_match(row, authors)
        if match is not None and sampler_comparable(row["llc_preset"], match):
            points.append((row[x], match.log["llc"].iloc[-1]))
    if points:
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, "D", mfc="none", color="0.45", markersize=4, label="authors' log")


def fig1a(read, experiment: str):
    return draw_scaling(read.summary, experiment, "p", "hidden", "modulus $p$", "K", read.authors_runs(),
                        "Final LLC against the modulus p, one line per width K")  # fmt: skip


def fig1b(read, experiment: str):
    return draw_scaling(read.summary, experiment, "hidden", "p", "hidden width $K$", "p",
                        title="Final LLC against the hidden width K, one line per modulus p")  # fmt: skip

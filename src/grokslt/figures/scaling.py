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
    rows = inputs.experiment_rows(summary, experiment, "summary/runs.csv")
    inputs.require_columns(rows, [x, line, "final_llc", "final_converged", "final_local"], "summary/runs.csv")
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.6))
    for colour, (value, group) in zip(style.PALETTE, sorted(rows.groupby(line)), strict=False):
        group = group.assign(converged=group["final_converged"].astype(bool), local=group["final_local"].astype(bool))
        group = group.groupby(x, as_index=False).agg(final_llc=("final_llc", "mean"), converged=("converged", "all"),
                                                     local=("local", "all")).sort_values(x)  # fmt: skip
        style.mark_estimates(ax, group.rename(columns={x: "step", "final_llc": "llc"}), colour, False, 3.5)
        label = f"{line_label} = {value}"
        if len(group) >= 2:
            slope, intercept, r2 = linear_fit(group[x].to_numpy(float), group["final_llc"].to_numpy(float))
            grid = np.linspace(group[x].min(), group[x].max(), 50)
            ax.plot(grid, slope * grid + intercept, "-", color=colour, linewidth=1)
            label += f" (R$^2$ = {r2:.3f})"
        ax.plot([], [], "o-", color=colour, markersize=3.5, linewidth=1, label=label)
    overlay_authors(ax, rows, x, authors)
    not_local = int((~rows["final_local"].astype(bool)).sum())
    if not_local:
        title += (f"\nx: {not_local} of {len(rows)} final LLCs not local (chains far from $w^*$); hollow: not "
                  "converged")  # fmt: skip
    ax.set_title(title, fontsize=6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"final LLC $\hat\lambda$" + style.preset_note(rows))
    ax.legend(fontsize=6)
    return fig


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
        ax.plot(xs, ys, "o", mfc="none", color="0.45", markersize=4, label="authors' log")


def fig1a(read, experiment: str):
    return draw_scaling(read.summary, experiment, "p", "hidden", "modulus $p$", "K", read.authors_runs(),
                        "Final LLC against the modulus p, one line per width K")  # fmt: skip


def fig1b(read, experiment: str):
    return draw_scaling(read.summary, experiment, "hidden", "p", "hidden width $K$", "p",
                        title="Final LLC against the hidden width K, one line per modulus p")  # fmt: skip

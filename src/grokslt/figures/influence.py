"""New: the Bayesian influence of training pairs on validation pairs at checkpoints of a run (memorisation,
the LLC peak, after grokking), from per-pair posterior traces (grokslt.analysis.influence).

BIF(i, j) = -Cov_w(l_i, l_j) over the local tempered posterior around the checkpoint's w*. With N, M of
1000-3000 pairs the N x M matrix is unreadable, so it is shown as the p x p matrix of its means over the
pairs of each pair of answers (c, c'), computed from the answer-binned traces (the covariance is bilinear).
Row 1 orders answers by value; row 2 by their phase k c mod p under the checkpoint network's dominant Fourier
frequency k (from its weights W, V, when the trace file holds them): a network that computes with frequency
k treats answers of nearby phase alike, which shows as a band along the diagonal.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from grokslt.analysis.influence import (
    bayesian_influence,
    binned_mean,
    dominant_frequency,
    pair_order,
    significant_influence,
)

CMAP = plt.get_cmap("RdBu_r").with_extremes(bad="0.8")
ROBUST_PERCENTILE = 99  # each panel's colour range is +- this percentile of |BIF|: a few bins would wash out the rest
SIGNIFICANCE = 0.05  # a cell is dotted where 0 is outside its two-sided 95% interval over the chains (Student's t)


class CheckpointInfluence(NamedTuple):
    by_answer: np.ndarray  # [p, p]: mean BIF over training pairs of answer c (row) and validation pairs of c'
    significant: np.ndarray  # [p, p] bool: 0 outside by_answer's 95% interval over the chains
    frequency: int | None  # the network's dominant frequency, None where the file holds no W, V
    p: int
    step: int
    nbeta: float
    draws: int


def checkpoint_influence(path: Path) -> CheckpointInfluence:
    """The answer-binned BIF of one trace file (an ArviZ DataTree NetCDF: groups log_likelihood, constant_data)."""
    with xr.open_datatree(path, engine="h5netcdf") as tree:
        p = int(tree.attrs["p"])
        ll, data = tree["log_likelihood"], tree["constant_data"]
        train = ll["train"].transpose("chain", "draw", "train_pair").values
        val = ll["val"].transpose("chain", "draw", "val_pair").values
        train, val = binned_mean(train, data["train_answer"].values, p), binned_mean(val, data["val_answer"].values, p)
        by_answer = bayesian_influence(train, val)
        significant = significant_influence(train, val, SIGNIFICANCE)
        weights = {"W", "V"} <= set(data.data_vars)
        frequency = dominant_frequency(data["W"].values, data["V"].values, p) if weights else None
        return CheckpointInfluence(
            by_answer,
            significant,
            frequency,
            p,
            int(tree.attrs["step"]),
            float(tree.attrs["nbeta"]),
            train.shape[0] * train.shape[1],
        )


def draw_matrix(fig, ax, matrix: np.ndarray, order: np.ndarray, by: str, significant: np.ndarray) -> None:
    """The matrix with rows and columns in `order`, its colour range symmetric about 0, ticks naming answers, a dot
    on each cell whose BIF is significant."""
    shown = matrix[np.ix_(order, order)]
    rows, columns = np.nonzero(significant[np.ix_(order, order)])
    finite = np.abs(shown[np.isfinite(shown)])
    limit = float(np.percentile(finite, ROBUST_PERCENTILE)) if finite.size else 0.0
    limit = limit if limit > 0 else 1.0
    image = ax.imshow(shown, cmap=CMAP, vmin=-limit, vmax=limit, interpolation="nearest")
    ax.plot(columns, rows, ".", color="black", markersize=1.0, linestyle="none")
    ax.grid(False)
    ticks = np.unique(np.linspace(0, len(order) - 1, 5).round().astype(int))
    ax.set_xticks(ticks, [str(c) for c in order[ticks]])
    ax.set_yticks(ticks, [str(c) for c in order[ticks]])
    ax.tick_params(labelsize=5, length=2)
    ax.set_xlabel(f"validation pairs (by {by})", fontsize=6)
    ax.set_ylabel(f"training pairs (by {by})", fontsize=6)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
    bar.ax.tick_params(labelsize=5)
    bar.set_label("mean BIF", fontsize=5)


def influence_figure(panels: list[tuple[str, Path]]):
    """One column per (label, trace file): the answer-binned BIF by answer, and by phase where W, V allow."""
    checkpoints = [(label, checkpoint_influence(Path(path))) for label, path in panels]
    phased = any(checkpoint.frequency is not None for _, checkpoint in checkpoints)
    rows = 2 if phased else 1
    fig, axes = plt.subplots(rows, len(checkpoints), figsize=(max(2.5 * len(checkpoints), 5.0), 2.4 * rows + 0.5),
                             squeeze=False)  # fmt: skip
    for column, (label, checkpoint) in enumerate(checkpoints):
        ax = axes[0][column]
        draw_matrix(fig, ax, checkpoint.by_answer, np.arange(checkpoint.p), "answer c", checkpoint.significant)
        step = "" if "step" in label else f"step {checkpoint.step:,}, "  # unless the label names it
        ax.set_title(f"{label}\n{step}n$\\beta$ = {checkpoint.nbeta:.3g}, {checkpoint.draws} draws", fontsize=6)
        if not phased:
            continue
        ax = axes[1][column]
        k = checkpoint.frequency
        if k is None:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "no weights W, V of w* in this file:\nno phase ordering", ha="center", va="center",
                    fontsize=6, color="0.35", transform=ax.transAxes)  # fmt: skip
            continue
        draw_matrix(fig, ax, checkpoint.by_answer, pair_order(np.arange(checkpoint.p), checkpoint.p, k),
                    f"phase {k}c mod {checkpoint.p}", checkpoint.significant)  # fmt: skip
        ax.set_title(f"by phase under frequency k = {k}\n(ticks: answer c)", fontsize=6)
    fig.suptitle(
        "Bayesian influence of training pairs on validation pairs: BIF(i, j) = $-$Cov$_w$(l$_i$, l$_j$) of the "
        "per-pair losses\nunder the local tempered posterior at w*, shown as the mean over the pairs of each pair of "
        f"answers (c, c'); red: upweighting training pair i raises validation pair j's loss, blue: lowers it\n"
        f"colour range $\\pm$ the {ROBUST_PERCENTILE}th percentile of |BIF| per panel; grey: no pair with that answer; "
        f"dot: 0 outside the cell's {1 - SIGNIFICANCE:.0%} interval over the chains (Student's t)",
        fontsize=6,
    )
    if not phased:
        fig.text(0.5, 0.0, "phase ordering skipped: no trace file holds the weights W, V of w*", ha="center",
                 va="top", fontsize=6, color="0.35")  # fmt: skip
    return fig


def influence(read, experiment):
    """The registry's figure: the run's trace files at memorisation, at its LLC peak and at its last checkpoint
    (after grokking, where it grokked), labelled from its loss_data.csv."""
    from grokslt.estimation.pair_traces import trace_step
    from grokslt.training.metrics import transition_steps

    [(_, log)] = read.loss_data.items()
    files = {trace_step(path): path for path in Path(read.path("pair_traces")).glob("step*.nc")}
    if not files:
        raise ValueError(f"{read.path('pair_traces')}: no step<STEP>.nc trace files")
    marks = transition_steps(log["step"], log["train_acc"], log["val_acc"])
    wanted = [("memorisation", marks["memorisation_step"])]
    if "llc" in log and log["llc"].notna().any():
        wanted.append(("LLC peak", int(log.loc[log["llc"].idxmax(), "step"])))
    last = max(files)
    wanted.append(("after grokking" if marks["grok_step_95"] is not None else "last checkpoint", last))
    panels = [(label, files[step]) for label, step in wanted if step in files]
    return influence_figure(panels)

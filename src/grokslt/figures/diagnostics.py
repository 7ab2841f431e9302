"""New: sampler diagnostics for one run: the chains' sampled loss at a few checkpoints, the estimate
against the number of draws, and R-hat and the effective sample sizes at every checkpoint beside their
thresholds (grokslt.estimation.diagnostics). A chain that is still climbing has not reached stationarity.

The honest diagnostics (columns r_hat, ess_bulk, ess_tail, converged: full-batch observables) are drawn
filled, the minibatch ones (the same names ending in _minibatch, where the table has them) hollow, so
that the difference shows: minibatch noise pulls R-hat to 1 and inflates the ESS."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from grokslt.artefacts import read_arrays
from grokslt.estimation.diagnostics import ESS_MIN, ESS_PER_CHAIN, R_HAT_MAX
from grokslt.figures import inputs, style

HONEST, MINIBATCH = style.PALETTE[3], style.PALETTE[0]
HOLLOW = {"mfc": "none", "markersize": 4, "markeredgewidth": 0.6}  # minibatch markers
R_HAT_FLOOR = 1e-4  # R-hat - 1 is drawn on a log scale; R-hat <= 1.0001 sits on the floor


def load_traces(paths) -> tuple[np.ndarray, np.ndarray]:
    steps, traces = [], []
    for path in paths:
        arrays = read_arrays(path, ["steps", "loss_trace"])
        steps.append(arrays["steps"])
        traces.append(arrays["loss_trace"])
    steps = np.concatenate(steps)
    if steps.size == 0:
        raise ValueError("llc traces: no checkpoints in the given files")
    return steps, np.concatenate(traces)


def diagnostics(read, experiment: str, checkpoints: int):
    """The run is the experiment's first, whose tables the workflow passes."""
    [table] = read.loss_data.values()
    table = inputs.estimated(table)
    params, trace_files = read.csv("params"), read.path("traces")
    inputs.require_columns(table, ["step", "llc_init_loss"], "loss_data.csv")
    inputs.require_columns(params, ["llc_nbeta"], "params.csv")
    steps, traces = load_traces(trace_files)
    nbeta = float(params["llc_nbeta"].iloc[0])
    chosen = np.unique(np.linspace(0, len(steps) - 1, min(checkpoints, len(steps))).round().astype(int))
    init = table.set_index("step")["llc_init_loss"]
    fig = plt.figure(figsize=(style.PAGE_WIDTH, 5.4))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.15])
    trace_ax, running_ax = top.subplots(1, 2)
    rhat_fig, ess_fig = bottom.subfigures(1, 2)
    rhat_ax, ess_ax = rhat_fig.subplots(), ess_fig.subplots()
    draws = np.arange(1, traces.shape[2] + 1)
    for colour, index in zip(style.PALETTE, chosen, strict=False):
        step = int(steps[index])
        excess = nbeta * (traces[index].astype(float) - init.loc[step])
        for chain, values in enumerate(excess):
            label = f"checkpoint at step {step}" if chain == 0 else None
            trace_ax.plot(draws, values, color=colour, linewidth=0.5, alpha=0.8, label=label)
            running_ax.plot(draws, np.cumsum(values) / draws, color=colour, linewidth=0.8)
    trace_ax.set_xlabel("draw")
    trace_ax.set_ylabel(r"$n\beta\,(L_t - L_{init})$")
    trace_ax.set_title("sampled (minibatch) loss, one line per chain", fontsize=7)
    running_ax.set_xlabel("number of draws")
    running_ax.set_ylabel(r"running estimate $\hat\lambda$")
    running_ax.set_title("running LLC estimate against draws", fontsize=7)
    top.legend(*trace_ax.get_legend_handles_labels(), fontsize=6, ncols=min(4, len(chosen)), loc="outside lower center")
    chains = int(params["llc_num_chains"].iloc[0])
    rhat_panel(rhat_ax, table)
    ess_panel(ess_ax, table, chains)
    fig.suptitle(verdict(table, chains), fontsize=7)
    return fig


def has_minibatch(table: pd.DataFrame, column: str) -> bool:
    return f"{column}_minibatch" in table and table[f"{column}_minibatch"].notna().any()


def rhat_panel(ax, table: pd.DataFrame) -> None:
    """R-hat - 1 on a log scale (labelled as R-hat), honest filled and minibatch hollow, the threshold on top."""
    inputs.require_columns(table, ["r_hat"], "loss_data.csv")
    series = [("r_hat", HONEST, {"markersize": 2.5}, "honest (full-batch)", -1)]
    if has_minibatch(table, "r_hat"):  # side by side at each checkpoint, not on top of each other
        series.append(("r_hat_minibatch", MINIBATCH, HOLLOW, "minibatch", 1))
    for column, colour, look, label, side in series:
        excess = np.maximum(table[column].to_numpy(float) - 1, R_HAT_FLOOR)
        ax.plot(dodged(table["step"], side), excess, "o", color=colour, label=label, zorder=2, **look)
    ax.axhline(R_HAT_MAX - 1, color="black", linestyle="--", linewidth=1, zorder=5,
               label=f"threshold of both rules: R-hat $\\leq$ {R_HAT_MAX}")  # fmt: skip
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(rhat_tick))
    ax.yaxis.set_minor_formatter(NullFormatter())
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, R_HAT_FLOOR / 2), max(high, 1.5))
    ax.set_xlabel("training step")
    ax.set_ylabel("rank split R-hat")
    ax.set_title("R-hat per checkpoint (log scale of R-hat - 1)", fontsize=7)
    ax.figure.legend(*ax.get_legend_handles_labels(), fontsize=6, ncols=2, loc="outside lower center")


def dodged(steps: pd.Series, side: int) -> np.ndarray:
    """The steps moved a fifth of the smallest checkpoint spacing left (side -1) or right (+1), so that the honest
    and the minibatch marker of one checkpoint sit side by side."""
    steps = steps.to_numpy(float)
    gaps = np.diff(np.unique(steps))
    return steps + side * 0.2 * (gaps.min() if len(gaps) else 1.0)


def rhat_tick(excess: float, _position) -> str:
    """The R-hat at `excess` = R-hat - 1; the floor stands for every R-hat at or below it."""
    return f"{1 + excess:.6g}" if excess > R_HAT_FLOOR * 1.01 else f"$\\leq${1 + R_HAT_FLOOR:g}"


def ess_panel(ax, table: pd.DataFrame, chains: int) -> None:
    """Bulk (square) and tail (triangle) ESS, honest filled and minibatch hollow, each rule's threshold on top."""
    inputs.require_columns(table, ["ess_bulk", "ess_tail"], "loss_data.csv")
    for column, marker, name in (("ess_bulk", "s", "bulk"), ("ess_tail", "^", "tail")):
        ax.plot(dodged(table["step"], -1), table[column], marker, color=HONEST, markersize=2.5, linestyle="none",
                zorder=2, label=f"honest {name} ESS")  # fmt: skip
        if has_minibatch(table, column):
            ax.plot(dodged(table["step"], 1), table[f"{column}_minibatch"], marker, color=MINIBATCH, linestyle="none",
                    zorder=2, label=f"minibatch {name} ESS", **HOLLOW)  # fmt: skip
    ax.axhline(ESS_MIN, color="black", linestyle="--", linewidth=1, zorder=5,
               label=f"honest rule: ESS $\\geq$ {ESS_MIN} (chains together)")  # fmt: skip
    if has_minibatch(table, "ess_bulk"):
        rule = f"minibatch rule: ESS $\\geq$ {ESS_PER_CHAIN} per chain ({ESS_PER_CHAIN * chains})"
        ax.axhline(ESS_PER_CHAIN * chains, color="0.35", linestyle=":", linewidth=1.2, zorder=5, label=rule)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("effective sample size")
    ax.set_title(f"effective sample size per checkpoint ({chains} chains)", fontsize=7)
    ax.figure.legend(*ax.get_legend_handles_labels(), fontsize=6, ncols=2, loc="outside lower center")


def verdict(table: pd.DataFrame, chains: int) -> str:
    """The figure's title: what it shows and the share of estimates that pass each rule."""
    text = "Sampler diagnostics of the run's LLC estimates"
    if "converged" in table:
        text += f": {table['converged'].astype(bool).mean():.0%} converge by the honest rule"
    if "converged_minibatch" in table and table["converged_minibatch"].notna().any():
        text += f", {table['converged_minibatch'].astype(bool).mean():.0%} by the minibatch rule"
    return text

"""New: sampler diagnostics for one run: the chains' sampled loss at a few checkpoints, the estimate
against the number of draws, and R-hat and the effective sample sizes at every checkpoint beside their
thresholds (grokslt.estimation.diagnostics). A chain that is still climbing has not reached stationarity."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grokslt.estimation.diagnostics import ESS_PER_CHAIN, R_HAT_MAX
from grokslt.figures import inputs, style


def load_traces(paths) -> tuple[np.ndarray, np.ndarray]:
    steps, traces = [], []
    for path in paths:
        with np.load(path) as arrays:
            steps.append(arrays["steps"])
            traces.append(arrays["loss_trace"])
    steps = np.concatenate(steps)
    if steps.size == 0:
        raise ValueError("llc traces: no checkpoints in the given files")
    return steps, np.concatenate(traces)


def diagnostics(read, experiment: str, checkpoints: int):
    """The run is the experiment's first, whose tables the workflow passes."""
    [table] = read.loss_data.values()
    params, trace_files = read.csv("params"), read.path("traces")
    inputs.require_columns(table, ["step", "llc_init_loss"], "loss_data.csv")
    inputs.require_columns(params, ["llc_nbeta"], "params.csv")
    steps, traces = load_traces(trace_files)
    nbeta = float(params["llc_nbeta"].iloc[0])
    chosen = np.unique(np.linspace(0, len(steps) - 1, min(checkpoints, len(steps))).round().astype(int))
    init = table.set_index("step")["llc_init_loss"]
    fig, (trace_ax, running_ax, rhat_ax) = plt.subplots(1, 3, figsize=(style.PAGE_WIDTH, 2.6))
    draws = np.arange(1, traces.shape[2] + 1)
    for colour, index in zip(style.PALETTE, chosen, strict=False):
        step = int(steps[index])
        excess = nbeta * (traces[index].astype(float) - init.loc[step])
        for chain, values in enumerate(excess):
            label = f"step {step}" if chain == 0 else None
            trace_ax.plot(draws, values, color=colour, linewidth=0.5, alpha=0.8, label=label)
            running_ax.plot(draws, np.cumsum(values) / draws, color=colour, linewidth=0.8, label=label)
    trace_ax.set_xlabel("draw")
    trace_ax.set_ylabel(r"$n\beta\,(L_t - L_{init})$")
    trace_ax.set_title("sampled loss per chain", fontsize=7)
    running_ax.set_xlabel("number of draws")
    running_ax.set_ylabel(r"running estimate $\hat\lambda$")
    running_ax.set_title("estimate against draws", fontsize=7)
    running_ax.legend(fontsize=6)
    convergence_panel(rhat_ax, table, params)
    return fig


def convergence_panel(ax, table: pd.DataFrame, params: pd.DataFrame) -> None:
    """R-hat (left axis) and bulk and tail ESS (right axis) per checkpoint, with the thresholds."""
    ax.plot(table["step"], table["r_hat"], "o", color=style.PALETTE[3], markersize=2, label="R-hat")
    ax.axhline(R_HAT_MAX, color=style.PALETTE[3], linestyle=":", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel(f"rank split R-hat (max {R_HAT_MAX})")
    ess_ax = ax.twinx()
    ess_ax.plot(table["step"], table["ess_bulk"], "s", color=style.PALETTE[0], markersize=2, label="bulk ESS")
    ess_ax.plot(table["step"], table["ess_tail"], "^", color=style.PALETTE[1], markersize=2, label="tail ESS")
    chains = int(params["llc_num_chains"].iloc[0])
    ess_ax.axhline(ESS_PER_CHAIN * chains, color="0.4", linestyle=":", linewidth=0.8)
    ess_ax.set_yscale("log")
    ess_ax.set_ylabel(f"ESS (min {ESS_PER_CHAIN * chains})")
    ess_ax.grid(False)
    share = table["converged"].astype(bool).mean()
    ax.set_title(f"convergence: {share:.0%} of estimates pass", fontsize=7)
    handles, labels = ax.get_legend_handles_labels()
    more = ess_ax.get_legend_handles_labels()
    ax.legend(handles + more[0], labels + more[1], fontsize=5)

# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A first hour with grokslt's results
#
# This notebook reads what the main job wrote (`snakemake --cores 2 --configfile config/quick.yaml`, whose results
# are `results/quick`; set `GROKSLT_RESULTS` to read another results directory), then:
#
# 1. loads the baseline run's tables,
# 2. draws Figure 2 with the diagnostics that say which LLC estimates to trust,
# 3. opens the per-pair traces of one checkpoint with xarray,
# 4. estimates an LLC on one checkpoint with the library's own estimator.
#
# Every column is explained in `docs/columns.md`.

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray

RESULTS = Path(os.environ.get("GROKSLT_RESULTS", "results/quick"))
FIGURES = Path(os.environ.get("GROKSLT_TUTORIAL_FIGURES", RESULTS / "tutorial"))
FIGURES.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## 1. Load a run
#
# `summary/runs.csv` has one row per run; `experiments` names the experiments a run belongs to. The baseline's
# own tables are `runs/RUN/params.csv` (one row: every setting of the run and of its LLC sampler) and
# `runs/RUN/loss_data.csv` (one row per evaluation: losses, accuracies, the LLC with its diagnostics, the
# Hessian trace).

# %%
summary = pd.read_csv(RESULTS / "summary" / "runs.csv")
in_baseline = summary["experiments"].fillna("").str.split(";").apply(lambda names: "baseline" in names)
RUN = summary.loc[in_baseline, "run"].iloc[0]
run_dir = RESULTS / "runs" / RUN
params = pd.read_csv(run_dir / "params.csv").iloc[0]
loss = pd.read_csv(run_dir / "loss_data.csv")
print(f"{RUN}: p = {params['p']}, K = {params['hidden']}, status {params['status']}, LLC preset {params['llc_preset']}")
shown = ["final_step", "final_val_acc", "memorisation_step", "grok_step_95", "peak_llc", "gsm"]
print(summary.loc[in_baseline, shown].to_string(index=False))

# %% [markdown]
# ## 2. Figure 2 and its diagnostics
#
# The LLC is drawn as the workflow draws it: filled where the estimate is local (its chains sample networks near
# the trained one) and honestly converged (R-hat and ESS on full-batch observables), hollow where it is local
# but not converged, a cross where it is not local. At the paper's sampler settings every estimate is a cross:
# the value then describes the sampler's transient, not the trained network's basin. The bottom row is the
# diagnostics behind the marks: honest R-hat (the rule asks <= 1.01) beside the minibatch R-hat that earlier
# versions reported, and the bulk ESS (the rule asks >= 100).

# %%
estimated = loss.dropna(subset=["llc"])
local = estimated["local"].astype(bool)
converged = estimated["converged"].astype(bool)
fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True, layout="constrained")
(ax_loss, ax_acc, ax_llc), (ax_rhat, ax_ess, ax_excess) = axes
ax_loss.semilogy(loss["step"], loss["train_loss"], label="train")
ax_loss.semilogy(loss["step"], loss["val_loss"], label="validation")
ax_loss.set(title="centred loss", ylabel="L_n")
ax_loss.legend()
ax_acc.plot(loss["step"], loss["train_acc"], label="train")
ax_acc.plot(loss["step"], loss["val_acc"], label="validation")
ax_acc.set(title="accuracy", ylim=(-0.02, 1.02))
ax_llc.fill_between(estimated["step"], estimated["llc"] - estimated["llc_std"], estimated["llc"] + estimated["llc_std"],
                    color="C0", alpha=0.2, linewidth=0, label="spread over chains")  # fmt: skip
ax_llc.plot(estimated["step"], estimated["llc"], color="C0", linewidth=1)
kinds = {"local, converged": local & converged, "local, not converged": local & ~converged, "not local": ~local}
styles = {"local, converged": {"marker": "o"}, "local, not converged": {"marker": "o", "facecolors": "none"},
          "not local": {"marker": "x"}}  # fmt: skip
for name, mask in kinds.items():
    points = estimated.loc[mask]
    ax_llc.scatter(points["step"], points["llc"], color="C0", s=22, label=name, **styles[name])
trace = ax_llc.twinx()
trace.plot(loss["step"], loss["trace_hutchinson"], color="C3", linewidth=1)
trace.set_ylabel("Hessian trace (Hutchinson)", color="C3")
ax_llc.set(title=f"LLC ({params['llc_preset']})", ylabel="LLC")
ax_llc.legend(fontsize=7, loc="best")
ax_rhat.plot(estimated["step"], estimated["r_hat"], "o-", markersize=3, label="honest (full batch)")
ax_rhat.plot(estimated["step"], estimated["r_hat_minibatch"], "s--", markersize=3, label="minibatch")
ax_rhat.axhline(1.01, color="grey", linewidth=0.8)
ax_rhat.set(title="R-hat", xlabel="step")
ax_rhat.legend(fontsize=7)
ax_ess.semilogy(estimated["step"], estimated["ess_bulk"], "o-", markersize=3, label="honest")
ax_ess.semilogy(estimated["step"], estimated["ess_bulk_minibatch"], "s--", markersize=3, label="minibatch")
ax_ess.axhline(100, color="grey", linewidth=0.8)
ax_ess.set(title="bulk ESS", xlabel="step")
ax_ess.legend(fontsize=7)
ax_excess.plot(estimated["step"], estimated["loss_excess_fraction"], "o-", markersize=3)
ax_excess.axhline(0.1, color="grey", linewidth=0.8)
ax_excess.set(title="loss excess / L_n(0) (local: <= 0.1)", xlabel="step", yscale="log")
for ax in axes.flat:
    for column, style in (("memorisation_step", ":"), ("grok_step_95", "--")):
        step = summary.loc[in_baseline, column].iloc[0]
        if pd.notna(step):
            ax.axvline(step, color="grey", linestyle=style, linewidth=0.8)
fig.suptitle(f"Figure 2 and its diagnostics: {RUN} (dotted: memorised, dashed: val 95%)", fontsize=10)
fig.savefig(FIGURES / "fig2_diagnostics.png", dpi=80)
print(f"{int((local & converged).sum())} of {len(estimated)} estimates local and converged")

# %% [markdown]
# ## 3. Per-pair traces with xarray
#
# The `refined:` section of the config writes, at the run's decisive checkpoints, every training and validation
# pair's loss along the chains: one ArviZ DataTree per checkpoint, `runs/RUN/traces/step<STEP>.nc`, with groups
# `posterior` (the chains' full-batch loss, distance and accuracy), `log_likelihood` (`train` and `val`, minus
# each pair's loss) and `constant_data` (each pair's operands, answer and loss at the trained network w*).

# %%
trace_files = sorted((run_dir / "traces").glob("step*.nc"), key=lambda path: int(path.stem.removeprefix("step")))
print("traces at steps", [int(path.stem.removeprefix("step")) for path in trace_files])
tree = xarray.open_datatree(trace_files[-1])
print(tree["log_likelihood"])

# %%
# each training pair's posterior mean loss against its loss at w*: where the posterior spends its loss
pair_loss = -tree["log_likelihood"]["train"].mean(("chain", "draw"))
at_centre = tree["constant_data"]["train_loss_at_centre"]
print(f"step {tree.attrs['step']}: mean pair loss {float(pair_loss.mean()):.4g} under the posterior, "
      f"{float(at_centre.mean()):.4g} at w*; nbeta {tree.attrs['nbeta']:g}")  # fmt: skip
pairs = pd.DataFrame({"answer": tree["constant_data"]["train_answer"].values, "excess": (pair_loss - at_centre).values})
print("mean loss excess per answer:", pairs.groupby("answer")["excess"].mean().round(4).to_dict())

# %% [markdown]
# ## 4. An LLC on one checkpoint, with the library
#
# `grokslt llc` is a thin layer over `grokslt.estimation.llc.estimate_llc`: load the run, its parameters at a
# checkpoint, the training set's loss, and sample. Here the sampler is the `local` preset (nbeta = gamma = 1e4)
# with fewer chains and draws, so its diagnostics may say it has not converged. At that preset each direction of
# curvature h contributes nbeta h / (nbeta h + gamma) / 2 to the estimand: on the paper's networks every direction
# is flat next to gamma / nbeta = 1 and the estimand is half the Hessian trace to within 3%, not the learning
# coefficient (`docs/diagnostics.md`, "What the local preset estimates"); on a small network with sharper
# directions it sits below half the trace. Compare the two below.

# %%
from grokslt.estimation.functional_loss import NetworkLoss  # noqa: E402
from grokslt.estimation.llc import estimate_llc, sampler_settings  # noqa: E402
from grokslt.training.runs import load_run  # noqa: E402

run = load_run(run_dir)
step = max(run.checkpoints)
settings = sampler_settings("local", num_chains=2, num_burnin=100, num_draws=300)
loss_fn = NetworkLoss.training_set(run.network, run.data)
result = estimate_llc(loss_fn, run.load(step), run.data.n_train, settings, run.batch_size, seed=0)
row = result.summary()
exact_trace = loss.loc[loss["step"] == step, "trace_exact"].iloc[0]
print(f"step {step}: LLC {row['llc_mean']:.4g} +- {row['mcse']:.2g} (MCSE), full-batch {row['llc_full']:.4g}")
print(f"R-hat {row['r_hat']:.3f}, bulk ESS {row['ess_bulk']:.0f}, local {row['local']}, converged {row['converged']}")
print(f"half the exact Hessian trace there: {exact_trace / 2:.4g}")
per_chain_means = np.asarray(result.llc_per_chain)
print("per chain:", np.array2string(per_chain_means, precision=4))

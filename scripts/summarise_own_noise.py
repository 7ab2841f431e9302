"""The paper-scale runs of config/paper_local.yaml rerun with each run's own sampler noise, against the same runs'
shared-noise estimates (every run's sampler seed 0):

- peaks.csv, Figure 2's runs: the peaks of both presets' trajectories (the highest estimate, not the claim's
  smoothed peak), the local preset's fall to the stop, and how far apart the two noises' local estimates of the
  same checkpoints lie (against measured/paper_local/local_estimates.csv)
- local_estimates.csv: every run's local-preset estimates with their diagnostics, locality, lambda_Q and seed
- baseline.csv, where a coefficient table at the baseline's local estimates is given: per checkpoint, the LLC at both
  presets, lambda_Q at both, tr(H) / 2, r / 2 where its rule applies, K_eff (3p - 1) / 2 and d / 2
- finals.csv, Figures 1a and 1b's runs: the final LLC at both presets with each noise, lambda_Q, tr(H) / 2, L_n /
  L_n(0) and r / 2 there (the local preset against measured/paper_local/local_estimates.csv, 2,000 draws as here,
  where it has the run, else the first tries of measured/paper_local/fig1b_and_trace_estimates.csv, 4,000 draws;
  the authors' sampler against measured/paper_subset/runs.csv)

Own and shared noise are compared on the full-batch estimate `llc_full` in the standard error of their difference:
the two MCSEs in quadrature, the shared one taken equal to the own one where the draws are equal and the shared
table keeps no full-batch MCSE (local_estimates.csv, whose `mcse` and `llc_mean` used devinterp's few-batch L_init:
its noise, up to 43 in LLC at an early checkpoint, is in neither). Where an estimate missed R-hat 1.01 its MCSE
understates its error, and so does the z.

    python scripts/summarise_own_noise.py RESULTS/runs OUT_DIR [--baseline-coefficient COEFFICIENT.csv]
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

MEASURED = Path(__file__).resolve().parents[1] / "measured"
SHARED_LOCAL = MEASURED / "paper_local" / "local_estimates.csv"
SHARED_FIG1B_LOCAL = MEASURED / "paper_local" / "fig1b_and_trace_estimates.csv"
SHARED_SUBSET_RUNS = MEASURED / "paper_subset" / "runs.csv"
FIG2_PREFIX = "p53_K1024_adam_lr1e-04_wd1e-05_bs128_s"
SWEEP_SUFFIX = "_adam_lr1e-02_wd1e-05_bs64_s0_es0.95x3"
ESTIMATE_COLUMNS = [
    "step", "llc_mean", "llc_full", "mcse", "r_hat", "ess_bulk", "ess_tail", "converged", "loss_excess",
    "loss_excess_fraction", "sampled_train_acc", "relative_distance", "local", "lambda_q", "lambda_q_stderr",
    "llc_minus_lambda_q", "llc_minus_lambda_q_stderr", "v_reach", "step_size", "nbeta", "localization", "num_chains",
    "num_draws", "seed",
]  # fmt: skip


def finished(run_dir: Path) -> bool:
    return all((run_dir / name).exists() for name in ("summary.csv", "certified.csv", "loss_data.csv"))


def z_score(own, shared, own_mcse, shared_mcse):
    """How far apart two independent estimates lie, in their difference's standard error."""
    return (own - shared) / np.hypot(own_mcse, shared_mcse)


def peak_row(run_dir: Path, shared_estimates: pd.DataFrame) -> dict:
    loss = pd.read_csv(run_dir / "loss_data.csv")
    local = pd.read_csv(run_dir / "certified.csv").dropna(subset=["llc_mean"]).set_index("step")
    authors = loss.dropna(subset=["llc"])
    peak = local.llc_mean.idxmax()
    shared = shared_estimates.set_index("step")[["llc_full"]].add_suffix("_shared")
    both = local[["llc_full", "mcse"]].join(shared, how="inner")
    z = z_score(both.llc_full, both.llc_full_shared, both.mcse, both.mcse)
    return {
        "run": run_dir.name,
        "paper_code_peak_step": int(authors.loc[authors.llc.idxmax(), "step"]),
        "paper_code_peak": authors.llc.max(),
        "local_peak_step": int(peak),
        "local_peak": local.llc_mean[peak],
        "local_peak_mcse": local.mcse[peak],
        "local_stop_step": int(local.index[-1]),
        "local_stop": local.llc_mean.iloc[-1],
        "local_fall_fraction": 1 - local.llc_mean.iloc[-1] / local.llc_mean[peak],
        "val50_step": int(loss.loc[loss.val_acc >= 0.5, "step"].iloc[0]),
        "local_estimates": len(local),
        "all_local": bool(local.local.all()),
        "converged": int(local.converged.sum()),
        "lambda_q_at_stop": local.lambda_q.iloc[-1],
        "shared_noise_checkpoints": len(both),
        "shared_noise_peak_step": int(shared.llc_full_shared.idxmax()),
        "own_minus_shared_full_max_abs": float((both.llc_full - both.llc_full_shared).abs().max()),
        "own_minus_shared_max_abs_z": float(z.abs().max()),
        "own_minus_shared_median_abs_z": float(z.abs().median()),
    }


def shared_local_final(run: str, step: int, own_mcse: float, paper_local: pd.DataFrame, fig1b: pd.DataFrame) -> dict:
    """The shared-noise local estimate at the run's final step (full-batch) and its MCSE: paper_local's (2,000 draws
    as here; it keeps no full-batch MCSE, so the own one stands in) where it has one, else the first try of
    fig1b_and_trace_estimates.csv (4,000 draws, its own full-batch MCSE)."""
    row = paper_local[(paper_local.run == run) & (paper_local.step == step)]
    if len(row):
        return {
            "shared_local_full": row.llc_full.iloc[0],
            "shared_local_mcse": own_mcse,
            "shared_source": "paper_local",
        }
    row = fig1b[(fig1b.run == run) & (fig1b.step == step)]
    if len(row):
        return {"shared_local_full": row.llc_full.iloc[0], "shared_local_mcse": row.mcse.iloc[0],
                "shared_source": "fig1b_and_trace_estimates"}  # fmt: skip
    return {"shared_local_full": np.nan, "shared_local_mcse": np.nan, "shared_source": "none at this step"}


def sampler_free_at(run_dir: Path, step: int) -> dict:
    """tr(H) / 2, L_n / L_n(0) and r / 2 at the step from the run's coefficient table (blank where it has none)."""
    path = run_dir / "coefficient.csv"
    table = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["step"])
    at_step = table[table.step == step]
    return {
        name: at_step[name].iloc[0] if len(at_step) else np.nan for name in ("half_trace", "loss_fraction", "half_rank")
    }


def final_row(run_dir: Path, paper_local: pd.DataFrame, fig1b: pd.DataFrame, subset_runs: pd.DataFrame) -> dict:
    summary = pd.read_csv(run_dir / "summary.csv").iloc[0]
    local = pd.read_csv(run_dir / "certified.csv").dropna(subset=["llc_mean"]).iloc[-1]
    step = int(local.step)
    if step != summary.final_step:
        raise SystemExit(
            f"{run_dir.name}: its last local estimate is at step {step}, not the final {summary.final_step}"
        )
    shared_authors = subset_runs[(subset_runs.run == run_dir.name) & (subset_runs.final_step == summary.final_step)]
    row = {
        "run": run_dir.name,
        "p": int(summary.p),
        "hidden": int(summary.hidden),
        "final_step": int(summary.final_step),
        "paper_code_final": summary.final_llc,
        "paper_code_final_local": bool(summary.final_local),
        "shared_paper_code_final": shared_authors.final_llc.iloc[0] if len(shared_authors) else np.nan,
        "local_step": step,
        "local_final": local.llc_mean,
        "local_final_full": local.llc_full,
        "local_final_mcse": local.mcse,
        "local_final_r_hat": local.r_hat,
        "local_final_converged": bool(local.converged),
        "local_final_local": bool(local.local),
        "lambda_q": local.lambda_q,
        **sampler_free_at(run_dir, step),
        "keff_llc": summary.final_keff_llc,
        "half_d": 3 * summary.p * summary.hidden / 2,
    }
    row |= shared_local_final(run_dir.name, step, local.mcse, paper_local, fig1b)
    row["own_minus_shared_local_z"] = z_score(row["local_final_full"], row["shared_local_full"], local.mcse,
                                              row["shared_local_mcse"])  # fmt: skip
    return row


def local_estimates(run_dirs: list[Path]) -> pd.DataFrame:
    tables = [pd.read_csv(run / "certified.csv")[ESTIMATE_COLUMNS].assign(run=run.name) for run in run_dirs]
    return pd.concat(tables)[["run", *ESTIMATE_COLUMNS]]


def baseline_table(run_dir: Path, coefficient: pd.DataFrame) -> pd.DataFrame:
    """The baseline's estimands per checkpoint: its local estimates beside the sampler-free columns there and the
    authors' sampler's estimate of the same checkpoint."""
    local = pd.read_csv(run_dir / "certified.csv")[["step", "llc_mean", "mcse", "r_hat", "converged", "local"]]
    authors = pd.read_csv(run_dir / "loss_data.csv")[["step", "llc"]].rename(columns={"llc": "paper_code_llc"})
    sampler_free = coefficient[["step", "loss_fraction", "interpolating", "half_rank", "half_rank_stderr",
                                "lambda_q_local", "lambda_q_local_stderr", "lambda_q_authors", "half_trace",
                                "v_reach_local", "keff_llc", "half_d"]]  # fmt: skip
    table = local.rename(columns={"llc_mean": "local_llc"}).merge(sampler_free, on="step", how="left")
    return table.merge(authors, on="step", how="left")


def main(runs: str, out: str, baseline_coefficient: str | None = None) -> None:
    runs, out = Path(runs), Path(out)
    finished_runs = sorted(run for run in runs.iterdir() if finished(run))
    local_estimates(finished_runs).to_csv(out / "local_estimates.csv", index=False)
    paper_local = pd.read_csv(SHARED_LOCAL)
    fig2 = [runs / f"{FIG2_PREFIX}{seed}" for seed in range(6)]
    peaks = [peak_row(run, paper_local[paper_local.run == run.name]) for run in fig2 if finished(run)]
    pd.DataFrame(peaks).to_csv(out / "peaks.csv", index=False)
    sweeps = sorted(run for run in runs.glob(f"p*{SWEEP_SUFFIX}") if finished(run))
    fig1b = pd.read_csv(SHARED_FIG1B_LOCAL)
    fig1b = fig1b[fig1b.num_draws == 4000]
    subset_runs = pd.read_csv(SHARED_SUBSET_RUNS)
    finals = [final_row(run, paper_local, fig1b, subset_runs) for run in sweeps]
    pd.DataFrame(finals).sort_values(["hidden", "p"]).to_csv(out / "finals.csv", index=False)
    if baseline_coefficient:
        baseline = baseline_table(runs / f"{FIG2_PREFIX}0", pd.read_csv(baseline_coefficient))
        baseline.to_csv(out / "baseline.csv", index=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", help="the workflow's results/paper_local/runs")
    parser.add_argument("out", help="the folder to write the tables into")
    parser.add_argument("--baseline-coefficient", help="`grokslt coefficient` of the baseline at its local estimates")
    args = parser.parse_args()
    main(args.runs, args.out, args.baseline_coefficient)

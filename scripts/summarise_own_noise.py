"""Figure 2's runs at paper scale with each run's own sampler noise against the shared-noise estimates of
measured/paper_local: per run, the peaks of both presets' trajectories, the local preset's fall to the stop, and how
far apart the two noises' local estimates of the same checkpoints lie in combined MCSE.

    python scripts/summarise_own_noise.py RESULTS/runs OUT.csv
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SHARED = Path(__file__).resolve().parents[1] / "measured" / "paper_local" / "local_estimates.csv"
PREFIX = "p53_K1024_adam_lr1e-04_wd1e-05_bs128_s"


def run_row(run_dir: Path, shared: pd.DataFrame) -> dict:
    loss = pd.read_csv(run_dir / "loss_data.csv")
    local = pd.read_csv(run_dir / "certified.csv").set_index("step")
    authors = loss.dropna(subset=["llc"])
    peak = local.llc_mean.idxmax()
    shared = shared.set_index("step")[["llc_mean", "mcse"]].add_suffix("_shared")
    both = local[["llc_mean", "mcse"]].join(shared, how="inner")
    z = (both.llc_mean - both.llc_mean_shared) / np.hypot(both.mcse, both.mcse_shared)
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
        "shared_noise_peak_step": int(shared.llc_mean_shared.idxmax()),
        "own_minus_shared_max_abs_z": float(z.abs().max()),
        "own_minus_shared_median_abs_z": float(z.abs().median()),
    }


def main(runs: str, out: str) -> None:
    shared = pd.read_csv(SHARED)
    rows = []
    for seed in range(6):
        run_dir = Path(runs) / f"{PREFIX}{seed}"
        if (run_dir / "certified.csv").exists() and (run_dir / "loss_data.csv").exists():
            rows.append(run_row(run_dir, shared[shared.run == run_dir.name]))
    pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", help="the workflow's results/paper_local/runs")
    parser.add_argument("out", help="the CSV to write")
    args = parser.parse_args()
    main(args.runs, args.out)

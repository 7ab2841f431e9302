"""The locality table of measured/locality: sampler settings against honest diagnostics and locality at
the decisive checkpoints of a trained run (default: the baseline, p 53, K 1024, seed 0, authors' split).

    grokslt train --p 53 --hidden 1024 --lr 1e-4 --weight-decay 1e-5 --batch-size 128 --max-steps 100000 \
        --eval-every 100 --seed 0 --split authors --out results/measure/baseline
    python scripts/measure_locality.py --run results/measure/baseline --out measured/locality/locality.csv

Each row is one `grokslt llc` estimate (native backend, 4 chains) with its settings, wall time, the LLC
(minibatch `llc_mean` and full-batch `llc_full`), the honest and minibatch diagnostics and the locality
columns. The decisive checkpoints are memorisation, the LLC peak of the authors' log of the same run
(their flatness_test: step 5,000), val 50%, val 95% and the stop.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from grokslt import runtime
from grokslt.estimation.checkpoint_llc import Checkpoints, Sampling, write_llc_table
from grokslt.training.runs import decisive_steps, load_run

SETTINGS = {
    "paper_code": {"preset": "paper_code"},
    "old_certified": {"step_size": 8e-4, "nbeta": 160.0, "localization": 5.0, "num_draws": 1000},
    "sgld_g1e3": {"step_size": 1e-4, "nbeta": 160.0, "localization": 1e3, "num_draws": 1000},
    "sgld_g1e4": {"step_size": 1e-4, "nbeta": 160.0, "localization": 1e4, "num_draws": 1000},
    "sgld_nb1e5": {"step_size": 1e-6, "nbeta": 1e5, "localization": 100.0, "num_draws": 2000},
    "sgld_nb1e4_g1e4": {"step_size": 1e-5, "nbeta": 1e4, "localization": 1e4, "num_draws": 2000},
    "sgld_nb1e5_g1e4": {"step_size": 1e-6, "nbeta": 1e5, "localization": 1e4, "num_draws": 2000},
    "mala_certified": {"sampler": "mala", "step_size": 8e-4, "nbeta": 160.0, "localization": 5.0, "num_draws": 1000},
    # V alone (W held at w*): the estimand in closed form (exact_llc), the cheapest exact check of each sampler
    "V_paper_code": {"preset": "paper_code", "weights": "V"},
    "V_sgld_nb160_e4e-4": {"weights": "V", "step_size": 4e-4, "nbeta": 160.0, "localization": 5.0, "num_draws": 4000},
    "V_sgld_nb160_e2e-4": {"weights": "V", "step_size": 2e-4, "nbeta": 160.0, "localization": 5.0, "num_draws": 4000},
    "V_sgld_nb160_e1e-4": {"weights": "V", "step_size": 1e-4, "nbeta": 160.0, "localization": 5.0, "num_draws": 4000},
    "V_mala_nb160": {
        "weights": "V",
        "sampler": "mala",
        "step_size": 4e-4,
        "nbeta": 160.0,
        "localization": 5.0,
        "num_draws": 4000,
    },
    "V_sgld_nb1e4_g1e4_e2e-5": {
        "weights": "V",
        "step_size": 2e-5,
        "nbeta": 1e4,
        "localization": 1e4,
        "num_draws": 2000,
    },
    "V_sgld_nb1e4_g1e4_e1e-5": {
        "weights": "V",
        "step_size": 1e-5,
        "nbeta": 1e4,
        "localization": 1e4,
        "num_draws": 2000,
    },
    # SGLD at twice the local step: the step-extrapolated value 2 lambda(eps) - lambda(2 eps)
    "sgld_nb1e4_g1e4_e2e-5": {"step_size": 2e-5, "nbeta": 1e4, "localization": 1e4, "num_draws": 2000},
    # MALA on all weights at the local settings: the exact-sampler check of SGLD there (unadjusted burn-in)
    "mala_nb1e4_g1e4_e3e-6": {
        "sampler": "mala",
        "step_size": 3e-6,
        "nbeta": 1e4,
        "localization": 1e4,
        "num_burnin": 500,
        "num_draws": 2000,
    },
    # the same, long enough for ESS >= 100 (at the stop: --steps 15900)
    "mala_nb1e4_g1e4_e3e-6_long": {
        "sampler": "mala",
        "step_size": 3e-6,
        "nbeta": 1e4,
        "localization": 1e4,
        "num_burnin": 500,
        "num_draws": 6000,
    },
}
COLUMNS = [
    "setting", "seed", "step", "sampler", "step_size", "nbeta", "localization", "num_draws", "seconds", "llc_mean",
    "llc_full", "mcse", "r_hat", "ess_bulk", "ess_tail", "converged", "r_hat_minibatch", "ess_bulk_minibatch",
    "converged_minibatch", "loss_excess", "loss_excess_fraction", "sampled_train_acc", "centre_train_acc",
    "relative_distance", "local", "accept_rate", "observed_every", "weights", "exact_llc", "exact_learning_coefficient",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=Path("results/measure/baseline"))
    parser.add_argument("--out", type=Path, default=Path("measured/locality/locality.csv"))
    parser.add_argument("--peak", type=int, default=5000, help="the LLC peak step (the authors' log: 5000)")
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    parser.add_argument("--steps", help="comma-separated checkpoints instead of the decisive ones")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="*", default=[0], help="sampler seeds: independent replicates")
    parser.add_argument("--append", action="store_true", help="add rows to an existing table")
    args = parser.parse_args()
    runtime.configure(1)
    # the run's own decisive checkpoints, with the LLC peak of the authors' log in place of its own
    steps = decisive_steps(load_run(args.run), llc_peak=False) | {"llc_peak": args.peak}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fresh = not args.out.exists() or not args.append
    with open(args.out, "w" if fresh else "a", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, extrasaction="ignore")
        if fresh:
            writer.writeheader()
        for name in args.settings:
            for seed in args.seeds:
                spec = dict(SETTINGS[name])
                preset = spec.pop("preset", "paper_code")
                began = time.perf_counter()
                scratch = args.out.with_suffix(f".{name}.tmp.csv")
                sampling = Sampling(preset, {**spec, "num_chains": args.chains}, seed=seed)
                chosen = Checkpoints(args.steps or ",".join(map(str, sorted(set(steps.values())))))
                rows = write_llc_table(args.run, scratch, sampling, chosen)
                scratch.unlink()
                seconds = (time.perf_counter() - began) / len(rows)
                for row in rows:
                    writer.writerow({"setting": name, "seed": seed, "seconds": round(seconds, 1), **row})
                handle.flush()
                print(f"{name}, seed {seed}: {seconds:.1f} s per estimate", flush=True)


if __name__ == "__main__":
    main()

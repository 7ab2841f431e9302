"""Whether Figure 2's seeds peak together because their sampler noise is shared (issue 42, item 5).

Reads the authors'-sampler LLCs of the baseline's training seeds at steps 3,000-6,500 twice: as measured with the
one sampler seed every run shared (`measured/paper_subset/runs/*_s{0..5}/loss_data.csv`) and as `grokslt llc`
estimated them with each run's own sampler seed (`runs.run_seed`; the runs of `measured/seed_noise/README.md`).
Prints and writes, per seed, the step of the largest LLC, and across seeds the correlation of what is left of each
trajectory after a quadratic trend in the step: shared noise moves every seed's estimate up and down together.

At the local preset it compares, the same way, the estimates at the checkpoints around that preset's peak (5,100,
6,100, 7,100) with `measured/paper_local/local_estimates.csv`'s shared-seed ones.

    python scripts/measure_seed_noise.py --new DIR/p53_K1024_s{0..5}/llc_3000_6500.csv \
        --local RUNS7/p53_K1024_s{0..5}/local_peak.csv --out measured/seed_noise
"""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd

OLD = "measured/paper_subset/runs/p53_K1024_adam_lr1e-04_wd1e-05_bs128_s{seed}/loss_data.csv"
OLD_LOCAL = "measured/paper_local/local_estimates.csv"
OLD_RUN = "p53_K1024_adam_lr1e-04_wd1e-05_bs128_s{seed}"
STEPS = (3000, 6500)


def window(table: pd.DataFrame, column: str) -> pd.Series:
    inside = table[(table["step"] >= STEPS[0]) & (table["step"] <= STEPS[1])]
    return inside.set_index("step")[column].astype(float)


def residuals(series: pd.Series) -> np.ndarray:
    steps = series.index.to_numpy(dtype=float)
    trend = np.polyval(np.polyfit(steps, series.to_numpy(), 2), steps)
    return series.to_numpy() - trend


def correlations(trajectories: dict[int, pd.Series]) -> list[float]:
    left = {seed: residuals(series) for seed, series in trajectories.items()}
    return [float(np.corrcoef(left[a], left[b])[0, 1]) for a, b in itertools.combinations(sorted(left), 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--new", nargs="+", required=True, help="llc_3000_6500.csv of each seed's run (`_s<seed>`)")
    parser.add_argument("--local", nargs="*", default=[], help="local_peak.csv of each seed's run (`_s<seed>`)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    new_tables = {seed_of(path): pd.read_csv(path) for path in args.new}
    old = {seed: window(pd.read_csv(OLD.format(seed=seed)), "llc") for seed in new_tables}
    new = {seed: window(table, "llc_mean") for seed, table in new_tables.items()}
    rows = []
    for seed, table in sorted(new_tables.items()):
        rows.append({"seed": seed, "sampler_seed_shared": 0, "sampler_seed_own": int(table["seed"].iloc[0]),
                     "peak_step_shared": int(old[seed].idxmax()), "peak_step_own": int(new[seed].idxmax()),
                     "peak_llc_shared": round(old[seed].max(), 2), "peak_llc_own": round(new[seed].max(), 2),
                     "residual_sd_shared": round(float(residuals(old[seed]).std(ddof=1)), 2),
                     "residual_sd_own": round(float(residuals(new[seed]).std(ddof=1)), 2)})  # fmt: skip
    per_seed = pd.DataFrame(rows)
    pairs = {"shared": correlations(old), "own": correlations(new)}
    summary = pd.DataFrame([{"sampler_noise": name, "pairs": len(values), "mean_residual_correlation":
                             round(float(np.mean(values)), 3), "min": round(min(values), 3),
                             "max": round(max(values), 3), "distinct_peak_steps":
                             per_seed[f"peak_step_{name}"].nunique()} for name, values in pairs.items()])  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_seed.to_csv(out / "per_seed.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    print(per_seed.to_string(index=False))
    print(summary.to_string(index=False))
    if args.local:
        local = local_peaks({seed_of(path): pd.read_csv(path) for path in args.local})
        local.to_csv(out / "local_peak.csv", index=False)
        print(local.to_string(index=False))


def seed_of(path: str) -> int:
    return int(re.search(r"_s(\d+)", Path(path).parent.name).group(1))


def local_peaks(new_tables: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Per seed and checkpoint, the local preset's estimate with shared and with own noise."""
    old = pd.read_csv(OLD_LOCAL)
    rows = []
    for seed, table in sorted(new_tables.items()):
        shared = old[old["run"] == OLD_RUN.format(seed=seed)].set_index("step")
        for _, row in table.iterrows():
            step = int(row["step"])
            rows.append({"seed": seed, "step": step, "llc_shared": round(shared.loc[step, "llc_mean"], 3),
                         "mcse_shared": round(shared.loc[step, "mcse"], 3), "llc_own": round(row["llc_mean"], 3),
                         "mcse_own": round(row["mcse"], 3), "converged_own": row["converged"],
                         "local_own": row["local"]})  # fmt: skip
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()

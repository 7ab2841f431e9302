"""The tables of measured/families from a finished `config/families.yaml` run: per run, its transitions and its LLC
trajectory's landmarks at the experiment's own sampler (`loss_data.csv`) and at the local preset (`certified.csv`,
where the config estimates it), with how many estimates are local and converged; plus the claims and the comparison
with devinterp's notebook (scripts/compare_devinterp_grokking.py).

    snakemake --cores 2 --configfile config/families.yaml
    python scripts/summarise_families.py --results results/families --out measured/families
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd

from grokslt.analysis.llc_series import smoothed_llc
from grokslt.io import write_csv


def landmarks(table: pd.DataFrame) -> dict:
    """The LLC's smoothed peak (step and raw value there), its value at the last checkpoint, and the share of
    estimates that are local and converged (a thinned trajectory's skipped checkpoints left out)."""
    table = table[table["llc"].notna()].reset_index(drop=True)
    peak = table.loc[smoothed_llc(table).idxmax()]  # as the claims smooth
    last = table.iloc[-1]
    return {"peak_step": int(peak["step"]), "peak": round(float(peak["llc"]), 3),
            "last": round(float(last["llc"]), 3),
            "local": f"{int(table['local'].astype(bool).sum())}/{len(table)}",
            "converged": f"{int(table['converged'].astype(bool).sum())}/{len(table)}",
            "max_r_hat": round(float(table["r_hat"].max()), 3),
            "max_loss_excess_fraction": round(float(table["loss_excess_fraction"].max()), 5)}  # fmt: skip


def run_rows(results: Path) -> list[dict]:
    summary = pd.read_csv(results / "summary" / "runs.csv")
    rows = []
    for _, run in summary.iterrows():
        directory = results / "runs" / run["run"]
        loss = pd.read_csv(directory / "loss_data.csv")
        loss = loss[~loss["diverged"].astype(bool)]
        base = {"run": run["run"], "model": run["model"], "seed": run["seed"], "weight_decay": run["weight_decay"],
                "memorisation_step": run["memorisation_step"], "grok_step_50": run["grok_step_50"],
                "final_val_acc": round(float(run["final_val_acc"]), 4)}  # fmt: skip
        rows.append(base | {"preset": run["llc_preset"]} | landmarks(loss))
        certified = directory / "certified.csv"
        if certified.exists() and len(table := pd.read_csv(certified)):
            rows.append(base | {"preset": "local (certified)"} | landmarks(table.rename(columns={"llc_mean": "llc"})))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = run_rows(args.results)
    write_csv(args.out / "runs.csv", rows, list(rows[0]))
    for name in ("claims/claims.csv", "summary/runs.csv"):
        shutil.copy(args.results / name, args.out / name.replace("/", "_"))
    for figure in (args.results / "figures").glob("*.png"):
        shutil.copy(figure, args.out / figure.name)
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()

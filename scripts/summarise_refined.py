"""The tables of measured/refined from a finished refined study (the `refined:` section of a config): the
refined LLCs at the run's decisive checkpoints (one column per weight group or data subset, with locality and
convergence), the WAIC table, and what each table cost (Snakemake's benchmarks).

    snakemake --cores 2 --configfile config/paper_local.yaml
    python scripts/summarise_refined.py --results results/paper_local \
        --run p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0 --out measured/refined
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd

from grokslt.training.runs import decisive_steps, load_run


def decisive_table(refined: pd.DataFrame, steps: dict[str, int]) -> pd.DataFrame:
    """llc_mean (and whether local and converged) per decisive checkpoint and kind of estimate."""
    refined = refined.assign(kind=refined["weights"].where(refined["data"] == "train", "data " + refined["data"]))
    rows = []
    for name, step in steps.items():
        for kind, group in refined.groupby("kind", sort=False):
            at = group.iloc[(group["step"] - step).abs().argsort()[:1]].iloc[0]
            mark = "" if at["local"] and at["converged"] else " (not local)" if not at["local"] else " (R-hat)"
            rows.append({"checkpoint": f"{name} {step}", "kind": kind, "value": f"{at['llc_mean']:.2f}{mark}",
                         "r_hat": at["r_hat"], "loss_excess_fraction": at["loss_excess_fraction"]})  # fmt: skip
    return pd.DataFrame(rows)


def costs(results: Path, run: str) -> pd.DataFrame:
    rows = []
    for path in sorted((results / "benchmarks" / "refined" / run).glob("*.tsv")):
        bench = pd.read_csv(path, sep="\t").iloc[-1]
        rows.append({"table": path.stem, "wall_s": bench["s"], "cpu_s": bench["cpu_time"]})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    run_dir = args.results / "runs" / args.run
    args.out.mkdir(parents=True, exist_ok=True)
    refined = pd.read_csv(run_dir / "refined.csv")
    refined.to_csv(args.out / "refined.csv", index=False)
    shutil.copy(run_dir / "waic.csv", args.out / "waic.csv")
    steps = dict(sorted(decisive_steps(load_run(run_dir)).items(), key=lambda item: item[1]))
    table = decisive_table(refined, steps)
    table.to_csv(args.out / "decisive.csv", index=False)
    wide = table.pivot(index="checkpoint", columns="kind", values="value").reindex(
        [f"{k} {v}" for k, v in steps.items()]
    )
    print(wide.to_markdown())
    spent = costs(args.results, args.run)
    spent.to_csv(args.out / "costs.csv", index=False)
    print(spent.to_markdown(index=False))
    for name in ("refined_baseline", "influence_baseline"):
        figure = args.results / "figures" / f"{name}.png"
        if figure.exists():
            shutil.copy(figure, args.out / figure.name)


if __name__ == "__main__":
    main()

"""What a sampler's settings can see of a known learning coefficient: at each run's last checkpoint, the exact
estimand nbeta E[L_n - L_n(w*)] of the network with W held at w* (linear in V: a regular model whose learning
coefficient is p rank(Phi_c) / 2), at the given nbeta and localization gamma (`grokslt.estimation.linear_v`).
Where the estimand recovers a tiny and K-dependent share of that coefficient, the full network's estimate at the
same settings cannot test a claim about the learning coefficient's value or scaling.

    python scripts/v_only_reference.py --nbeta 1e4 --gamma 1e4 --out v_only.csv results/paper_local/runs/p53_*
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grokslt.estimation.linear_v import v_only_estimand
from grokslt.io import write_csv
from grokslt.training.runs import load_run


def reference_row(run_dir: Path, nbeta: float, gamma: float) -> dict:
    run = load_run(run_dir)
    step = max(run.checkpoints)
    params = run.load(step)
    exact = v_only_estimand(params["W"], params["V"], run.data, nbeta, gamma)
    coefficient = exact["learning_coefficient"]
    return {"run": run_dir.name, "p": run.data.p, "hidden": params["W"].shape[1], "step": step, "nbeta": nbeta,
            "localization": gamma, "v_only_estimand": round(exact["estimand"], 4), "v_only_rank": exact["rank"],
            "v_only_learning_coefficient": coefficient,
            "recovered": round(exact["estimand"] / coefficient, 7)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories written by `grokslt train`")
    parser.add_argument("--nbeta", type=float, required=True)
    parser.add_argument("--gamma", type=float, required=True, help="the localization")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [reference_row(run, args.nbeta, args.gamma) for run in args.runs]
    rows.sort(key=lambda row: (row["p"], row["hidden"]))
    write_csv(args.out, rows, list(rows[0]))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()

"""Read a finished workflow's tables with pandas (and one run's LLC traces with NumPy), and print a few lines.

    python examples/load_results.py                      # results/quick, the quick configuration's
    python examples/load_results.py results --run RUN    # another results directory, another run

RESULTS is the config's `results` directory: what `snakemake --cores 2 --configfile config/quick.yaml`
writes is results/quick. docs/columns.md explains every column.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results/quick", help="results directory (default: %(default)s)")
    parser.add_argument("--run", help="a run id (default: the first baseline run, else the first that did not diverge)")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if not (results / "summary" / "runs.csv").exists():
        sys.exit(f"{results / 'summary' / 'runs.csv'}: missing; run the workflow first (see README, 'First hour')")

    # summary/runs.csv: one row per run
    summary = pd.read_csv(results / "summary" / "runs.csv")
    print(f"summary/runs.csv: {len(summary)} runs, {len(summary.columns)} columns")
    shown = ["run", "status", "final_step", "final_val_acc", "grok_step_95", "final_llc", "peak_llc", "gsm"]
    print(summary[shown].head(5).to_string(index=False))

    # one run: its settings (params.csv, one row) and its evaluations (loss_data.csv, one row per checkpoint)
    finished = summary[summary["status"] != "diverged"]
    baseline = finished[finished["experiments"].fillna("").str.split(";").apply(lambda names: "baseline" in names)]
    run = args.run or (baseline if len(baseline) else finished)["run"].iloc[0]
    run_dir = results / "runs" / run
    params = pd.read_csv(run_dir / "params.csv").iloc[0]
    loss = pd.read_csv(run_dir / "loss_data.csv")
    settings = f"p = {params['p']}, K = {params['hidden']}, lr = {params['lr']}, status {params['status']}"
    print(f"\nrun {run}: {settings}, LLC preset {params['llc_preset']} (nbeta {params['llc_nbeta']:.4g})")
    shown = ["step", "train_acc", "val_acc", "llc", "llc_std", "converged", "trace_hutchinson"]
    print(loss[shown].tail(5).to_string(index=False))

    # the LLC traces, runs/RUN/llc/chunk{i}of{n}.npz: `steps` [checkpoints], `loss_trace` [checkpoints, chains, draws]
    steps, traces = [], []
    for path in sorted((run_dir / "llc").glob("chunk*.npz")):
        with np.load(path) as arrays:
            steps.append(arrays["steps"])
            traces.append(arrays["loss_trace"])
    steps, traces = np.concatenate(steps), np.concatenate(traces)
    last = int(np.argmax(steps))
    row = loss.loc[loss["step"] == steps[last]].iloc[0]
    # each chain's estimate: nbeta (mean draw loss - L_init), the llc_chain_{i} columns of loss_data.csv
    per_chain = params["llc_nbeta"] * (traces[last].astype(float).mean(axis=1) - row["llc_init_loss"])
    chains, draws = traces.shape[1:]
    table = f"llc {row['llc']:.4g}, R-hat {row['r_hat']:.3g}, converged {row['converged']}"
    estimates = np.array2string(per_chain, precision=4)
    print(f"\nLLC trace at step {steps[last]}: {chains} chains x {draws} draws, per-chain estimates {estimates}")
    print(f"  (loss_data.csv at that step: {table})")

    claims = results / "claims" / "claims.csv"
    if claims.exists():
        verdicts = pd.read_csv(claims)["verdict"].value_counts().to_dict()
        print(f"\nclaims/claims.csv: {verdicts} (with config/quick.yaml a smoke test of the pipeline, not evidence)")


if __name__ == "__main__":
    main()

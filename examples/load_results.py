"""Read a finished workflow's tables with pandas (and one run's LLC chains as an ArviZ DataTree), print a few lines.

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
    shown = ["run", "status", "final_val_acc", "grok_step_95", "final_llc", "final_local", "final_converged", "gsm"]
    print(summary[shown].head(5).to_string(index=False))
    # a run that never reached val 95% (grok_step_95 blank) never grokked: its final LLC is not the paper's, its
    # GSM of 0 no "no delay"; an estimate that is not local (final_local) or not converged is no trusted LLC
    grokked = summary["grok_step_95"].notna()
    print(f"{int((~grokked).sum())} of {len(summary)} runs never reached val 95%: left out below unless none did")

    # one run: its settings (params.csv, one row) and its evaluations (loss_data.csv, one row per checkpoint)
    finished = summary[summary["status"] != "diverged"]
    if grokked[finished.index].any():  # a run that grokked, where there is one
        finished = finished[grokked]
    baseline = finished[finished["experiments"].fillna("").str.split(";").apply(lambda names: "baseline" in names)]
    run = args.run or (baseline if len(baseline) else finished)["run"].iloc[0]
    if not summary.loc[summary["run"] == run, "grok_step_95"].notna().all():
        print(f"note: run {run} never reached val 95%: its final LLC is not the paper's final LLC")
    run_dir = results / "runs" / run
    params = pd.read_csv(run_dir / "params.csv").iloc[0]
    loss = pd.read_csv(run_dir / "loss_data.csv")
    settings = f"p = {params['p']}, K = {params['hidden']}, lr = {params['lr']}, status {params['status']}"
    print(f"\nrun {run}: {settings}, LLC preset {params['llc_preset']} (nbeta {params['llc_nbeta']:.4g})")
    shown = ["step", "train_acc", "val_acc", "llc", "mcse", "converged", "local", "trace_hutchinson"]
    print(loss[shown].tail(5).to_string(index=False))

    # the LLC chains, runs/RUN/llc/chunk{i}of{n}.npz, as an ArviZ DataTree: posterior `llc` (chain, draw, step)
    from grokslt.estimation.llc_chains import load_llc_chains

    chains = load_llc_chains(run_dir)["posterior"]["llc"]
    last = int(chains["step"].max())
    row = loss.loc[loss["step"] == last].iloc[0]
    # each chain's estimate, the llc_chain_{i} columns of loss_data.csv
    per_chain = np.array2string(chains.sel(step=last).mean("draw").values, precision=4)
    print(f"\nLLC chains at step {last}: {chains.sizes['chain']} chains x {chains.sizes['draw']} draws, per-chain "
          f"estimates {per_chain}")  # fmt: skip
    print(f"  (loss_data.csv at that step: llc {row['llc']:.4g}, MCSE {row['mcse']:.2g}, R-hat {row['r_hat']:.3g}, "
          f"converged {row['converged']}, local {row['local']})")  # fmt: skip

    claims = results / "claims" / "claims.csv"
    if claims.exists():
        verdicts = pd.read_csv(claims)["verdict"].value_counts().to_dict()
        print(f"\nclaims/claims.csv: {verdicts} (with config/quick.yaml a smoke test of the pipeline, not evidence)")


if __name__ == "__main__":
    main()

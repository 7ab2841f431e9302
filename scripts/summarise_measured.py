"""The tables of a measured paper-scale run (`measured/<name>/`) from its finished workflow: the scorecard against
the authors' logs summarised per metric, the claims, the runs estimated at the certified preset (each one's
smoothed peak, last value, diagnostics and locality), what each stage cost (CPU seconds of the jobs the finished
workflow used, from Snakemake's benchmark files) against `grokslt plan`, and the workflow's figures.

    snakemake fig9 trajectories_vary_lr_wd scorecard claims --cores 2 --configfile config/fig9_grid.yaml
    grokslt plan --configfile config/fig9_grid.yaml --cores 2 --json > plan.json   # on an idle machine
    python scripts/summarise_measured.py --configfile config/fig9_grid.yaml --plan plan.json \
        --figures fig9 trajectories_vary_lr_wd scorecard --out measured/vary_lr_wd

`--keep-runs baseline seeds` keeps those runs' tables, so that a claim over runs measured on different days (a set
too long for one session) is one `grokslt claims` over the kept tables of both.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pandas as pd
import yaml

from grokslt.analysis.llc_series import llc_series, smoothed_llc
from grokslt.figures.inputs import experiment_rows
from grokslt.io import write_csv
from grokslt.training.runs import chunk_names, estimated_steps, logged_checkpoints


def scorecard_by_metric(scorecard: pd.DataFrame) -> list[dict]:
    """Per metric: runs compared, the median and worst |relative deviation|, and the share within 1% and 5%."""
    rows = []
    compared = scorecard[(scorecard["run"] != "worst") & scorecard["relative_deviation"].notna()]
    for metric, group in compared.groupby("metric", sort=False):
        deviation = group["relative_deviation"].abs()
        worst = group.loc[deviation.idxmax()]
        rows.append({"metric": metric, "runs": len(group), "median_abs_relative": round(deviation.median(), 4),
                     "worst_abs_relative": round(deviation.max(), 4), "worst_run": worst["run"],
                     "within_1pct": int((deviation <= 0.01).sum()),
                     "within_5pct": int((deviation <= 0.05).sum())})  # fmt: skip
    return rows


def current_outputs(results: Path, chunk_sizes: dict[str, int]) -> dict[str, set[str]]:
    """{stage: the benchmark names (RUN/chunkIofN) of the chunk jobs each run's tables were built from} (its
    params.csv says with which `llc_every`; tables built before thinning existed have every checkpoint): files
    of another chunking are on disk too and are left out."""
    names = {"llc": set(), "hessian": set()}
    for run in (results / "runs").iterdir():
        log, params = run / "train_log.csv", run / "params.csv"
        if not params.exists():
            continue
        every = int(pd.read_csv(params).get("llc_every", pd.Series([1])).iloc[0])
        counts = {"llc": len(estimated_steps(log, every)), "hessian": len(logged_checkpoints(log))}
        for stage, count in counts.items():
            names[stage] |= {f"{run.name}/{name}" for name in chunk_names(count, chunk_sizes[stage])}
    return names


def stage_costs(results: Path, chunk_sizes: dict[str, int]) -> list[dict]:
    """Per stage: jobs, CPU and wall seconds summed over their benchmark files."""
    current = current_outputs(results, chunk_sizes)
    rows = []
    for stage in sorted(p.name for p in (results / "benchmarks").iterdir() if p.is_dir()):
        files = sorted((results / "benchmarks" / stage).rglob("*.tsv"))
        if stage in current:
            files = [f for f in files if f"{f.parent.name}/{f.stem}" in current[stage]]
        tables = [pd.read_csv(f, sep="\t").iloc[-1] for f in files]
        rows.append({"stage": stage, "jobs": len(tables), "cpu_seconds": round(sum(t["cpu_time"] for t in tables)),
                     "wall_seconds": round(sum(t["s"] for t in tables))})  # fmt: skip
    return rows


def certified_runs(results: Path) -> list[dict]:
    """Per run with certified estimates: its batch size, weight decay, learning rate, p, K and seed, the
    smoothed LLC's peak (step, value) and last value, how many estimates are local and converged, the largest
    R-hat and loss excess. Only the summary's runs: a results directory may hold runs of a larger config."""
    summary = pd.read_csv(results / "summary" / "runs.csv").set_index("run")
    rows = []
    for path in sorted((results / "runs").glob("*/certified.csv")):
        if path.parent.name not in summary.index:
            continue
        table, run = pd.read_csv(path), summary.loc[path.parent.name]
        smooth = smoothed_llc(llc_series(table))
        rows.append({"run": path.parent.name, "batch_size": run["batch_size"], "weight_decay": run["weight_decay"],
                     "lr": run["lr"], "p": run["p"], "hidden": run["hidden"], "seed": run["seed"],
                     "estimates": len(table), "local": int(table["local"].sum()),
                     "converged": int(table["converged"].sum()), "r_hat_max": round(table["r_hat"].max(), 4),
                     "ess_bulk_min": round(table["ess_bulk"].min()),
                     "loss_excess_fraction_max": round(table["loss_excess_fraction"].max(), 4),
                     "peak_step": int(table["step"].iloc[smooth.idxmax()]), "peak_llc": round(smooth.max(), 2),
                     "last_step": int(table["step"].iloc[-1]), "last_llc": round(table["llc_mean"].iloc[-1], 2),
                     "gsm": run["gsm"]})  # fmt: skip
    order = ("batch_size", "weight_decay", "lr", "p", "hidden", "seed")
    return sorted(rows, key=lambda row: tuple(row[key] for key in order))


def keep_runs(results: Path, experiments: list[str], out: Path) -> int:
    """Copy the per-run tables the trajectory claims read (loss_data.csv, params.csv, certified.csv) of every run
    in one of `experiments` to out/runs/RUN/, so that `grokslt claims` can read them again, alone or beside runs
    measured another day, without their checkpoints; the number of runs copied."""
    summary = pd.read_csv(results / "summary" / "runs.csv")
    shutil.rmtree(out / "runs", ignore_errors=True)  # a run kept by an earlier call must not join the glob
    chosen = pd.concat(experiment_rows(summary, name, "summary/runs.csv", diverged=True) for name in experiments)
    chosen = chosen.drop_duplicates("run")  # a run of two experiments is copied once
    for run in chosen["run"]:
        (out / "runs" / run).mkdir(parents=True, exist_ok=True)
        for name in ("loss_data.csv", "params.csv", "certified.csv"):
            if (results / "runs" / run / name).exists():
                shutil.copy(results / "runs" / run / name, out / "runs" / run / name)
    return len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--configfile", type=Path, required=True, help="the grid's config")
    parser.add_argument("--plan", type=Path, required=True, help="grokslt plan --json of the same config")
    parser.add_argument("--figures", nargs="*", default=[], help="figures/NAME.png to copy")
    parser.add_argument("--keep-runs", nargs="*", default=[], metavar="EXPERIMENT",
                        help="copy these experiments' per-run tables to OUT/runs/")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load(args.configfile.read_text())
    args.results = Path(config["results"])
    scorecard = pd.read_csv(args.results / "scorecard" / "scorecard.csv")
    metrics = scorecard_by_metric(scorecard)
    write_csv(args.out / "scorecard_by_metric.csv", metrics, list(metrics[0]))
    chunk_sizes = {stage: config[stage]["chunk_size"] for stage in ("llc", "hessian")}
    costs = stage_costs(args.results, chunk_sizes)
    plan = json.loads(args.plan.read_text())
    total = {"stage": "total", **{k: sum(r[k] for r in costs) for k in ("jobs", "cpu_seconds", "wall_seconds")}}
    planned = {"stage": "planned (grokslt plan)", "jobs": plan["jobs"], "cpu_seconds": round(plan["cpu_seconds"]),
               "wall_seconds": round(plan["wall_seconds"])}  # fmt: skip
    write_csv(args.out / "cost.csv", [*costs, total, planned], list(total))
    shutil.copy(args.results / "scorecard" / "scorecard.csv", args.out / "scorecard.csv")
    if (args.results / "claims" / "claims.csv").exists():  # the claims target, once its certified estimates are in
        shutil.copy(args.results / "claims" / "claims.csv", args.out / "claims.csv")
    certified = certified_runs(args.results)
    if certified:
        write_csv(args.out / "certified_runs.csv", certified, list(certified[0]))
        print(pd.DataFrame(certified).drop(columns="run").to_string(index=False))
    shutil.copy(args.results / "summary" / "runs.csv", args.out / "runs.csv")
    for figure in args.figures:
        shutil.copy(args.results / "figures" / f"{figure}.png", args.out / f"{figure}.png")
    if args.keep_runs:
        print(f"{keep_runs(args.results, args.keep_runs, args.out)} runs' tables kept in {args.out / 'runs'}")
    print(pd.DataFrame(metrics).to_string(index=False))
    print(pd.DataFrame([*costs, total, planned]).to_string(index=False))


if __name__ == "__main__":
    main()

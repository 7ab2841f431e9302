# Config validation, run expansion, wildcard constraints and input functions shared by every stage.
import math
import os
import shlex
import sys

from snakemake.utils import validate

from grokslt.experiments import check_references, expand_experiments, run_id

validate(config, schema="../schemas/config.schema.yaml", set_default=True)
try:
    RUNS, MEMBERSHIP = expand_experiments(config)
    check_references(config, MEMBERSHIP)
except ValueError as error:
    raise WorkflowError(f"config: {error}") from None

# Rules call the `grokslt` command line. Where Snakemake was started without activating its environment
# (`.venv/bin/snakemake ...`), the command is found beside Snakemake's own interpreter; an activated or
# conda environment earlier on PATH takes precedence.
shell.prefix(f"set -euo pipefail; export PATH=\"$PATH\":{shlex.quote(os.path.dirname(sys.executable))}; ")

RESULTS = config["results"]
THREADS = config["threads"]
GPUS = 1 if config["gpu"] else 0
DEVICE = "cuda" if config["gpu"] else "cpu"
ENV = "../../envs/grokslt.yaml"
FIGURE_ENV = "../../envs/figures.yaml"
FIGURES = ["fig1a", "fig1b", "fig2", "fig9", "sensitivity", "theory_vs_measurement", "diagnostics"]


wildcard_constraints:
    run="[A-Za-z0-9_.+-]+",
    dataset="[A-Za-z0-9_.+-]+",
    i=r"\d+",
    n=r"\d+",
    experiment="|".join(config["experiments"]),


def dataset_id(train):
    return f"p{train.p}_tf{train.train_frac:g}_s{train.seed}_{train.split}"


DATASETS = {dataset_id(train): train for train in RUNS.values()}


def run_dir(run):
    return f"{RESULTS}/runs/{run}"


def train_args(wildcards):
    """The `grokslt train` flags of a run: every setting, so a changed setting reruns training."""
    c = RUNS[wildcards.run]
    args = [
        *("--p", c.p, "--hidden", c.hidden, "--train-frac", c.train_frac, "--optimizer", c.optimizer),
        *("--lr", repr(c.lr), "--weight-decay", repr(c.weight_decay), "--momentum", repr(c.momentum)),
        *("--batch-size", c.batch_size, "--max-steps", c.max_steps, "--eval-every", c.eval_every),
        *("--seed", c.seed, "--split", c.split),
    ]
    if not c.early_stop:
        return [*map(str, args), "--no-early-stop"]
    stop = ["--early-stop-threshold", repr(c.early_stop_threshold), "--early-stop-patience", c.early_stop_patience]
    return [str(arg) for arg in args + stop]


def llc_args():
    """Sampler flags: a changed preset or override reruns the LLC jobs and what depends on them."""
    llc = config["llc"]
    args = ["--preset", llc["preset"], "--backend", llc["backend"], "--seed", llc["seed"]]
    for key in ("step_size", "nbeta", "localization", "num_chains", "num_burnin", "num_draws", "init_loss"):
        if key in llc:
            args += [f"--{key.replace('_', '-')}", llc[key]]
    return [str(arg) for arg in args]


def hessian_args():
    hessian = config["hessian"]
    probes = ["--num-probes", str(hessian["num_probes"])] if "num_probes" in hessian else []
    return ["--preset", hessian["preset"], "--seed", str(hessian["seed"]), *probes]


def checkpoint_count(run):
    """Checkpoints of a trained run (one per logged evaluation); known once its training has finished."""
    log = checkpoints.train.get(run=run).output.log
    with open(log) as handle:
        return sum(1 for _ in handle) - 1


def chunk_files(run, stage):
    n = max(1, math.ceil(checkpoint_count(run) / config[stage]["chunk_size"]))
    return [f"{run_dir(run)}/{stage}/chunk{i}of{n}.csv" for i in range(n)]


def loss_tables(names):
    runs = dict.fromkeys(run for name in names for run in MEMBERSHIP[name])
    return [f"{run_dir(run)}/loss_data.csv" for run in runs]


def sensitivity_run():
    return MEMBERSHIP[config["sampler_sensitivity"]["experiment"]][0]


def figure_files(name):
    return [f"{RESULTS}/figures/{name}.pdf", f"{RESULTS}/figures/{name}.png"]


def all_targets(wildcards):
    tables = [f"{run_dir(run)}/{name}.csv" for run in RUNS for name in ("params", "loss_data")]
    theory = [f"{RESULTS}/theory/{name}.csv" for name in ("formulas", "rank_checks", "single_output")]
    figures = [path for name in FIGURES for path in figure_files(name)]
    figures += [
        path
        for experiment in config["figures"]["trajectories"]["experiments"]
        for path in figure_files(f"trajectories_{experiment}")
    ]
    return [f"{RESULTS}/summary/runs.csv", *tables, *theory, *figures]


# -- figures --------------------------------------------------------------------------------------------
FIGURE_CODE = os.path.join(workflow.basedir, "src", "grokslt", "figures")
FIGURE_CONFIG = config["figures"]
DPI = FIGURE_CONFIG["dpi"]


def figure_report(name, caption):
    png = f"{RESULTS}/figures/{name}.png"
    return [report(png, caption=f"../report/{caption}.rst", category="Figures"), f"{RESULTS}/figures/{name}.pdf"]


def figure_prefix(wildcards, output):
    """The figure's output path without suffix: the CLI writes PREFIX.pdf and PREFIX.png."""
    return os.path.splitext(output[0])[0]


def diagnostics_run():
    return MEMBERSHIP[FIGURE_CONFIG["diagnostics"]["experiment"]][0]


def report_diverged_runs():
    """After a successful workflow, name the runs whose training diverged (the summary marks them)."""
    import csv

    summary = f"{RESULTS}/summary/runs.csv"
    if not os.path.exists(summary):
        return
    with open(summary) as handle:
        diverged = [row["run"] for row in csv.DictReader(handle) if row["status"] == "diverged"]
    if diverged:
        print(
            f"grokslt: training diverged in {len(diverged)} run(s), marked in {summary} and the figures: "
            + ", ".join(diverged),
            file=sys.stderr,
        )

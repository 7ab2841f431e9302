# Config check, run expansion, wildcard constraints and input functions shared by every stage. The
# flags each rule passes come from the settings classes, the figures from the figure registry.
import os
import re
import shlex
import sys
from pathlib import Path

from grokslt.training.data import DatasetSettings
from grokslt.workflow.experiments import dataset_id
from grokslt.figures import OPTIONAL, READS, experiment_settings, instances
from grokslt.analysis.hessian import HessianSettings
from grokslt.estimation.samplers import SamplerSettings
from grokslt.settings import fields, mapping_to_arguments, to_arguments
from grokslt.training.runs import chunk_names, estimated_steps, logged_checkpoints
from grokslt.workflow.config import ConfigError, check_workflow
from grokslt.workflow.experiments import LLC_CHOICE_KEYS
from snakemake.logging import logger

# Every config mistake, one line each, before any job: keys given twice in a config file, the schema,
# each experiment's runs, the experiments that figures and studies name. A figure or study whose
# experiment is absent by default only (a config of one experiment) is left out with a line.
try:
    CHECKED = check_workflow(config, workflow.configfiles)
except ValueError as error:
    detail = f"\n{error.detail}" if isinstance(error, ConfigError) and "--verbose" in sys.argv else ""
    raise WorkflowError("\n".join(f"config: {line}" for line in str(error).splitlines()) + detail) from None
config.update(CHECKED.config)
RUNS, MEMBERSHIP, RUN_LLC = CHECKED.runs, CHECKED.membership, CHECKED.run_llc
if workflow.is_main_process:
    for line in CHECKED.skipped:
        logger.warning(f"config: {line}")
# The workflow's own files, found from this one: `workflow.basedir` is the directory of the Snakefile that
# includes this workflow as a module.
WORKFLOW_ROOT = os.path.normpath(os.path.join(workflow.current_basedir, "..", ".."))

# Rules call the `grokslt` command line. Where Snakemake was started without activating its environment
# (`.venv/bin/snakemake ...`), the command is found beside Snakemake's own interpreter; an activated or
# conda environment earlier on PATH takes precedence.
shell.prefix(f'set -euo pipefail; export PATH="$PATH":{shlex.quote(os.path.dirname(sys.executable))}; ')

RESULTS = config["results"]
THREADS = config["threads"]
GPUS = 1 if config["gpu"] else 0
DEVICE = "cuda" if config["gpu"] else "cpu"
ENV = "../../envs/grokslt.yaml"
FIGURE_CODE = os.path.join(WORKFLOW_ROOT, "src", "grokslt", "figures")
FIGURES = instances(config["figures"])
CERTIFIED_RUNS = list(dict.fromkeys(run for name in config["certified"]["experiments"] for run in MEMBERSHIP[name]))
CERTIFIED_RUNS = [run for run in CERTIFIED_RUNS if run in RUNS]
REFINED_RUNS = list(dict.fromkeys(run for name in config["refined"]["experiments"] for run in MEMBERSHIP[name]))
REFINED_RUNS = [run for run in REFINED_RUNS if run in RUNS]
DATASETS = {dataset_id(train): train for train in RUNS.values()}
REFERENCE = os.path.join(WORKFLOW_ROOT, "reference", "SHA256SUMS")


wildcard_constraints:
    run="[A-Za-z0-9_.+-]+",
    dataset="[A-Za-z0-9_.+-]+",
    i=r"\d+",
    n=r"\d+",
    figure="|".join(map(re.escape, FIGURES)),
    selection="|".join(map(re.escape, ["runs", *FIGURES])),
    kind=r"all|weights_[A-Za-z0-9_-]+|data_[A-Za-z0-9_-]+",


def run_dir(run):
    return f"{RESULTS}/runs/{run}"


def log_file(stage, name):
    return f"{RESULTS}/logs/{stage}/{name}.log"


def benchmark_file(stage, name):
    return f"{RESULTS}/benchmarks/{stage}/{name}.tsv"


# -- command arguments: every setting, so that a changed setting reruns the job ----------------------------
DATASET_KEYS = [f.name for f in fields(DatasetSettings)]


def dataset_args(wildcards):
    return to_arguments(DATASETS[wildcards.dataset], only=DATASET_KEYS)


def train_args(wildcards):
    return to_arguments(RUNS[wildcards.run])


def llc_args(run):
    """The sampler flags of a run's experiment (its `llc:` over the global one)."""
    block = RUN_LLC[run]
    overrides = {key: value for key, value in block.items() if key not in LLC_CHOICE_KEYS}
    job = ["--preset", block["preset"], "--backend", block["backend"], "--seed", str(block["seed"])]
    job += ["--every", str(block["every"])] if block["every"] > 1 else []
    if block["preset"] == "calibrated":
        job += ["--calibration", calibration_file("json")]
    return [*job, *mapping_to_arguments(SamplerSettings, overrides)]


def calibration_input(run):
    """The calibration an LLC job reads (for `preset: calibrated`): a new grid reruns it, not training."""
    return [calibration_file("json")] if RUN_LLC[run]["preset"] == "calibrated" else []


def calibration_args():
    section = config["calibration"]
    grid = {key: ",".join(map(repr, map(float, section[key]))) for key in ("step_sizes", "nbetas", "localizations")}
    words = ["--step", str(section["step"]), "--preset", section["preset"], "--seed", str(section["seed"])]
    words += ["--step-sizes", grid["step_sizes"], "--nbetas", grid["nbetas"], "--localizations", grid["localizations"]]
    overrides = {key: section[key] for key in ("sampler", "num_chains", "num_burnin", "num_draws") if key in section}
    # Only an LLC trajectory at `preset: calibrated` needs a choice; the certified estimates are empty without one.
    needed = any(block["preset"] == "calibrated" for block in RUN_LLC.values())
    return [*words, *mapping_to_arguments(SamplerSettings, overrides), *([] if needed else ["--report-only"])]


def hessian_args():
    hessian = config["hessian"]
    overrides = {key: value for key, value in hessian.items() if key not in ("preset", "seed", "chunk_size")}
    job = ["--preset", hessian["preset"], "--seed", str(hessian["seed"])]
    return [*job, *mapping_to_arguments(HessianSettings, overrides)]


# -- checkpoints and tables of runs ------------------------------------------------------------------------
def checkpoint_count(run, stage):
    """Checkpoints a stage estimates on a trained run (one per logged evaluation but a diverged one, the LLC's
    thinned by its `every`); known once its training has finished."""
    log = Path(checkpoints.train.get(run=run).output.log)
    if stage == "llc":
        return len(estimated_steps(log, RUN_LLC[run]["every"]))
    return len(logged_checkpoints(log))


def chunk_files(run, stage, suffix=".csv"):
    names = chunk_names(checkpoint_count(run, stage), config[stage]["chunk_size"])
    return [f"{run_dir(run)}/{stage}/{name}{suffix}" for name in names]


def experiment_runs(names):
    return list(dict.fromkeys(run for name in names for run in MEMBERSHIP[name]))


# -- refined estimates: one LLC table per weight group or data subset, per-pair traces, WAIC ---------------
def refined_kinds():
    """{file name: grokslt llc flags} of the refined estimates: all weights on the training loss, each weight
    group alone, all weights on each data subset."""
    section = config["refined"]
    kinds = {"all": []}
    kinds |= {f"weights_{g.replace(':', '-')}": ["--weights", g] for g in section["weights"]}
    kinds |= {f"data_{d.replace(':', '-')}": ["--data", d] for d in section["data"] if d != "train"}
    return kinds


def refined_args(kind):
    """`grokslt llc` flags of one refined table; `traced`: all weights at the decisive checkpoints."""
    section = config["refined"]
    words = ["--preset", section["preset"], "--seed", str(section["seed"])]
    words += ["--num-draws", str(section["num_draws"])] if "num_draws" in section else []
    if kind == "traced":
        return [*words, "--steps", "transitions"]
    return [*words, "--every", str(section["every"]), *refined_kinds()[kind]]


def refined_parts(wildcards):
    return [f"{run_dir(wildcards.run)}/refined/{kind}.csv" for kind in refined_kinds()]


def refined_targets():
    tables = [f"{run_dir(run)}/refined.csv" for run in REFINED_RUNS]
    if config["refined"]["traces"]:
        tables += [f"{run_dir(run)}/waic.csv" for run in REFINED_RUNS]
    return tables


def sensitivity_run():
    return MEMBERSHIP[config["sampler_sensitivity"]["experiment"]][0]


def calibration_run():
    return MEMBERSHIP[config["calibration"]["experiment"]][0]


def calibration_file(suffix):
    return f"{RESULTS}/calibration/{config['calibration']['experiment']}/calibration.{suffix}"


# -- figures: one rule, its inputs and flags from the figure registry -------------------------------------
def summary_runs(wildcards):
    """The runs a summary covers: every run (`summary/runs.csv`) or those of one figure's experiments
    (`summary/FIGURE.csv`), so that a figure's target builds only what that figure shows."""
    if wildcards.selection == "runs":
        return sorted(RUNS)
    return sorted(experiment_runs(experiment_settings(FIGURES[wildcards.selection][1])))


def summary_membership(wildcards):
    """`name=run,run` for every experiment, restricted to the summary's runs."""
    chosen = set(summary_runs(wildcards))
    members = {name: [run for run in runs if run in chosen] for name, runs in MEMBERSHIP.items()}
    return [f"{name}={','.join(runs)}" for name, runs in members.items() if runs]


def figure_tables(name, kind):
    """The files of one kind that the figure `name` reads."""
    figure, settings = FIGURES[name]
    first_run = lambda: experiment_runs([settings["experiment"]])[0]  # noqa: E731
    if kind == "summary":
        return [f"{RESULTS}/summary/{name}.csv"]
    if kind == "loss_data":
        if figure.one_run:
            return [f"{run_dir(first_run())}/loss_data.csv"]
        return [f"{run_dir(run)}/loss_data.csv" for run in experiment_runs(experiment_settings(settings))]
    if kind == "params":
        return [f"{run_dir(first_run())}/params.csv"]
    if kind == "traces":
        return chunk_files(first_run(), "llc", ".npz")
    if kind == "rank_checks":
        return [f"{RESULTS}/theory/rank_checks.csv"]
    if kind == "sensitivity":
        return [f"{RESULTS}/sensitivity/sensitivity.csv"]
    if kind == "calibration":
        return [calibration_file("csv")]
    if kind == "accuracy":
        return [f"{RESULTS}/accuracy/accuracy.csv"]
    if kind == "scorecard":
        return [f"{RESULTS}/scorecard/scorecard.csv"]
    if kind == "reference":
        return [] if config["reference"] == "none" else [REFERENCE]
    if kind == "certified":
        runs = experiment_runs(experiment_settings(settings))
        return [f"{run_dir(run)}/certified.csv" for run in runs if run in CERTIFIED_RUNS]
    if kind in ("refined", "waic"):
        return [f"{run_dir(first_run())}/{kind}.csv"]
    if kind == "pair_traces":
        return [f"{run_dir(first_run())}/traces"]
    raise ValueError(f"figure input {kind!r}: unknown")


def figure_inputs(wildcards):
    figure, _ = FIGURES[wildcards.figure]
    files = {kind: figure_tables(wildcards.figure, kind) for kind in figure.reads}
    shared = [f"{FIGURE_CODE}/{name}.py" for name in ("style", "inputs")]
    return files | {"code": [f"{FIGURE_CODE}/{figure.module}.py", *shared]}


def figure_args(wildcards, input):
    """`grokslt figure` arguments: the figure, its tables by kind, and its settings."""
    figure, settings = FIGURES[wildcards.figure]
    words = [figure.name]
    for kind in figure.reads:  # (before a run's training ends, Snakemake may ask with the inputs unknown)
        files = getattr(input, kind, [])
        if files or kind not in OPTIONAL:
            words += [READS[kind][0], *files]
    for key, value in settings.items():
        if value is not None:
            flag = f"--{key.replace('_', '-')}"
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return words


def figure_caption(wildcards):
    with open(os.path.join(WORKFLOW_ROOT, "workflow", "report", f"{FIGURES[wildcards.figure][0].name}.rst")) as f:
        return f.read()


def figure_labels(wildcards):
    figure, settings = FIGURES[wildcards.figure]
    return {"figure": wildcards.figure, "experiment": ", ".join(experiment_settings(settings)) or "-"}


def figure_prefix(wildcards, output):
    """The figure's output path without suffix: the CLI writes PREFIX.pdf and PREFIX.png."""
    return os.path.splitext(output[0])[0]


def figure_files(name):
    return [f"{RESULTS}/figures/{name}.pdf", f"{RESULTS}/figures/{name}.png"]


def all_targets(wildcards):
    tables = [f"{run_dir(run)}/{name}.csv" for run in RUNS for name in ("params", "loss_data")]
    theory = [f"{RESULTS}/theory/{name}.csv" for name in ("formulas", "rank_checks", "single_output")]
    figures = [path for name in FIGURES for path in figure_files(name)]
    studies = [f"{RESULTS}/{name}.csv" for name in ("claims/claims", "scorecard/scorecard")]
    return [f"{RESULTS}/summary/runs.csv", *studies, *tables, *theory, *figures, *refined_targets()]


def accuracy_args():
    import json

    section = config["estimator_accuracy"]
    reference = section["reference"]
    words = [
        "--nbetas",
        ",".join(map(repr, map(float, section["nbetas"]))),
        "--localization",
        repr(section["localization"]),
    ]
    words += ["--methods", json.dumps(section["methods"], sort_keys=True), "--repeats", str(section["repeats"])]
    words += ["--reference-chains", str(reference["chains"]), "--reference-burnin", str(reference["burnin"])]
    return [*words, "--reference-draws", str(reference["draws"])]


def certify_args():
    """The certified estimates at a subset of checkpoints: the calibration's choice (empty when it chose
    nothing) or a named preset."""
    section = config["certified"]
    words = ["--preset", section["preset"], "--seed", str(section["seed"]), "--every", str(section["every"])]
    if section["preset"] == "calibrated":
        words += ["--calibration", calibration_file("json"), "--if-chosen"]
    words += ["--num-draws", str(section["num_draws"])] if "num_draws" in section else []
    return [*words, *(["--retry-draws", str(section["retry_draws"])] if "retry_draws" in section else [])]


def certify_calibration(wildcards):
    return [calibration_file("json")] if config["certified"]["preset"] == "calibrated" else []


def claims_inputs(wildcards):
    sensitivity = config["sampler_sensitivity"]["experiment"]  # null: the study is not run
    return {
        "summary": f"{RESULTS}/summary/runs.csv",
        "loss": [f"{run_dir(run)}/loss_data.csv" for run in sorted(RUNS)],
        "certified": [f"{run_dir(run)}/certified.csv" for run in CERTIFIED_RUNS],
        "sensitivity": [f"{RESULTS}/sensitivity/sensitivity.csv"] if sensitivity else [],
        "waic": [f"{run_dir(run)}/waic.csv" for run in REFINED_RUNS] if config["refined"]["traces"] else [],
        "traced": [f"{run_dir(run)}/refined/traced.csv" for run in REFINED_RUNS] if config["refined"]["traces"] else [],
    }


def report_diverged_runs():
    """After a successful workflow, name the runs whose training diverged (the summary marks them)."""
    import csv

    summary = f"{RESULTS}/summary/runs.csv"
    if not os.path.exists(summary):
        return
    with open(summary) as handle:
        diverged = [row["run"] for row in csv.DictReader(handle) if row["status"] == "diverged"]
    if diverged:
        names = ", ".join(diverged)
        print(f"grokslt: training diverged in {len(diverged)} run(s), marked in {summary}: {names}", file=sys.stderr)

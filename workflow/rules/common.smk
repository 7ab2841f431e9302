# Config check, run expansion, wildcard constraints and input functions shared by every stage. The
# flags each rule passes come from grokslt.workflow.commands (the settings classes, the figure registry).
import os
import re
import shlex
import sys
from pathlib import Path

from grokslt.analysis.summary import membership_words
from grokslt.figures import experiment_settings, instances
from grokslt.settings import to_arguments
from grokslt.training.runs import chunk_names, estimated_steps
from grokslt.workflow import commands
from grokslt.workflow.studies import STUDIES
from grokslt.workflow.config import ConfigError, check_workflow
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
REFERENCE = os.path.join(WORKFLOW_ROOT, "reference", "SHA256SUMS")
LAYOUT = commands.Layout.of(CHECKED, REFERENCE)
CERTIFIED_RUNS = LAYOUT.study_runs("certified")
REFINED_RUNS = LAYOUT.study_runs("refined")


wildcard_constraints:
    run="[A-Za-z0-9_.+-]+",
    i=r"\d+",
    n=r"\d+",
    figure="|".join(map(re.escape, FIGURES)),
    kind=r"all|weights_[A-Za-z0-9_-]+|data_[A-Za-z0-9_-]+",


# A run is trained, estimated and tabled by a job per stage, or by one job (`run_jobs: whole`): each rule's `run`
# wildcard matches its own runs only.
def one_of(names):
    return "|".join(map(re.escape, names)) or "(?!)"  # (?!): no run


STAGED_RUNS = one_of(LAYOUT.staged_runs())
WHOLE_RUNS = one_of(LAYOUT.whole_runs)
run_dir = LAYOUT.run_dir
experiment_runs = LAYOUT.experiment_runs
calibration_file = LAYOUT.calibration_file


def log_file(stage, name):
    return f"{RESULTS}/logs/{stage}/{name}.log"


def benchmark_file(stage, name):
    return f"{RESULTS}/benchmarks/{stage}/{name}.tsv"


# -- command arguments: every setting, so that a changed setting reruns the job ----------------------------
def train_args(wildcards):
    return to_arguments(RUNS[wildcards.run])


# -- checkpoints and tables of runs ------------------------------------------------------------------------
def llc_chunks(run, suffix=".csv"):
    """A run's LLC chunk files: its estimated checkpoints (the trajectory thinned by its `every`) in blocks of
    `llc.chunk_size`; known once its training has finished, or before for a run trained in one job with them."""
    if run in LAYOUT.whole_runs:
        return [f"{run_dir(run)}/llc/chunk0of1{suffix}"]
    log = Path(checkpoints.train.get(run=run).output.log)
    names = chunk_names(len(estimated_steps(log, RUN_LLC[run]["every"])), config["llc"]["chunk_size"])
    return [f"{run_dir(run)}/llc/{name}{suffix}" for name in names]


def llc_traces(run):
    return llc_chunks(run, ".npz")


# -- refined estimates: one LLC table per weight group or data subset, per-pair traces, WAIC ---------------
def refined_parts(wildcards):
    return [f"{run_dir(wildcards.run)}/refined/{kind}.csv" for kind in LAYOUT.refined_kinds()]


def refined_targets():
    tables = [f"{run_dir(run)}/refined.csv" for run in REFINED_RUNS]
    if config["refined"]["traces"]:
        tables += [f"{run_dir(run)}/waic.csv" for run in REFINED_RUNS]
    return tables


# -- the studies (grokslt.workflow.studies): one rule each, its inputs and flags from its registry entry ------
def study_inputs(study):
    return lambda wildcards: LAYOUT.study_inputs(study, getattr(wildcards, "run", None))


def study_args(study):
    return lambda wildcards: LAYOUT.study_args(study, getattr(wildcards, "run", None))


def study_out(study):
    """`--out`: the table, or the directory it and the files beside it are written to."""
    return lambda wildcards, output: os.path.dirname(output.table) if study.out_dir else output.table


def study_log(study, files):
    return files(study.table, "{run}" if study.per_run else study.table)


# -- figures: one rule, its inputs and flags from the figure registry -------------------------------------
def figure_inputs(wildcards):
    figure, settings = FIGURES[wildcards.figure]
    files = {kind: LAYOUT.figure_tables(wildcards.figure, figure, settings, kind, llc_traces) for kind in figure.reads}
    shared = [f"{FIGURE_CODE}/{name}.py" for name in ("style", "inputs")]
    return files | {"code": [f"{FIGURE_CODE}/{figure.module}.py", *shared]}


def figure_args(wildcards, input):
    figure, settings = FIGURES[wildcards.figure]
    files = {kind: getattr(input, kind, []) for kind in figure.reads}
    membership = LAYOUT.membership_of(experiment_runs(experiment_settings(settings)))
    return commands.figure_args(figure, settings, files, membership)


def figure_caption(wildcards):
    with open(os.path.join(WORKFLOW_ROOT, "workflow", "report", f"{FIGURES[wildcards.figure][0].name}.rst")) as f:
        return f.read()


def figure_labels(wildcards):
    figure, settings = FIGURES[wildcards.figure]
    return {"figure": wildcards.figure, "experiment": ", ".join(experiment_settings(settings)) or "-"}


def figure_prefix(wildcards, output):
    return commands.figure_prefix(output[0])


def figure_files(name):
    return [f"{RESULTS}/figures/{name}.pdf", f"{RESULTS}/figures/{name}.png"]


def all_targets(wildcards):
    tables = [f"{run_dir(run)}/{name}.csv" for run in RUNS for name in ("params", "loss_data")]
    theory = [f"{RESULTS}/theory/{name}.csv" for name in ("formulas", "rank_checks", "single_output")]
    figures = [path for name in FIGURES for path in figure_files(name)]
    studies = [f"{RESULTS}/{name}.csv" for name in ("claims/claims", "scorecard/scorecard")]
    studies += [table for study in STUDIES.values() for table in LAYOUT.study_tables(study)]
    return [f"{RESULTS}/summary/runs.csv", *studies, *tables, *theory, *figures, *refined_targets()]


def certify_calibration(wildcards):
    return [calibration_file("json")] if config["certified"]["preset"] == "calibrated" else []


def claims_inputs(wildcards):
    return {
        "summary": f"{RESULTS}/summary/runs.csv",
        "loss": [f"{run_dir(run)}/loss_data.csv" for run in sorted(RUNS)],
        "certified": [f"{run_dir(run)}/certified.csv" for run in CERTIFIED_RUNS],
        "coefficient": LAYOUT.study_tables(STUDIES["coefficient"]),  # none where the study is not run
        "sensitivity": LAYOUT.study_tables(STUDIES["sampler_sensitivity"]),
        "waic": [f"{run_dir(run)}/waic.csv" for run in REFINED_RUNS] if config["refined"]["traces"] else [],
        "traced": [f"{run_dir(run)}/refined/traced.csv" for run in REFINED_RUNS] if config["refined"]["traces"] else [],
    }

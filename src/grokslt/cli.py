"""Command line: `grokslt <command> ...`. Parses arguments and calls the library, nothing more.

The flags of every setting come from the settings dataclasses (`grokslt.settings`), those of the
figures from the figure registry (`grokslt.figures.FIGURES`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from grokslt import __version__, runtime, settings
from grokslt.errors import ComputationFailed, describe_os_error


class Command(NamedTuple):
    run: Callable[[argparse.Namespace], None]
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    tensors: bool  # whether it computes with torch (else it starts without importing it)


COMMANDS: dict[str, Command] = {}
DESCRIPTION = """\
Reproduce "A Basin-Selection Perspective on Grokking via Singular Learning Theory", one command
per stage. The Snakemake workflow runs them all: snakemake --cores 2 --configfile config/quick.yaml"""
EXAMPLES = """\
Examples:
  grokslt train --p 23 --hidden 128 --lr 3e-3 --weight-decay 1e-4 --batch-size 64 \\
      --max-steps 5000 --eval-every 50 --out runs/baseline
  grokslt llc --run runs/baseline --preset paper_code --out llc.csv --traces llc.npz
  grokslt hessian --run runs/baseline --preset paper_code --out hessian.csv
  grokslt figure fig2 --summary results/quick/summary/runs.csv \\
      --loss-data results/quick/runs/*/loss_data.csv --experiment baseline --out fig2
  grokslt plan --configfile config/quick.yaml --cores 2
  grokslt llc --run runs/baseline --out llc.csv --then hessian --run runs/baseline --out hessian.csv
                                      (--then: several commands in one process, one torch start)
  grokslt llc --help                  every flag of one command

The columns of every table: docs/columns.md.
"""


def command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None], tensors: bool = True):
    """Register `fn` as `grokslt NAME`; `tensors=False` for a command that reads and writes tables only, which then
    starts without torch."""

    def register(fn):
        COMMANDS[name] = Command(fn, help, arguments, tensors)
        return fn

    return register


def add_process_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one per process is fastest here)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an expected failure")


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run directory written by `grokslt train`")
    parser.add_argument(
        "--steps",
        help="comma-separated checkpoint steps, transitions (memorisation, val 50%%, val 95%%, the LLC peak where "
        "loss_data.csv has it, the last) or final (the last); default: all",
    )
    parser.add_argument("--chunk", help="i/n: the i-th of n contiguous blocks of checkpoints (0-based)")
    parser.add_argument("--out", required=True, help="output CSV, one row per checkpoint")


def add_llc_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.estimation.checkpoint_llc import BACKENDS
    from grokslt.estimation.llc import PRESETS
    from grokslt.estimation.samplers import SamplerSettings

    parser.add_argument("--preset", default="paper_code", help=" | ".join([*PRESETS, "calibrated"]))
    parser.add_argument("--calibration", help="calibration.json of `grokslt calibrate` (for --preset calibrated)")
    parser.add_argument("--backend", default="native", help=" | ".join(BACKENDS))
    parser.add_argument("--seed", type=int, default=0, help="chains at step s are seeded by (seed, s)")
    settings.add_arguments(parser.add_argument_group("overrides of the preset"), SamplerSettings, defaults=False)


def sampler_overrides(args: argparse.Namespace) -> dict:
    from grokslt.estimation.samplers import SamplerSettings

    return settings.overrides_from_arguments(SamplerSettings, args)


def no_choice(args: argparse.Namespace) -> bool:
    """With --if-chosen: when the calibration chose no settings, write an empty table, say so and return True."""

    from grokslt.artefacts import seal
    from grokslt.estimation.calibration import read_calibration
    from grokslt.estimation.llc import result_columns
    from grokslt.estimation.samplers import SamplerSettings
    from grokslt.io import write_csv
    from grokslt.training.runs import load_run

    if args.preset != "calibrated" or not args.calibration or not Path(args.calibration).exists():
        return False
    report = read_calibration(args.calibration)
    if report.get("chosen") is not None:
        return False
    digest = write_csv(args.out, [], ["step", *result_columns(SamplerSettings())])
    seal(args.out, digest, "grokslt llc --if-chosen", load_run(args.run).identity)
    print(f"grokslt llc: warning: {args.calibration}: {report.get('verdict')}; wrote an empty table", file=sys.stderr)
    return True


def sampler_preset(args: argparse.Namespace):
    """The preset's name, or for `calibrated` the settings its calibration chose."""
    if args.preset != "calibrated":
        if args.calibration:
            raise ValueError(f"--calibration {args.calibration}: only with --preset calibrated")
        return args.preset
    from grokslt.estimation.calibration import calibrated_settings

    if not args.calibration:
        raise ValueError("--preset calibrated: give the calibration's result with --calibration FILE")
    return calibrated_settings(args.calibration)


def train_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.training.train import TrainConfig

    settings.add_arguments(parser, TrainConfig)
    parser.add_argument("--dataset", help="a split written by `grokslt dataset` (default: made from the settings)")
    parser.add_argument("--out", required=True, help="run directory")


@command("train", "train one network, writing checkpoints and train_log.csv", train_arguments)
def run_train(args: argparse.Namespace) -> None:
    from grokslt.training.train import TrainConfig, train

    config = settings.from_arguments(TrainConfig, args)
    settings.check_fields(config)
    data = None
    if args.dataset:
        from grokslt.training.data import load_dataset

        data = load_dataset(args.dataset)
    trainer = train(config, args.out, data=data)
    last, outcome = trainer.rows[-1], trainer.outcome()
    print(
        f"{args.out}: {outcome['status'].replace('_', ' ')} at step {trainer.step}, train acc {last['train_acc']:.4f}, "
        f"val acc {last['val_acc']:.4f}"
    )


def dataset_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.training.data import DatasetSettings

    settings.add_arguments(parser, DatasetSettings)
    parser.add_argument("--out", required=True, help="output .npz")


@command("dataset", "write the train/validation split of Z_p x Z_p", dataset_arguments)
def run_dataset(args: argparse.Namespace) -> None:
    from grokslt.training.data import DatasetSettings, save_dataset

    dataset = settings.from_arguments(DatasetSettings, args)
    settings.check_fields(dataset)
    save_dataset(dataset.dataset(), args.out)


def llc_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.estimation.laplace import LaplaceSettings

    add_selection_arguments(parser)
    add_llc_arguments(parser)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--stack", type=int, default=1, help="checkpoints per batched computation (GPU)")
    parser.add_argument("--traces", help="also save the loss traces [checkpoints, chains, draws] (.npz)")
    parser.add_argument(
        "--pair-traces",
        metavar="DIR",
        help="also save each checkpoint's per-pair loss traces (train and val pairs) as DIR/step<STEP:06d>.nc",
    )
    parser.add_argument("--every", type=int, help="every k-th checkpoint, the last and those at the transitions")
    parser.add_argument("--retry-draws", type=int, metavar="DRAWS",
                        help="estimate again, with DRAWS draws per chain, each that did not converge")  # fmt: skip
    parser.add_argument("--first-try", metavar="TABLE",
                        help="with --retry-draws: the first tries, written by this command without it")  # fmt: skip
    parser.add_argument("--if-chosen", action="store_true",
                        help="with --preset calibrated: an empty table when the calibration chose nothing")  # fmt: skip
    settings.add_arguments(parser.add_argument_group("the Laplace estimand beside each estimate"), LaplaceSettings)


@command("llc", "estimate the LLC at checkpoints of a run", llc_arguments)
def run_llc(args: argparse.Namespace) -> None:
    from grokslt.estimation.checkpoint_llc import Checkpoints, Retry, Sampling, Saved, write_llc_table
    from grokslt.estimation.laplace import LaplaceSettings

    runtime.checked_device(args.device)
    if args.if_chosen and no_choice(args):
        return
    write_llc_table(
        args.run,
        args.out,
        Sampling(sampler_preset(args), sampler_overrides(args), args.backend, args.seed, label=args.preset),
        Checkpoints(args.steps, args.chunk, args.every),
        Saved(args.traces, args.pair_traces),
        Retry(args.retry_draws, args.first_try),
        device=args.device,
        stack=args.stack,
        laplace=settings.from_arguments(LaplaceSettings, args),
    )


def hessian_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.analysis.hessian import PRESETS as HESSIAN_PRESETS
    from grokslt.analysis.hessian import HessianSettings

    add_selection_arguments(parser)
    parser.add_argument("--preset", default="paper_code", help=" | ".join(HESSIAN_PRESETS))
    settings.add_arguments(parser.add_argument_group("overrides of the preset"), HessianSettings, defaults=False)
    parser.add_argument("--seed", type=int, default=0)


@command("hessian", "Hutchinson (and exact) Hessian trace of L_n at checkpoints of a run", hessian_arguments)
def run_hessian(args: argparse.Namespace) -> None:
    from grokslt.analysis.hessian import HessianSettings, write_hessian_table

    overrides = settings.overrides_from_arguments(HessianSettings, args)
    write_hessian_table(args.run, args.out, args.preset, overrides, args.steps, args.chunk, args.seed)


def coefficient_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument("--every", type=int, help="every k-th checkpoint, the last and those at the transitions")
    parser.add_argument("--probes", type=int, default=4, help="Rademacher probes of the Lanczos quadrature")
    parser.add_argument("--lanczos-steps", type=int, default=100, help="Lanczos steps per probe")
    parser.add_argument("--seed", type=int, default=0)


@command(
    "coefficient",
    "the data-rank learning coefficient at interpolating checkpoints beside lambda_Q and tr(H) / 2",
    coefficient_arguments,
)
def run_coefficient(args: argparse.Namespace) -> None:
    from grokslt.analysis.coefficient import write_coefficient_table

    write_coefficient_table(args.run, args.out, args.steps, args.chunk, args.every, args.probes, args.lanczos_steps,
                            args.seed)  # fmt: skip


def theory_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output directory (tables) or CSV (with --run)")
    parser.add_argument("--run", help="a run directory: parser at its checkpoints")
    parser.add_argument("--steps")
    parser.add_argument("--chunk")
    parser.add_argument("--mass", type=float, default=0.99, help="atom-norm mass that defines K_eff")
    parser.add_argument("--atom-rank-max", type=int, default=0, help="rank Phi_p's Jacobian when K_eff <= this")
    parser.add_argument("--sizes", default="53:1024", help="p:K pairs for the closed-form table")
    parser.add_argument("--grid-p", default="3,5,7", help="p values of the numerical rank checks")
    parser.add_argument("--grid-K", default="1,2,3,5,8,12,20,40,80")
    parser.add_argument("--single-d", default="2,3,4,6")
    parser.add_argument("--single-K", default="1,2,3,4,6,8")
    parser.add_argument("--seed", type=int, default=0)


@command("theory", "closed-form LLCs and their numerical checks, or theory at a run's checkpoints", theory_arguments)
def run_theory(args: argparse.Namespace) -> None:
    from grokslt.analysis import theory

    if args.run:
        theory.write_checkpoint_theory(args.run, args.out, args.steps, args.chunk, args.mass, args.atom_rank_max)
        return
    sizes = [parse_pair(text) for text in args.sizes.split(",") if text]
    theory.write_theory_tables(
        args.out,
        sizes,
        parse_ints(args.grid_p),
        parse_ints(args.grid_K),
        parse_ints(args.single_d),
        parse_ints(args.single_K),
        args.seed,
    )


def parse_ints(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise ValueError(f"{text!r}: expected comma-separated integers") from None


def parse_floats(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part]
    except ValueError:
        raise ValueError(f"{text!r}: expected comma-separated numbers") from None


def parse_pair(text: str) -> tuple[int, int]:
    try:
        p, K = (int(part) for part in text.split(":"))
    except ValueError:
        raise ValueError(f"--sizes {text!r}: expected p:K pairs like 53:1024") from None
    return p, K


def sensitivity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True)
    parser.add_argument("--step", default="final", help="checkpoint step, or final")
    parser.add_argument("--step-sizes", required=True, help="comma-separated SGLD step sizes")
    parser.add_argument("--localizations", required=True, help="comma-separated localizations gamma")
    parser.add_argument("--out", required=True)
    add_llc_arguments(parser)


@command("sensitivity", "the LLC at one checkpoint over a grid of SGLD step size x localization", sensitivity_arguments)
def run_sensitivity(args: argparse.Namespace) -> None:
    from grokslt.estimation.checkpoint_llc import write_sensitivity_table

    write_sensitivity_table(
        args.run,
        args.out,
        args.step,
        parse_floats(args.step_sizes),
        parse_floats(args.localizations),
        sampler_preset(args),
        args.backend,
        args.seed,
        sampler_overrides(args),
        args.preset,
    )


def calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True)
    parser.add_argument(
        "--step", default="transitions", help="transitions (memorisation, val 50%%, val 95%%, last), final, or steps"
    )
    parser.add_argument("--step-sizes", required=True, help="comma-separated step sizes")
    parser.add_argument("--nbetas", required=True, help="comma-separated nbeta")
    parser.add_argument("--localizations", required=True, help="comma-separated localizations gamma")
    parser.add_argument("--out", required=True, help="directory for calibration.csv and calibration.json")
    parser.add_argument("--report-only", action="store_true", help="exit 0 when nothing qualifies (no choice made)")
    add_llc_arguments(parser)


@command(
    "calibrate",
    "estimate a grid of sampler settings at one checkpoint and choose by the documented rule",
    calibrate_arguments,
)
def run_calibrate(args: argparse.Namespace) -> None:
    from grokslt.estimation.calibration import calibrate
    from grokslt.estimation.llc import sampler_settings

    base = sampler_settings(sampler_preset(args), **sampler_overrides(args))
    report = calibrate(
        args.run, args.out, args.step, base, parse_floats(args.step_sizes), parse_floats(args.nbetas),
        parse_floats(args.localizations), args.seed, args.backend, args.preset, args.report_only,
    )  # fmt: skip
    chosen = report["chosen"]
    if chosen is None:  # only with --report-only: nothing qualified, and nothing depends on a choice
        print(f"grokslt calibrate: warning: {report['verdict']}", file=sys.stderr)
        return
    print(f"chosen: step {chosen['step_size']:g}, nbeta {chosen['nbeta']:g}, gamma {chosen['localization']:g}")


def tables_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.analysis.hessian import PRESETS as HESSIAN_PRESETS
    from grokslt.analysis.hessian import HessianSettings

    parser.add_argument("--id", required=True, help="run id")
    parser.add_argument("--run", required=True)
    parser.add_argument("--llc", nargs="+", required=True, help="LLC chunk CSVs")
    parser.add_argument("--llc-every", type=int, default=1, help="the LLC trajectory's thinning (llc: every)")
    parser.add_argument("--hessian-preset", default="paper_code", help=" | ".join(HESSIAN_PRESETS))
    parser.add_argument("--hessian-seed", type=int, default=0, help="seed of the Hutchinson probes")
    settings.add_arguments(
        parser.add_argument_group("overrides of the Hessian preset"), HessianSettings, defaults=False
    )
    parser.add_argument("--mass", type=float, default=0.99, help="atom-norm mass that defines K_eff")
    parser.add_argument("--atom-rank-max", type=int, default=0, help="rank Phi_p's Jacobian when K_eff <= this")
    parser.add_argument("--params-out", required=True)
    parser.add_argument("--loss-out", required=True)


@command(
    "tables",
    "the Hessian trace and the closed forms at each checkpoint of a run, joined with its log and LLC tables into "
    "params.csv and loss_data.csv, and the run's summary row (summary.csv beside params.csv)",
    tables_arguments,
)
def run_tables(args: argparse.Namespace) -> None:
    from grokslt.analysis.hessian import HessianSettings
    from grokslt.workflow.tables import PerCheckpoint, write_run_tables

    computed = PerCheckpoint(
        args.hessian_preset,
        settings.overrides_from_arguments(HessianSettings, args),
        args.hessian_seed,
        args.mass,
        args.atom_rank_max,
    )
    write_run_tables(args.id, args.run, args.llc, args.params_out, args.loss_out, args.llc_every, computed)


def refined_table_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parts", nargs="+", required=True, help="LLC tables of one run, one per group or subset")
    parser.add_argument("--out", required=True)


@command(
    "refined-table",
    "join a run's refined LLC tables (weight groups, data subsets) into refined.csv",
    refined_table_arguments,
)
def run_refined_table(args: argparse.Namespace) -> None:
    from grokslt.workflow.tables import write_refined_table

    write_refined_table(args.parts, args.out)


def waic_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--traces", required=True, help="a directory of step<STEP>.nc (grokslt llc --pair-traces)")
    parser.add_argument("--out", required=True)


@command(
    "waic",
    "WAIC from the training pairs' traces against the held-out Bayes loss, per checkpoint",
    waic_arguments,
)
def run_waic(args: argparse.Namespace) -> None:
    from grokslt.analysis.waic import write_waic_table

    write_waic_table(args.traces, args.out)


def summary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", nargs="+", required=True, help="run directories, each with its summary.csv row "
                        "(`grokslt tables`)")  # fmt: skip
    parser.add_argument("--experiment", nargs="*", default=[], help="name=run1,run2 membership")
    parser.add_argument("--out", required=True)


@command("summary", "one row per run: final/peak LLC, GSM, transition steps, closed forms", summary_arguments,
         tensors=False)  # fmt: skip
def run_summary(args: argparse.Namespace) -> None:
    from pathlib import Path

    from grokslt.analysis.summary import parse_membership, write_summary

    runs = {Path(path).name: Path(path) for path in args.runs}
    write_summary(runs, parse_membership(args.experiment, runs, "--experiment"), args.out)


def claims_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", required=True, help="summary/runs.csv")
    parser.add_argument("--loss-data", nargs="+", required=True, help="runs/*/loss_data.csv")
    parser.add_argument("--certified", nargs="*", default=[], help="runs/*/certified.csv (the certified preset)")
    parser.add_argument("--sensitivity", help="sensitivity/sensitivity.csv (appendix B.2)")
    parser.add_argument("--waic", nargs="*", default=[], help="runs/*/waic.csv (the WAIC claim)")
    parser.add_argument("--traced", nargs="*", default=[], help="runs/*/refined/traced.csv, the estimates behind them")
    parser.add_argument("--coefficient", nargs="*", default=[], help="runs/*/coefficient.csv (the rows of r / 2)")
    parser.add_argument("--smoke-test", action="store_true", help="mark every verdict as a smoke test, no evidence")
    parser.add_argument("--out", required=True)


@command(
    "claims", "test each of the paper's claims, per sampler preset, into claims.csv", claims_arguments, tensors=False
)
def run_claims(args: argparse.Namespace) -> None:
    from grokslt.analysis.claims.table import write_claims

    rows = write_claims(args.summary, args.loss_data, args.certified, args.sensitivity, args.out, args.smoke_test,
                        args.waic, args.traced, args.coefficient)  # fmt: skip
    for row in rows:
        print(f"{row['claim']:34s} {row['preset']:18s} {row['verdict']:12s} {row['statistic']}: {row['value']:.4g}")


def accuracy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", nargs="+", required=True, help="run directories: their final and initial points")
    parser.add_argument("--nbetas", required=True, help="comma-separated nbeta")
    parser.add_argument("--localization", type=float, required=True)
    parser.add_argument("--methods", required=True, help='JSON: {"name": {"preset": ..., setting: value}}')
    parser.add_argument("--repeats", type=int, default=4, help="seeds per method")
    parser.add_argument("--reference-chains", type=int, default=16)
    parser.add_argument("--reference-burnin", type=int, default=2000)
    parser.add_argument("--reference-draws", type=int, default=20000)
    parser.add_argument("--out", required=True)


@command("accuracy", "each LLC method against exact MALA references on small networks", accuracy_arguments)
def run_accuracy(args: argparse.Namespace) -> None:
    import json

    from grokslt.analysis.accuracy import write_accuracy
    from grokslt.estimation.exact import ReferenceSettings

    try:
        methods = json.loads(args.methods)
    except json.JSONDecodeError as error:
        raise ValueError(f"--methods {args.methods!r}: not JSON ({error})") from None
    reference = ReferenceSettings(args.reference_chains, args.reference_burnin, args.reference_draws)
    write_accuracy(args.runs, args.out, parse_floats(args.nbetas), args.localization, methods, args.repeats, reference)


def scorecard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", required=True)
    parser.add_argument("--loss-data", nargs="+", required=True)
    parser.add_argument("--reference", required=True, help="reference/SHA256SUMS, or none")
    parser.add_argument("--out", required=True)


@command(
    "scorecard", "our runs against the authors' logs of the same settings, into scorecard.csv", scorecard_arguments
)
def run_scorecard(args: argparse.Namespace) -> None:
    from pathlib import Path

    from grokslt.analysis.scorecard import write_scorecard

    reference = None if args.reference == "none" else Path(args.reference).parent
    rows = write_scorecard(args.summary, args.loss_data, reference, args.out)
    matched = {row["run"] for row in rows if row.get("metric") and row["run"] != "worst"}
    print(f"{len(matched)} runs matched an authors' log")


def plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--configfile", default="config.yaml")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print JSON (cpu_seconds, wall_seconds, ...)")
    parser.add_argument("--reference", default="reference", help="the authors' logs for expected stops, or none")


@command("plan", "what a config will cost: runs, estimates, CPU hours and wall time on N cores", plan_arguments)
def run_plan(args: argparse.Namespace) -> None:
    import json
    from pathlib import Path

    import yaml

    from grokslt.workflow.config import check_workflow, yaml_mistake
    from grokslt.workflow.plan import describe, expected_stops, measure, plan

    try:
        config = yaml.safe_load(Path(args.configfile).read_text())
    except yaml.YAMLError as error:
        raise ValueError(f"--configfile {args.configfile}: {yaml_mistake(error)}") from None
    checked = check_workflow(config, [args.configfile])  # what the workflow runs: figures left out included
    stops = None
    if args.reference != "none" and checked.config["reference"] != "none":
        stops = expected_stops(checked.runs, args.reference)
    result = plan(checked.config, args.cores, measure(runs=checked.runs.values()), stops)
    print(json.dumps(result, indent=2) if args.json else describe(result))


def figure_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.figures import FIGURES, READS, setting_flags

    parser.add_argument("name", help=" | ".join(FIGURES))
    for kind, (flag, many, help) in READS.items():
        parser.add_argument(flag, dest=kind, nargs="*" if many else None, default=[] if many else None, help=help)
    for key, (flag, default) in setting_flags().items():
        if isinstance(default, list):
            parser.add_argument(flag, dest=key, nargs="*", default=[], help="experiments")
        elif isinstance(default, int):
            parser.add_argument(flag, dest=key, type=int, default=default)
        else:
            parser.add_argument(flag, dest=key, help="an experiment of the config")
    parser.add_argument("--membership", nargs="*", help="name=run1,run2: the experiments of the runs whose "
                        "summary.csv rows --summary gives (leave out with summary/runs.csv)")  # fmt: skip
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--out", required=True, help="output path without suffix")


@command("figure", "draw one figure from tables, as PDF and PNG", figure_arguments, tensors=False)
def run_figure(args: argparse.Namespace) -> None:
    from grokslt.figures.drawing import draw

    draw(args.name, args)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with `only`, the arguments of that command alone (the others' imports are heavy)."""
    parser = argparse.ArgumentParser(
        prog="grokslt", description=DESCRIPTION, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"grokslt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, entry in COMMANDS.items():
        subparser = sub.add_parser(name, help=entry.help)
        if only in (None, name):
            entry.arguments(subparser)
            add_process_arguments(subparser)
    return parser


THEN = "--then"  # joins commands that run in one process


def main(argv: list[str] | None = None) -> None:
    """Run one command, or several joined by `--then` in one process (one start of Python and torch), each parsed
    before the first runs. Expected failures (bad input: status 2; a failed computation or a full disk:
    status 1) end in one line on stderr; `--debug` shows their traceback instead."""
    argv = sys.argv[1:] if argv is None else argv
    commands = [parse(words) for words in split_commands(argv)]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("grokslt").setLevel(logging.INFO)
    for args in commands:
        run_command(args)


def split_commands(argv: list[str]) -> list[list[str]]:
    """`a ... --then b ...` -> [[a, ...], [b, ...]]."""
    commands = [[]]
    for word in argv:
        if word == THEN:
            commands.append([])
        else:
            commands[-1].append(word)
    return commands


def parse(argv: list[str]) -> argparse.Namespace:
    named = next((word for word in argv if not word.startswith("-")), None)
    return build_parser(named if named in COMMANDS else None).parse_args(argv)


def run_command(args: argparse.Namespace) -> None:
    try:
        entry = COMMANDS[args.command]
        runtime.configure(args.threads, entry.tensors)
        entry.run(args)
    except (ValueError, ComputationFailed, OSError) as error:
        if args.debug:
            raise
        status, message = expected_failure(error)
        print(f"grokslt {args.command}: error: {message}", file=sys.stderr)
        sys.exit(status)
    except KeyboardInterrupt:
        sys.exit(130)


def expected_failure(error: Exception) -> tuple[int, str]:
    """(exit status, one line) for an error a user can act on."""
    if isinstance(error, OSError):
        return describe_os_error(error)
    status = getattr(error, "exit_status", 2)
    return status, " ".join(str(error).split("\n")[:1]) or type(error).__name__

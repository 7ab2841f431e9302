"""Command line: `grokslt <command> ...`. Parses arguments and calls the library, nothing more."""

from __future__ import annotations

import argparse
import logging
import sys

from grokslt import runtime
from grokslt.errors import ComputationFailed, describe_os_error

COMMANDS = {}


def command(name: str, help: str):
    def register(fn):
        COMMANDS[name] = (fn, help)
        return fn

    return register


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    from grokslt.train import TrainConfig

    defaults = TrainConfig()
    parser.add_argument("--p", type=int, default=defaults.p, help="prime modulus")
    parser.add_argument("--hidden", type=int, default=defaults.hidden, help="width K")
    parser.add_argument("--train-frac", type=float, default=defaults.train_frac)
    parser.add_argument("--optimizer", default=defaults.optimizer, help="adam | adamw | sgd")
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument("--weight-decay", type=float, default=defaults.weight_decay)
    parser.add_argument("--momentum", type=float, default=defaults.momentum, help="sgd only")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--max-steps", type=int, default=defaults.max_steps)
    parser.add_argument("--eval-every", type=int, default=defaults.eval_every)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--split", default=defaults.split, help="authors | numpy")
    parser.add_argument("--early-stop-threshold", type=float, default=defaults.early_stop_threshold)
    parser.add_argument("--early-stop-patience", type=int, default=defaults.early_stop_patience)
    parser.add_argument("--no-early-stop", action="store_true", help="train for --max-steps")


def add_process_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one per process is fastest here)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an expected failure")


@command("train", "train one network, writing checkpoints and train_log.csv")
def run_train(args: argparse.Namespace) -> None:
    from grokslt.train import TrainConfig, train

    config = TrainConfig(
        p=args.p,
        hidden=args.hidden,
        train_frac=args.train_frac,
        optimizer=args.optimizer,
        lr=args.lr,
        weight_decay=args.weight_decay,
        momentum=args.momentum,
        batch_size=args.batch_size,
        max_steps=args.max_steps,
        eval_every=args.eval_every,
        seed=args.seed,
        split=args.split,
        early_stop_threshold=args.early_stop_threshold,
        early_stop_patience=args.early_stop_patience,
        early_stop=not args.no_early_stop,
    )
    config.validate()
    data = None
    if args.dataset:
        from grokslt.data import load_dataset

        data = load_dataset(args.dataset)
    trainer = train(config, args.out, data=data)
    last, outcome = trainer.rows[-1], trainer.outcome()
    print(
        f"{args.out}: {outcome['status'].replace('_', ' ')} at step {trainer.step}, train acc {last['train_acc']:.4f}, "
        f"val acc {last['val_acc']:.4f}"
    )


@command("dataset", "write the train/validation split of Z_p x Z_p")
def run_dataset(args: argparse.Namespace) -> None:
    from grokslt.data import make_dataset, save_dataset

    save_dataset(make_dataset(args.p, args.train_frac, args.seed, args.split), args.out)


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run directory written by `grokslt train`")
    parser.add_argument("--steps", help="comma-separated checkpoint steps (default: all)")
    parser.add_argument("--chunk", help="i/n: the i-th of n contiguous blocks of checkpoints (0-based)")
    parser.add_argument("--out", required=True, help="output CSV, one row per checkpoint")


@command("llc", "estimate the LLC at checkpoints of a run")
def run_llc(args: argparse.Namespace) -> None:
    from grokslt.checkpoint_llc import write_llc_table

    write_llc_table(
        run_dir=args.run,
        out=args.out,
        preset=args.preset,
        overrides=sampler_overrides(args),
        backend=args.backend,
        steps=args.steps,
        chunk=args.chunk,
        seed=args.seed,
        device=args.device,
        stack=args.stack,
        traces=args.traces,
    )


@command("hessian", "Hutchinson (and exact) Hessian trace of L_n at checkpoints of a run")
def run_hessian(args: argparse.Namespace) -> None:
    from grokslt.hessian import write_hessian_table

    write_hessian_table(args.run, args.out, args.preset, args.num_probes, args.steps, args.chunk, args.seed)


@command("theory", "closed-form LLCs and their numerical checks, or theory at a run's checkpoints")
def run_theory(args: argparse.Namespace) -> None:
    from grokslt import theory

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


def parse_pair(text: str) -> tuple[int, int]:
    try:
        p, K = (int(part) for part in text.split(":"))
    except ValueError:
        raise ValueError(f"--sizes {text!r}: expected p:K pairs like 53:1024") from None
    return p, K


@command("sensitivity", "the LLC at one checkpoint over a grid of SGLD step size x localization")
def run_sensitivity(args: argparse.Namespace) -> None:
    from grokslt.checkpoint_llc import write_sensitivity_table

    write_sensitivity_table(
        args.run,
        args.out,
        args.step,
        parse_floats(args.step_sizes),
        parse_floats(args.localizations),
        args.preset,
        args.backend,
        args.seed,
        sampler_overrides(args),
    )


@command("tables", "join a run's log, LLC, Hessian and theory tables into params.csv and loss_data.csv")
def run_tables(args: argparse.Namespace) -> None:
    from grokslt.tables import write_run_tables

    write_run_tables(args.id, args.run, args.llc, args.hessian, args.theory, args.params_out, args.loss_out)


@command("summary", "one row per run: final/peak LLC, GSM, transition steps, closed forms")
def run_summary(args: argparse.Namespace) -> None:
    from pathlib import Path

    from grokslt.tables import write_summary

    runs = {Path(path).name: Path(path) for path in args.runs}
    membership = {}
    for item in args.experiment:
        name, _, members = item.partition("=")
        membership[name] = [m for m in members.split(",") if m]
        unknown = sorted(set(membership[name]) - set(runs))
        if unknown:
            raise ValueError(f"--experiment {name}: runs {unknown} are not among --runs")
    write_summary(runs, membership, args.out)


@command("figure", "draw one figure from tables, as PDF and PNG")
def run_figure(args: argparse.Namespace) -> None:
    from grokslt.figures import draw

    draw(args.name, args)


def parse_floats(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part]
    except ValueError:
        raise ValueError(f"{text!r}: expected comma-separated numbers") from None


def sampler_overrides(args: argparse.Namespace) -> dict:
    keys = ("step_size", "nbeta", "localization", "num_chains", "num_burnin", "num_draws", "init_loss")
    return {key: getattr(args, key) for key in keys}


def add_llc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="paper_code", help="paper_code | paper_text")
    parser.add_argument("--backend", default="native", help="native | devinterp")
    parser.add_argument("--seed", type=int, default=0, help="chains at step s are seeded by (seed, s)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--stack", type=int, default=1, help="checkpoints per batched computation (GPU)")
    parser.add_argument("--traces", help="also save the loss traces [checkpoints, chains, draws] (.npz)")
    group = parser.add_argument_group("overrides of the preset")
    group.add_argument("--step-size", type=float)
    group.add_argument("--nbeta", type=float)
    group.add_argument("--localization", type=float)
    group.add_argument("--num-chains", type=int)
    group.add_argument("--num-burnin", type=int)
    group.add_argument("--num-draws", type=int)
    group.add_argument("--init-loss", help="batches | full")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grokslt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help=COMMANDS["train"][1])
    add_train_arguments(train)
    add_process_arguments(train)
    train.add_argument("--dataset", help="a split written by `grokslt dataset` (default: made from the settings)")
    train.add_argument("--out", required=True, help="run directory")
    dataset = sub.add_parser("dataset", help=COMMANDS["dataset"][1])
    dataset.add_argument("--p", type=int, required=True)
    dataset.add_argument("--train-frac", type=float, required=True)
    dataset.add_argument("--seed", type=int, required=True)
    dataset.add_argument("--split", default="authors", help="authors | numpy")
    dataset.add_argument("--out", required=True, help="output .npz")
    add_process_arguments(dataset)
    llc = sub.add_parser("llc", help=COMMANDS["llc"][1])
    add_selection_arguments(llc)
    add_llc_arguments(llc)
    add_process_arguments(llc)
    hessian = sub.add_parser("hessian", help=COMMANDS["hessian"][1])
    add_selection_arguments(hessian)
    hessian.add_argument("--preset", default="paper_code", help="paper_code (2 probes) | paper_text (100)")
    hessian.add_argument("--num-probes", type=int, help="override the preset's number of probes")
    hessian.add_argument("--seed", type=int, default=0)
    add_process_arguments(hessian)
    theory = sub.add_parser("theory", help=COMMANDS["theory"][1])
    theory.add_argument("--out", required=True, help="output directory (tables) or CSV (with --run)")
    theory.add_argument("--run", help="a run directory: theory at its checkpoints")
    theory.add_argument("--steps")
    theory.add_argument("--chunk")
    theory.add_argument("--mass", type=float, default=0.99, help="atom-norm mass that defines K_eff")
    theory.add_argument("--atom-rank-max", type=int, default=0, help="rank Phi_p's Jacobian when K_eff <= this")
    theory.add_argument("--sizes", default="53:1024", help="p:K pairs for the closed-form table")
    theory.add_argument("--grid-p", default="3,5,7", help="p values of the numerical rank checks")
    theory.add_argument("--grid-K", default="1,2,3,5,8,12,20,40,80")
    theory.add_argument("--single-d", default="2,3,4,6")
    theory.add_argument("--single-K", default="1,2,3,4,6,8")
    theory.add_argument("--seed", type=int, default=0)
    add_process_arguments(theory)
    sensitivity = sub.add_parser("sensitivity", help=COMMANDS["sensitivity"][1])
    sensitivity.add_argument("--run", required=True)
    sensitivity.add_argument("--step", default="final", help="checkpoint step, or final")
    sensitivity.add_argument("--step-sizes", required=True, help="comma-separated SGLD step sizes")
    sensitivity.add_argument("--localizations", required=True, help="comma-separated localizations gamma")
    sensitivity.add_argument("--out", required=True)
    add_llc_arguments(sensitivity)
    add_process_arguments(sensitivity)
    tables = sub.add_parser("tables", help=COMMANDS["tables"][1])
    tables.add_argument("--id", required=True, help="run id")
    tables.add_argument("--run", required=True)
    tables.add_argument("--llc", nargs="+", required=True, help="LLC chunk CSVs")
    tables.add_argument("--hessian", nargs="+", required=True, help="Hessian chunk CSVs")
    tables.add_argument("--theory", required=True, help="per-checkpoint theory CSV")
    tables.add_argument("--params-out", required=True)
    tables.add_argument("--loss-out", required=True)
    add_process_arguments(tables)
    summary = sub.add_parser("summary", help=COMMANDS["summary"][1])
    summary.add_argument("--runs", nargs="+", required=True, help="run directories holding params.csv, loss_data.csv")
    summary.add_argument("--experiment", nargs="*", default=[], help="name=run1,run2 membership")
    summary.add_argument("--out", required=True)
    add_process_arguments(summary)
    figure = sub.add_parser("figure", help=COMMANDS["figure"][1])
    figure.add_argument(
        "name", help="fig1a | fig1b | fig2 | trajectories | fig9 | sensitivity | theory_vs_measurement | diagnostics"
    )
    figure.add_argument("--summary", help="summary/runs.csv")
    figure.add_argument("--loss-data", nargs="*", default=[], help="runs/*/loss_data.csv")
    figure.add_argument("--rank-checks", help="theory/rank_checks.csv")
    figure.add_argument("--sensitivity", help="sensitivity/sensitivity.csv")
    figure.add_argument("--traces", nargs="*", default=[], help="runs/RUN/llc/*.npz")
    figure.add_argument("--experiment", help="the experiment whose runs the figure shows")
    figure.add_argument("--band-experiment", help="fig2: experiment whose runs give the LLC band")
    figure.add_argument("--experiments", nargs="*", default=[], help="theory_vs_measurement: by-p, by-K")
    figure.add_argument("--checkpoints", type=int, default=4, help="diagnostics: checkpoints shown")
    figure.add_argument("--dpi", type=int, default=200)
    figure.add_argument("--out", required=True, help="output path without suffix")
    add_process_arguments(figure)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run one command. Expected failures (bad input: status 2; a failed computation or a full disk:
    status 1) end in one line on stderr; `--debug` shows their traceback instead."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("grokslt").setLevel(logging.INFO)
    try:
        runtime.configure(args.threads)
        COMMANDS[args.command][0](args)
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

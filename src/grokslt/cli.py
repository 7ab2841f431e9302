"""Command line: `grokslt <command> ...`. Parses arguments and calls the library, nothing more."""

from __future__ import annotations

import argparse
import logging
import sys

from grokslt import runtime

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


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one per process is fastest here)")


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
    trainer = train(config, args.out)
    last = trainer.rows[-1]
    print(
        f"{args.out}: stopped at step {trainer.step}, train acc {last['train_acc']:.4f}, val acc {last['val_acc']:.4f}"
    )


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
        overrides={
            "step_size": args.step_size,
            "nbeta": args.nbeta,
            "localization": args.localization,
            "num_chains": args.num_chains,
            "num_burnin": args.num_burnin,
            "num_draws": args.num_draws,
            "init_loss": args.init_loss,
        },
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
    add_threads_argument(train)
    train.add_argument("--out", required=True, help="run directory")
    llc = sub.add_parser("llc", help=COMMANDS["llc"][1])
    add_selection_arguments(llc)
    add_llc_arguments(llc)
    add_threads_argument(llc)
    hessian = sub.add_parser("hessian", help=COMMANDS["hessian"][1])
    add_selection_arguments(hessian)
    hessian.add_argument("--preset", default="paper_code", help="paper_code (2 probes) | paper_text (100)")
    hessian.add_argument("--num-probes", type=int, help="override the preset's number of probes")
    hessian.add_argument("--seed", type=int, default=0)
    add_threads_argument(hessian)
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
    add_threads_argument(theory)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        runtime.configure(args.threads)
        COMMANDS[args.command][0](args)
    except ValueError as error:
        print(f"grokslt {args.command}: error: {error}", file=sys.stderr)
        sys.exit(2)

"""The table of measured/coefficient/reach.csv: the preconditioned sampler (`pmala`) at settings whose estimand
reaches the learning coefficient, on the paper's baseline (p 53, K 1024, seed 0), per checkpoint.

    python scripts/measure_reach.py --run RUN --steps 6100,15900 --out measured/coefficient/reach.csv

For each checkpoint and setting (the `reach` preset on all weights, and on V alone with W held at w*): the estimate
with its honest diagnostics, locality and acceptance rate, its wall and CPU seconds on one thread; beside it the
V-only closed form at the same (nbeta, gamma) (`linear_v.v_only_estimand`), lambda_Q there (`laplace`: Lanczos
quadrature of the Gauss-Newton spectrum, with its standard error and Gauss/Gauss-Radau bracket), and the
conditioning that decides the mixing: the condition number nbeta h_max / gamma + 1 that plain Langevin faces, and
the extreme Ritz values of the preconditioned precision P^(1/2) (nbeta G + gamma) P^(1/2) at w* (Lanczos), whose
ratio is the condition number left to the preconditioned chain (near w*, where the loss is its quadratic model).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from grokslt import runtime
from grokslt.errors import ComputationFailed
from grokslt.estimation.laplace import flat_operator, gauss_newton_product, gauss_newton_quadrature, lanczos
from grokslt.estimation.linear_v import v_only_estimand
from grokslt.estimation.llc import estimate_llc, sampler_settings
from grokslt.estimation.preconditioner import BlockPreconditioner, quadratic_net_blocks
from grokslt.estimation.refined import refined_problem
from grokslt.io import list_checkpoints, load_checkpoint
from grokslt.training.train import TrainConfig

COLUMNS = [
    "step", "weights", "sampler", "nbeta", "localization", "step_size", "num_chains", "num_burnin", "num_draws",
    "llc_mean", "llc_full", "mcse", "r_hat", "ess_bulk", "ess_tail", "converged", "loss_excess_fraction", "local",
    "relative_distance", "accept_rate", "wall_s", "cpu_s", "v_closed_form", "v_coefficient", "v_reach", "lambda_q",
    "lambda_q_stderr", "lambda_q_lower", "lambda_q_upper", "lambda_q_cpu_s", "plain_condition", "ritz_min",
    "ritz_max", "preconditioned_condition", "note",
]  # fmt: skip


def preconditioned_ritz(W, V, a, b, nbeta: float, gamma: float, steps: int, seed: int) -> tuple[float, float]:
    """Extreme Ritz values of P^(1/2) (nbeta G + gamma I) P^(1/2) after `steps` Lanczos steps (the largest converges
    fast; the smallest is an upper bound of the smallest eigenvalue)."""
    W, V = W.double(), V.double()
    product = flat_operator(gauss_newton_product(W, V, a, b), (W.shape, V.shape))
    point = BlockPreconditioner(quadratic_net_blocks(W, V, a, b), nbeta, gamma, torch.float64)
    size_W, shapes = W.numel(), {"W": W.shape, "V": V.shape}

    def root_p(x: torch.Tensor) -> torch.Tensor:  # P^(1/2) x on flat rows [m, d]
        parts = {"W": x[:, :size_W], "V": x[:, size_W:]}
        out = []
        for name, part in parts.items():
            shape = torch.Size((x.shape[0], *shapes[name]))
            y = point.to_eigen(name, part.reshape(shape))
            out.append(point.from_eigen(name, y / point.precision[name].sqrt(), shape).reshape(x.shape[0], -1))
        return torch.cat(out, dim=1)

    def matvec(x: torch.Tensor) -> torch.Tensor:
        s = root_p(x)
        return root_p(nbeta * product(s) + gamma * s)

    generator = torch.Generator().manual_seed(seed)
    start = torch.randn(1, W.numel() + V.numel(), generator=generator, dtype=torch.float64)
    alpha, beta = lanczos(matvec, start, steps, generator)
    T = torch.diag(alpha[0]) + torch.diag(beta[0, :-1], 1) + torch.diag(beta[0, :-1], -1)
    ritz = torch.linalg.eigvalsh(T)
    return float(ritz.min()), float(ritz.max())


def measure(run, step: int, weights: str, overrides: dict, seed: int) -> dict:
    params = load_checkpoint(run.checkpoints[step])
    settings = sampler_settings("reach", weights=weights, **overrides)
    problem = refined_problem(run.data, params, settings)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        summary = estimate_llc(problem.loss_fn, problem.centre, problem.n, settings, problem.n, seed).summary()
    except ComputationFailed as failure:  # every chain diverged: a finding, recorded
        summary = {"note": str(failure).split(":")[0]}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    closed = v_only_estimand(params["W"], params["V"], run.data, settings.nbeta, settings.localization)
    row = {name: getattr(settings, name) for name in COLUMNS if hasattr(settings, name)}
    row |= {name: summary[name] for name in COLUMNS if name in summary}
    return row | {
        "step": step,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "v_closed_form": closed["estimand"],
        "v_coefficient": closed["learning_coefficient"],
        "v_reach": closed["estimand"] / closed["learning_coefficient"],
    }


def beside(run, step: int, nbeta: float, gamma: float, probes: int, lanczos_steps: int, ritz_steps: int) -> dict:
    """lambda_Q and the conditioning at w* (the same for every setting of this (nbeta, gamma))."""
    params = load_checkpoint(run.checkpoints[step])
    a, b, _ = run.data.subset("train")
    began = time.process_time()
    quadrature = gauss_newton_quadrature(params["W"], params["V"], a, b, probes, lanczos_steps, seed=step)
    laplace = quadrature.laplace_estimand(nbeta, gamma)
    cost = time.process_time() - began
    h_max = float(quadrature.gauss_nodes.max())
    ritz_min, ritz_max = preconditioned_ritz(params["W"], params["V"], a, b, nbeta, gamma, ritz_steps, seed=step)
    return {
        "lambda_q": laplace["value"],
        "lambda_q_stderr": laplace["stderr"],
        "lambda_q_lower": laplace["lower"],
        "lambda_q_upper": laplace["upper"],
        "lambda_q_cpu_s": round(cost, 1),
        "plain_condition": nbeta * h_max / gamma + 1,
        "ritz_min": ritz_min,
        "ritz_max": ritz_max,
        "preconditioned_condition": ritz_max / ritz_min,
    }


@dataclass
class Run:
    """A training run's data and checkpoints, read without `load_run`'s checksums (the retrained baseline of
    /work/paper_runs predates them)."""

    data: object
    checkpoints: dict

    @classmethod
    def read(cls, path: Path) -> Run:
        config = TrainConfig(**json.loads((path / "run.json").read_text())["config"])
        return cls(config.dataset(), list_checkpoints(path / "checkpoints"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--steps", default="6100,15900")
    parser.add_argument("--out", type=Path, default=Path("measured/coefficient/reach.csv"))
    parser.add_argument("--weights", nargs="*", default=["V", "all"])
    parser.add_argument("--step-size", type=float, help="override the preset's (P's units)")
    parser.add_argument("--all-step-size", type=float, help="the step on all weights, where P is block-diagonal")
    parser.add_argument("--num-burnin", type=int)
    parser.add_argument("--num-draws", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probes", type=int, default=4, help="Lanczos probes of lambda_Q (0: none)")
    parser.add_argument("--lanczos-steps", type=int, default=100)
    parser.add_argument("--ritz-steps", type=int, default=40)
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args()
    runtime.configure(1)
    run = Run.read(args.run)
    overrides = {"step_size": args.step_size, "num_burnin": args.num_burnin, "num_draws": args.num_draws}
    preset = sampler_settings("reach", **overrides)
    fresh = not args.out.exists() or not args.append
    with open(args.out, "w" if fresh else "a", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, extrasaction="ignore")
        if fresh:
            writer.writeheader()
        for step in map(int, args.steps.split(",")):
            extra = {}
            if args.probes:
                extra = beside(run, step, preset.nbeta, preset.localization, args.probes, args.lanczos_steps,
                               args.ritz_steps)  # fmt: skip
                print(f"step {step}: {extra}", flush=True)
            for weights in args.weights:
                step_size = args.all_step_size if weights == "all" and args.all_step_size else args.step_size
                row = measure(run, step, weights, overrides | {"step_size": step_size}, args.seed) | extra
                writer.writerow(row)
                handle.flush()
                print({k: row.get(k) for k in COLUMNS[:22]}, flush=True)


if __name__ == "__main__":
    main()

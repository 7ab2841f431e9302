"""lambda_Q's cost beside the estimate it sits beside, in one process, at the same checkpoints.

For each of a run's checkpoints: the native LLC estimate at a preset (paper_code or local), then lambda_Q by
stochastic Lanczos quadrature with the LLC table's default probes and Lanczos steps (`LaplaceSettings`), then
lambda_Q by autograd's Gauss-Newton products (torch.func: jvp of the centred outputs, then vjp) instead of the
hand-derived ones. Prints the seconds of each and the ratios: lambda_Q / LLC (the issue asks at most 1) and
autograd / hand-derived.

    grokslt train --out /tmp/baseline ... (the paper's baseline), then
    python benchmarks/bench_laplace.py --run /tmp/baseline [--steps 5000,15900] [--preset local] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.func import jvp, vjp

from grokslt.estimation.checkpoint_llc import estimate_checkpoints
from grokslt.estimation.laplace import (
    LaplaceSettings,
    flat_operator,
    gauss_newton_product,
    stochastic_lanczos_quadrature,
)
from grokslt.estimation.llc import sampler_settings
from grokslt.training.model import forward_pairs
from grokslt.training.runs import load_run


def autograd_product(W, V, a, b):
    """G v by autograd: the same products `gauss_newton_product` derives by hand."""
    n = len(a)

    def centred(W_, V_):
        outputs = forward_pairs(W_, V_, a, b)
        return outputs - outputs.mean(dim=0)

    _, pullback = vjp(centred, W, V)

    def product(directions):
        dW, dV = directions
        rows = []
        for i in range(dW.shape[0]):
            _, forward = jvp(centred, (W, V), (dW[i], dV[i]))
            rows.append(pullback(forward / n))
        return torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])

    return product


def seconds(fn, *args) -> float:
    began = time.perf_counter()
    fn(*args)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True)
    parser.add_argument("--steps", default=None, help="comma-separated checkpoints (default: the last)")
    parser.add_argument("--preset", default="paper_code")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    run = load_run(args.run)
    steps = [int(s) for s in args.steps.split(",")] if args.steps else [max(run.checkpoints)]
    settings, laplace = sampler_settings(args.preset), LaplaceSettings()
    a, b, _ = run.data.subset("train")
    print(f"{'step':>7} {'LLC s':>8} {'lambda_Q s':>10} {'autograd s':>10} {'lQ/LLC':>7} {'autograd/hand':>13}")
    for step in steps:
        params = run.load(step)
        llc_s = seconds(estimate_checkpoints, run.data, [(step, params)], settings, run.batch_size, 0)
        W, V = params["W"].double(), params["V"].double()
        shapes, dimension = (W.shape, V.shape), W.numel() + V.numel()
        hand, auto = (
            seconds(
                stochastic_lanczos_quadrature,
                flat_operator(product, shapes),
                dimension,
                laplace.laplace_probes,
                laplace.laplace_lanczos_steps,
                torch.Generator().manual_seed(0),
            )  # fmt: skip
            for product in (gauss_newton_product(W, V, a, b), autograd_product(W, V, a, b))
        )
        print(f"{step:>7} {llc_s:>8.2f} {hand:>10.2f} {auto:>10.2f} {hand / llc_s:>7.2f} {auto / hand:>13.2f}")


if __name__ == "__main__":
    main()

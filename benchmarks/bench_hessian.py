"""Hutchinson probes per second: double-backward HVPs batched over chunks of probes (`is_grads_batched`)
against a Python loop of them, one probe at a time (the straightforward way), in one process, on one
baseline checkpoint; both estimates beside the exact trace.

    python benchmarks/bench_hessian.py --run DIR [--probes 32] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from grokslt import runtime
from grokslt.analysis.hessian import exact_trace, hutchinson_trace, network_loss, rademacher
from grokslt.training.runs import load_run


def looped_hutchinson(loss_fn, params, num_probes: int, generator: torch.Generator) -> float:
    """One probe at a time: v^T H v from autograd's double backward."""
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    total = 0.0
    for _ in range(num_probes):
        probe = {k: rademacher(v.shape, generator, v) for k, v in leaves.items()}
        grads = torch.autograd.grad(loss_fn(leaves), list(leaves.values()), create_graph=True)
        directional = sum((g * probe[k]).sum() for g, k in zip(grads, leaves, strict=True))
        hessian_probe = torch.autograd.grad(directional, list(leaves.values()))
        total += sum((h * probe[k]).sum().item() for h, k in zip(hessian_probe, leaves, strict=True))
    return total / num_probes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--run", required=True)
    parser.add_argument("--probes", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    runtime.configure(args.threads)
    run = load_run(args.run)
    step = list(run.checkpoints)[-1]
    params = run.load(step)
    a, b, c = run.data.subset("train")
    loss_fn = network_loss(a, b, c, run.network)
    exact = exact_trace(params["W"], params["V"], a, b)
    began = time.perf_counter()
    looped = looped_hutchinson(loss_fn, params, args.probes, torch.Generator().manual_seed(0))
    loop_time = time.perf_counter() - began
    print(f"checkpoint step {step}: exact Tr(H) = {exact:.3f}")
    print(f"python loop, double backward : {args.probes / loop_time:6.1f} probes/s, estimate {looped:.3f}")
    hutchinson_trace(loss_fn, params, 1, torch.Generator().manual_seed(0))  # the first batched backward sets up
    for chunk in (4, 16):
        began = time.perf_counter()
        estimate = hutchinson_trace(loss_fn, params, args.probes, torch.Generator().manual_seed(0), chunk_size=chunk)
        elapsed = time.perf_counter() - began
        print(
            f"batched HVPs, chunk {chunk:2d}      : {args.probes / elapsed:6.1f} probes/s, "
            f"estimate {estimate.mean:.3f} +- {estimate.stderr:.3f}, speed-up {loop_time / elapsed:.2f}x"
        )
    began = time.perf_counter()
    exact_trace(params["W"], params["V"], a, b)
    print(f"closed-form exact trace      : {time.perf_counter() - began:.4f} s")


if __name__ == "__main__":
    main()

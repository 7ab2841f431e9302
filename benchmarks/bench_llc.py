"""LLC speed: the native sampler against devinterp 1.3.2, in one process, on the same checkpoints.

Four ways to estimate the LLC at the `paper_code` preset for 10 checkpoints of a baseline run:
- devinterp with the authors' model (nn.Linear layers on one-hot inputs, autograd): the reference;
- devinterp with our gather-form network (the `devinterp` backend);
- the native batched sampler in torch alone (hand-derived gradient, torch's noise);
- the native sampler with the compiled CPU kernels (the `native` backend's default on a CPU).
Prints wall time per estimate, the estimates side by side, the ratios and the fraction of this
core's measured matmul peak that the native sampler reaches.

`--samplers` adds a row per sampler of `grokslt.estimation.samplers` (time per estimate against SGLD, same settings
otherwise; MALA evaluates the full training set at every step).

`--late-run DIR` (a long baseline: `grokslt train --no-early-stop --max-steps 40000 --out DIR`) adds the
subnormal-float rows: the native estimate at an early and at a late checkpoint, with subnormals
flushed to zero (grokslt's default) and with IEEE subnormals.

    grokslt train --out /tmp/baseline ... (the baseline command in README.md), then
    python benchmarks/bench_llc.py --run /tmp/baseline [--checkpoints 10] [--threads 1] [--late-run DIR]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from grokslt import cpu_kernels, runtime
from grokslt.estimation.checkpoint_llc import estimate_checkpoints
from grokslt.estimation.devinterp_backend import run_devinterp
from grokslt.estimation.llc import sampler_settings
from grokslt.training.data import one_hot_inputs, one_hot_targets
from grokslt.training.loss import centred_loss
from grokslt.training.runs import load_run, step_seed


def authors_devinterp(run, params, settings, seed) -> float:
    """devinterp as the authors call it: dense nn.Linear model, one-hot TensorDataset, autograd."""
    p, hidden = run.config.p, run.config.hidden
    model = torch.nn.Sequential(
        torch.nn.Linear(2 * p, hidden, bias=False), Square(), torch.nn.Linear(hidden, p, bias=False)
    )
    with torch.no_grad():
        model[0].weight.copy_(params["W"].t())
        model[2].weight.copy_(params["V"])
    a, b, c = run.data.subset("train")
    loader = DataLoader(
        TensorDataset(one_hot_inputs(a, b, p), one_hot_targets(c, p)), batch_size=run.config.batch_size, shuffle=True
    )

    def evaluate(net, batch):
        x, y = batch
        out = net(x)
        return centred_loss(out, y), {"output": out}

    nbeta = settings.resolved_nbeta(run.config.batch_size)
    result = run_devinterp(model, loader, evaluate, settings, nbeta, seed)
    return result["llc/mean"]


class Square(torch.nn.Module):
    def forward(self, x):
        return x.square()


# (name, backend, compiled kernels on) for the three estimates after the authors' devinterp call
VARIANTS = [("devinterp", "devinterp", True), ("torch", "native", False), ("native", "native", True)]


def use_kernels(on: bool) -> None:
    """Switch the compiled CPU kernels on or off for the estimates that follow."""
    os.environ["GROKSLT_CPU_KERNELS"] = "1" if on else "0"
    cpu_kernels.library.cache_clear()


def matmul_peak_gflops(size: int = 1024, reps: int = 5) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * size**3 * reps / (time.perf_counter() - start) / 1e9


def sampler_rows(run, chosen: list[int], settings) -> None:
    """Wall time per estimate of each sampler on the same checkpoints, against SGLD's."""
    from grokslt.estimation.samplers import SAMPLERS

    use_kernels(True)
    walls = {}
    for name in SAMPLERS:
        sampler = settings.replace(sampler=name, init_loss=None)
        results = estimate_checkpoints(
            run.data, [(step, run.load(step)) for step in chosen], sampler, run.config.batch_size, 0, "native"
        )
        walls[name] = np.mean([wall for _, wall in results])
        mean = np.mean([result.llc_mean for result, _ in results])
        ratio = walls[name] / walls["sgld"]
        print(f"  {name:13s} {walls[name]:6.2f} s per estimate ({ratio:5.2f}x SGLD), mean LLC {mean:.1f}")


def late_checkpoint_rows(run_dir: str, settings) -> None:
    """Native estimates at the first checkpoint and the last (past step 25,000), in both subnormal modes."""
    run = load_run(run_dir)
    steps = list(run.checkpoints)
    print(f"\nnative estimate, {run_dir}, early and late checkpoints:")
    for mode in ("flush", "ieee"):
        runtime.set_subnormals(mode)
        walls = {}
        for step in (steps[0], steps[-1]):
            [(result, wall)] = estimate_checkpoints(
                run.data, [(step, run.load(step))], settings, run.config.batch_size, 0, "native"
            )
            walls[step] = (wall, result.llc_mean)
        (early, early_llc), (late, late_llc) = walls[steps[0]], walls[steps[-1]]
        print(
            f"  subnormals {mode:5s}: step {steps[0]} {early:5.2f} s (LLC {early_llc:.1f}) | step {steps[-1]} "
            f"{late:5.2f} s (LLC {late_llc:.1f}) | late/early time {late / early:.2f}"
        )
    runtime.set_subnormals("flush")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--run", required=True)
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--late-run", help="a long baseline run: adds early/late checkpoint rows per subnormal mode")
    parser.add_argument("--samplers", action="store_true", help="add a row per sampler (time against SGLD)")
    args = parser.parse_args()
    runtime.configure(args.threads)
    run = load_run(args.run)
    steps = list(run.checkpoints)
    chosen = [steps[i] for i in np.linspace(0, len(steps) - 1, args.checkpoints).round().astype(int)]
    settings = sampler_settings("paper_code")
    rows = []
    timings = {"authors": 0.0, "devinterp": 0.0, "torch": 0.0, "native": 0.0}
    for step in chosen:
        params = run.load(step)
        began = time.perf_counter()
        authors = authors_devinterp(run, params, settings, step_seed(0, step))
        timings["authors"] += time.perf_counter() - began
        estimates = {"authors": authors}
        for name, backend, kernels in VARIANTS:
            use_kernels(kernels)
            [(result, wall)] = estimate_checkpoints(
                run.data, [(step, params)], settings, run.config.batch_size, 0, backend
            )
            timings[name] += wall
            estimates[name] = result.llc_mean
        rows.append((step, estimates))
        print(
            f"step {step:6d}: devinterp+dense {estimates['authors']:8.1f} | devinterp+gather "
            f"{estimates['devinterp']:8.1f} | native torch {estimates['torch']:8.1f} | "
            f"native {estimates['native']:8.1f}",
            flush=True,
        )
    n = len(chosen)
    print(f"\nper estimate ({settings.num_chains} chains x {settings.num_burnin + settings.num_draws} steps):")
    for name, label in [
        ("authors", "devinterp + authors' dense model"),
        ("devinterp", "devinterp + gather model"),
        ("torch", "native, torch only"),
        ("native", "native, compiled kernels"),
    ]:
        print(f"  {label:34s} {timings[name] / n:6.2f} s")
    for name in ("torch", "native"):
        print(
            f"{name} speed-up: {timings['authors'] / timings[name]:.2f}x vs devinterp+dense, "
            f"{timings['devinterp'] / timings[name]:.2f}x vs devinterp+gather"
        )
        diffs = [r[name] - r["authors"] for _, r in rows]
        spread = f"{np.mean(diffs):+.1f} (sd {np.std(diffs, ddof=1):.1f})"
        print(f"  mean {name} - devinterp+dense over {n} checkpoints: {spread}")
    p, hidden, batch = run.config.p, run.config.hidden, run.config.batch_size
    flops_per_step = 3 * 2 * batch * hidden * p  # three GEMMs of the hand-derived gradient
    chain_steps = settings.num_chains * (settings.num_burnin + settings.num_draws)
    achieved = flops_per_step * chain_steps / (timings["native"] / n) / 1e9
    peak = matmul_peak_gflops()
    print(
        f"native GEMM throughput {achieved:.1f} GFLOP/s = {achieved / peak:.0%} of the measured matmul peak {peak:.1f}"
    )
    if args.samplers:
        print(
            f"\nper sampler, {len(chosen[:3])} checkpoints, {settings.num_chains} chains x {settings.num_draws} draws:"
        )
        sampler_rows(run, chosen[:3], settings)
    if args.late_run:
        use_kernels(True)
        late_checkpoint_rows(args.late_run, settings)


if __name__ == "__main__":
    main()

"""LLC speed for model families without a hand-derived gradient: the native sampler (chains batched by
`torch.func.vmap`) against devinterp 1.3.2 (the `devinterp` backend: the same network as an nn.Module, chains one
after another), in one process, on the same checkpoints of one run.

Prints wall time per estimate of each backend, the estimates side by side and the ratio. The native estimate also
observes the chains on the full training set (its honest diagnostics and locality), which devinterp does not:
that cost (at most a quarter of the sampling's, `grokslt.estimation.observables`) is inside its time.

    grokslt train --model mlp --loss cross_entropy --p 53 --train-frac 0.4 --hidden 48 --embed 12 --lr 5e-3 \\
        --weight-decay 2e-4 --max-steps 25000 --eval-every 250 --no-early-stop --out /tmp/mlp
    python benchmarks/bench_families.py --run /tmp/mlp [--preset devinterp_grokking] [--checkpoints 5] [--threads 1]
        [--step-size 1e-5 --num-draws 200 --num-burnin 0]   (the transformer's chains diverge at paper_code's step)
"""

from __future__ import annotations

import argparse

import numpy as np

from grokslt import runtime
from grokslt.estimation.checkpoint_llc import estimate_checkpoints
from grokslt.estimation.llc import sampler_settings
from grokslt.training.runs import load_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--run", required=True)
    parser.add_argument("--preset", default="paper_code")
    parser.add_argument("--checkpoints", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--step-size", type=float, help="the preset's, unless given")
    parser.add_argument("--num-draws", type=int, help="the preset's, unless given")
    parser.add_argument("--num-burnin", type=int, help="the preset's, unless given")
    args = parser.parse_args()
    runtime.configure(args.threads)
    run = load_run(args.run)
    steps = list(run.checkpoints)
    chosen = [steps[i] for i in np.linspace(0, len(steps) - 1, args.checkpoints).round().astype(int)]
    settings = sampler_settings(args.preset, step_size=args.step_size, num_draws=args.num_draws,
                                num_burnin=args.num_burnin)  # fmt: skip
    walls = {"native": [], "devinterp": []}
    for step in chosen:
        estimates = {}
        for backend in walls:
            [(result, wall)] = estimate_checkpoints(
                run.data, [(step, run.load(step))], settings, run.batch_size, 0, backend, network=run.network
            )
            walls[backend].append(wall)
            estimates[backend] = (result.llc_mean, result.llc_std)
        (native, native_sd), (devinterp, devinterp_sd) = estimates["native"], estimates["devinterp"]
        print(f"step {step:6d}: native {native:9.2f} (chain sd {native_sd:.2f}) | devinterp {devinterp:9.2f} "
              f"(chain sd {devinterp_sd:.2f})", flush=True)  # fmt: skip
    chains, draws = settings.num_chains, settings.num_burnin + settings.num_draws
    print(f"\n{run.config.model}, {run.network.n_params()} parameters, batch {run.batch_size}, preset {args.preset} "
          f"({chains} chains x {draws} steps), per estimate:")  # fmt: skip
    for backend, times in walls.items():
        print(f"  {backend:10s} {np.mean(times):6.2f} s")
    print(f"native speed-up: {np.mean(walls['devinterp']) / np.mean(walls['native']):.2f}x vs devinterp")


if __name__ == "__main__":
    main()

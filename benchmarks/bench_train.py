"""Training speed: our loop against the authors' way, in one process, on the same seed.

The reference is the straightforward loop: `nn.Linear` layers on one-hot inputs, a fresh
`DataLoader` iterator per step, autograd, `torch.optim.Adam`, and every 100 steps the authors'
evaluation (one example at a time over the train and validation sets). Ours gathers the first layer,
keeps the data in index tensors, uses the hand-derived gradient and evaluates each set in one call.
Both must produce the same training losses. Both run in this process with the same allocator setting
(`grokslt.runtime`), so the ratio measures the loops alone.

`--late DIR` adds the subnormal-float rows: our training steps/s early in the long baseline (no early
stop) and past step 25,000, where weight decay has driven many weights and Adam moments subnormal, each
with subnormals flushed to zero (grokslt's default) and with IEEE subnormals. DIR caches the long run's
state (trained once, flushed: about a minute).

    python benchmarks/bench_train.py [--steps 1000] [--threads 1 2] [--late DIR [--late-step 26000]]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from grokslt import runtime
from grokslt.io import load_torch
from grokslt.training.data import make_dataset, one_hot_inputs, one_hot_targets
from grokslt.training.loss import authors_logged_loss, centred_loss
from grokslt.training.model import centred_loss_and_grad
from grokslt.training.train import RESUME_FILE, TrainConfig, Trainer, evaluate, train


def reference_losses(config: TrainConfig, steps: int) -> tuple[list[float], float]:
    data = make_dataset(config.p, config.train_frac, config.seed)
    a, b, c = data.subset("train")
    dataset = TensorDataset(one_hot_inputs(a, b, config.p), one_hot_targets(c, config.p))
    torch.manual_seed(config.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(2 * config.p, config.hidden, bias=False),
        Square(),
        torch.nn.Linear(config.hidden, config.p, bias=False),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=True)
    val_a, val_b, val_c = data.subset("val")
    val_set = TensorDataset(one_hot_inputs(val_a, val_b, config.p), one_hot_targets(val_c, config.p))
    losses = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        x, y = next(iter(loader))
        optimizer.zero_grad()
        loss = centred_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % config.eval_every == 0:
            for evaluation_set in (dataset, val_set):
                authors_evaluation(model, evaluation_set)
    return losses, time.perf_counter() - start


@torch.no_grad()
def authors_evaluation(model, dataset) -> tuple[float, float]:
    """One example at a time, as the authors' `test` does."""
    correct, total = 0, 0.0
    for x, y in dataset:
        out = model(x)
        total += authors_logged_loss(out[None], y[None]).item()
        correct += int(out.argmax() == y.argmax())
    return correct / len(dataset), total / len(dataset)


class Square(torch.nn.Module):
    def forward(self, x):
        return x.square()


def our_losses(config: TrainConfig, steps: int) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, out)
        a, b, c = trainer.train_a, trainer.train_b, trainer.train_c
        W, V = trainer.model.W, trainer.model.V
        losses = []
        start = time.perf_counter()
        for step in range(1, steps + 1):
            batch = trainer.sampler()
            loss, W.grad, V.grad = centred_loss_and_grad(W.detach(), V.detach(), a[batch], b[batch], c[batch])
            trainer.optimizer.step()
            losses.append(loss.item())
            if step % config.eval_every == 0:
                evaluate(trainer.model, trainer.data, trainer.network)
        return losses, time.perf_counter() - start


def long_baseline_state(directory: str, step: int) -> dict:
    """The resume state of the long baseline (no early stop) at `step`, trained once into `directory`."""
    config = TrainConfig(early_stop=False, max_steps=step)
    out = f"{directory}/long_baseline_T{step}"
    runtime.set_subnormals("flush")
    train(config, out, progress=False)
    return load_torch(f"{out}/{RESUME_FILE}")


def steps_per_second(config: TrainConfig, state: dict | None, steps: int, subnormals: str) -> float:
    """Training steps/s (no evaluations) from `state` (None: the initial weights) in a subnormal mode."""
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, out)
        if state is not None:
            trainer.restore(state)
        runtime.set_subnormals(subnormals)
        start = time.perf_counter()
        for _ in range(steps):
            trainer.train_step()
        elapsed = time.perf_counter() - start
    runtime.set_subnormals("flush")
    return steps / elapsed


def late_training_rows(directory: str, late_step: int, steps: int) -> None:
    late = long_baseline_state(directory, late_step)
    config = TrainConfig(early_stop=False, max_steps=late["config"]["max_steps"] + steps)
    late = {**late, "config": dataclasses.asdict(config), "finished": False}
    steps_per_second(config, None, steps, "flush")  # warm-up: the first timed loop of a process is slower
    rates = {mode: [steps_per_second(config, start, steps, mode) for start in (None, late)] for mode in MODES}
    print(f"long baseline, {steps} training steps (no evaluation), one thread:")
    for mode, (early, later) in rates.items():
        print(
            f"  subnormals {mode:5s}: early (step 0) {early:7.1f} steps/s | late (step {late_step}) {later:7.1f} "
            f"steps/s | late/early {later / early:.2f} | late vs early flushed {later / rates['flush'][0]:.2f}"
        )


MODES = ("flush", "ieee")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--late", metavar="DIR", help="also time late training steps; DIR caches the long run")
    parser.add_argument("--late-step", type=int, default=26000)
    args = parser.parse_args()
    config = TrainConfig()  # the baseline: p 53, K 1024, Adam lr 1e-4, wd 1e-5, batch 128
    print(f"baseline model p={config.p} K={config.hidden} batch={config.batch_size}, {args.steps} steps")
    for threads in args.threads:
        runtime.configure(threads)
        ref, ref_time = reference_losses(config, args.steps)
        ours, our_time = our_losses(config, args.steps)
        worst = max(abs(x - y) / abs(x) for x, y in zip(ref, ours, strict=True))
        print(
            f"threads={threads}: reference {args.steps / ref_time:7.1f} steps/s | "
            f"ours {args.steps / our_time:7.1f} steps/s | speed-up {ref_time / our_time:4.2f}x | "
            f"max relative loss difference {worst:.1e} (final loss {ours[-1]:.6f} vs {ref[-1]:.6f})"
        )
    if args.late:
        runtime.configure(1)
        late_training_rows(args.late, args.late_step, args.steps)


if __name__ == "__main__":
    main()

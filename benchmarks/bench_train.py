"""Training speed: our loop against the authors' way, in one process, on the same seed.

The reference is the straightforward loop: `nn.Linear` layers on one-hot inputs, a fresh
`DataLoader` iterator per step, autograd, `torch.optim.Adam`, and every 100 steps the authors'
evaluation (one example at a time over the train and validation sets). Ours gathers the first layer,
keeps the data in index tensors, uses the hand-derived gradient and evaluates each set in one call.
Both must produce the same training losses. Both run in this process with the same allocator setting
(`grokslt.runtime`), so the ratio measures the loops alone.

    python benchmarks/bench_train.py [--steps 1000] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from grokslt import runtime
from grokslt.data import make_dataset, one_hot_inputs, one_hot_targets
from grokslt.loss import authors_logged_loss, centred_loss
from grokslt.model import centred_loss_and_grad
from grokslt.train import TrainConfig, Trainer, evaluate


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
                evaluate(trainer.model, trainer.data)
        return losses, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
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


if __name__ == "__main__":
    main()

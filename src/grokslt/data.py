"""Modular addition on Z_p x Z_p, split into a training and a validation set (paper section 3.1).

Inputs are stored as index pairs (a, b) rather than one-hot vectors x = [e_a; e_b]: the network's
first layer is then a gather (see `grokslt.model`). `one_hot_inputs` builds the dense form when needed.
"""

from __future__ import annotations

import random
import zipfile
from dataclasses import dataclass

import numpy as np
import torch

SPLIT_MODES = ("authors", "numpy")


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % k for k in range(2, int(n**0.5) + 1))


def validate_task(p, train_frac, seed) -> None:
    """Reject impossible task settings with a message naming the value."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 3 or not is_prime(p):
        raise ValueError(f"p = {p!r}: expected a prime integer >= 3")
    if isinstance(train_frac, bool) or not isinstance(train_frac, (int, float)):
        raise ValueError(f"train_frac = {train_frac!r}: expected a number in (0, 1)")
    if not 0 < train_frac < 1:
        raise ValueError(f"train_frac = {train_frac!r}: expected a number in (0, 1)")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed = {seed!r}: expected a non-negative integer")


def authors_pair_order(p: int) -> list[tuple[int, int]]:
    """All p^2 pairs in the iteration order of a Python set of (a, b) tuples.

    The authors enumerate the dataset from such a set; integer and tuple hashes are not salted,
    so the order is the same on every run of the same CPython.
    """
    return list({(a, b) for a in range(p) for b in range(p)})


@dataclass(frozen=True)
class ModularAddition:
    """The full dataset and its split. `pairs[i] = (a, b)`, `targets[i] = (a + b) mod p`."""

    p: int
    pairs: torch.Tensor  # [p^2, 2] int64
    train_idx: torch.Tensor  # [n_train] int64, rows of `pairs`
    val_idx: torch.Tensor  # [n_val] int64

    @property
    def targets(self) -> torch.Tensor:
        return (self.pairs[:, 0] + self.pairs[:, 1]) % self.p

    @property
    def n_train(self) -> int:
        return len(self.train_idx)

    def same_split(self, other: ModularAddition) -> bool:
        return self.p == other.p and all(
            torch.equal(mine, theirs)
            for mine, theirs in zip(
                (self.pairs, self.train_idx, self.val_idx), (other.pairs, other.train_idx, other.val_idx), strict=True
            )
        )

    def subset(self, which: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(a, b, target) index tensors of the train or val set."""
        idx = {"train": self.train_idx, "val": self.val_idx}[which]
        pairs = self.pairs[idx]
        return pairs[:, 0], pairs[:, 1], self.targets[idx]


def make_dataset(p: int, train_frac: float, seed: int, split: str = "authors") -> ModularAddition:
    """The train/val split of all p^2 pairs.

    `authors`: pairs in set order, indices 0..p^2-1 shuffled by `random.seed(seed); random.shuffle`,
    the first int(train_frac p^2) for training (the authors' split: 1123 of 2809 for p = 53).
    `numpy`: pairs in lexicographic order, a seeded numpy permutation of the same size.
    """
    validate_task(p, train_frac, seed)
    if split not in SPLIT_MODES:
        raise ValueError(f"split = {split!r}: expected one of {SPLIT_MODES}")
    n_total = p * p
    n_train = int(train_frac * n_total)
    if not 0 < n_train < n_total:
        raise ValueError(
            f"train_frac = {train_frac!r}: gives {n_train} of {n_total} pairs for training; "
            "expected at least one pair in each set"
        )
    if split == "authors":
        pairs = authors_pair_order(p)
        order = list(range(n_total))
        random.seed(seed)
        random.shuffle(order)
    else:
        pairs = [(a, b) for a in range(p) for b in range(p)]
        order = np.random.default_rng(seed).permutation(n_total).tolist()
    order_t = torch.tensor(order, dtype=torch.int64)
    return ModularAddition(
        p=p,
        pairs=torch.tensor(pairs, dtype=torch.int64),
        train_idx=order_t[:n_train],
        val_idx=order_t[n_train:],
    )


def one_hot_inputs(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """x = [e_a; e_b] in R^{2p}, one row per pair."""
    x = torch.zeros(len(a), 2 * p)
    x[torch.arange(len(a)), a] = 1.0
    x[torch.arange(len(b)), p + b] = 1.0
    return x


def one_hot_targets(c: torch.Tensor, p: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(c, p).to(torch.get_default_dtype())


def save_dataset(data: ModularAddition, path) -> None:
    from grokslt.io import save_npz

    save_npz(
        path,
        p=np.array(data.p),
        pairs=data.pairs.numpy(),
        train_idx=data.train_idx.numpy(),
        val_idx=data.val_idx.numpy(),
    )


def load_dataset(path) -> ModularAddition:
    """A split written by `save_dataset`; a file that is not one is a `BadInput` naming it."""
    from grokslt.errors import BadInput

    try:
        with np.load(path) as arrays:
            return ModularAddition(
                p=int(arrays["p"]),
                pairs=torch.from_numpy(arrays["pairs"]),
                train_idx=torch.from_numpy(arrays["train_idx"]),
                val_idx=torch.from_numpy(arrays["val_idx"]),
            )
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise BadInput(f"{path}: not a dataset written by `grokslt dataset` ({error})") from None

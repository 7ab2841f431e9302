"""Modular arithmetic on Z_p x Z_p, split into a training and a validation set (paper section 3.1).

The paper's task is addition, c = (a + b) mod p; TASKS names the others a run may train on. Adding a
task is one entry there. Inputs are stored as index pairs (a, b) rather than one-hot vectors
x = [e_a; e_b]: the network's first layer is then a gather (see `grokslt.training.model`). `one_hot_inputs`
builds the dense form when needed.
"""

from __future__ import annotations

import random
import zipfile
from dataclasses import dataclass

import numpy as np
import torch

from grokslt.errors import BadInput
from grokslt.settings import check_fields, setting

SPLIT_MODES = ("authors", "numpy")
# task -> its target c(a, b) mod p, on int64 tensors; the paper proves its closed forms for "add"
TASKS = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
    "x2y2": lambda a, b, p: (a * a + b * b) % p,
}
PAPER_TASK = "add"


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % k for k in range(2, int(n**0.5) + 1))


@dataclass(frozen=True)
class DatasetSettings:
    """What defines a dataset and its split (the training settings extend these)."""

    p: int = setting(53, "prime modulus", minimum=3)
    train_frac: float = setting(
        0.4, "fraction of the p^2 pairs used for training", exclusive_minimum=0, exclusive_maximum=1
    )
    seed: int = setting(0, "seed of the split (and of the weights and batches)", minimum=0, maximum=2**63 - 1)
    split: str = setting("authors", "authors (their random.shuffle of set-ordered pairs) | numpy", choices=SPLIT_MODES)
    task: str = setting(
        PAPER_TASK, "target c(a, b) mod p: add (the paper's), sub, mul, x2y2 = a^2 + b^2", choices=TASKS
    )

    def check(self) -> None:
        if not is_prime(self.p):
            raise BadInput(f"p = {self.p!r}: expected a prime integer >= 3")
        n_total = self.p * self.p
        n_train = int(self.train_frac * n_total)
        if not 0 < n_train < n_total:
            raise BadInput(
                f"train_frac = {self.train_frac!r}: gives {n_train} of {n_total} pairs for training; "
                "expected at least one pair in each set"
            )

    def dataset(self) -> ModularArithmetic:
        return make_dataset(self.p, self.train_frac, self.seed, self.split, self.task)


def authors_pair_order(p: int) -> list[tuple[int, int]]:
    """All p^2 pairs in the iteration order of a Python set of (a, b) tuples.

    The authors enumerate the dataset from such a set; integer and tuple hashes are not salted,
    so the order is the same on every run of the same CPython.
    """
    return list({(a, b) for a in range(p) for b in range(p)})


@dataclass(frozen=True)
class ModularArithmetic:
    """The full dataset and its split. `pairs[i] = (a, b)`, `targets[i] = TASKS[task](a, b, p)`."""

    p: int
    pairs: torch.Tensor  # [p^2, 2] int64
    train_idx: torch.Tensor  # [n_train] int64, rows of `pairs`
    val_idx: torch.Tensor  # [n_val] int64
    task: str = PAPER_TASK

    @property
    def targets(self) -> torch.Tensor:
        return TASKS[self.task](self.pairs[:, 0], self.pairs[:, 1], self.p)

    @property
    def n_train(self) -> int:
        return len(self.train_idx)

    def same_split(self, other: ModularArithmetic) -> bool:
        return (
            self.p == other.p
            and self.task == other.task
            and all(
                torch.equal(mine, theirs)
                for mine, theirs in zip(
                    (self.pairs, self.train_idx, self.val_idx),
                    (other.pairs, other.train_idx, other.val_idx),
                    strict=True,
                )
            )
        )

    def subset(self, which: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(a, b, target) index tensors of a named set of pairs (`DATA_SUBSETS`): the training or validation
        pairs, all pairs, or `residue:c`, the training pairs whose answer is c."""
        kind, residue = parse_subset(which)
        if kind == "all":
            idx = torch.arange(len(self.pairs))
        elif kind == "residue":
            if not 0 <= residue < self.p:
                raise BadInput(f"data = {which!r}: residue {residue} outside 0..{self.p - 1} (p = {self.p})")
            idx = self.train_idx[self.targets[self.train_idx] == residue]
        else:
            idx = {"train": self.train_idx, "val": self.val_idx}[kind]
        if len(idx) == 0:
            raise BadInput(f"data = {which!r}: no pairs in that subset of this dataset")
        pairs = self.pairs[idx]
        return pairs[:, 0], pairs[:, 1], self.targets[idx]

    def subsets_on(self, names, device="cpu") -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """The named subsets (`subset`) as contiguous tensors on `device`, by name: what a loss function of
        `grokslt.estimation` holds."""
        return {name: tuple(t.to(device).contiguous() for t in self.subset(name)) for name in names}


DATA_SUBSETS = ("train", "val", "all", "residue:c")


def parse_subset(which: str) -> tuple[str, int | None]:
    """("train" | "val" | "all", None) or ("residue", c) from a subset's name; bad names end in BadInput."""
    if which in DATA_SUBSETS[:3]:
        return which, None
    kind, _, value = str(which).partition(":")
    if kind == "residue" and value.strip().lstrip("-").isdigit():
        return kind, int(value)
    raise BadInput(f"data = {which!r}: expected one of {list(DATA_SUBSETS)} (c an answer in 0..p-1)")


def make_dataset(p: int, train_frac: float, seed: int, split: str = "authors", task: str = PAPER_TASK):
    """The train/val split of all p^2 pairs, labelled by `task`; the split does not depend on the task.

    `authors`: pairs in set order, indices 0..p^2-1 shuffled by `random.seed(seed); random.shuffle`,
    the first int(train_frac p^2) for training (the authors' split: 1123 of 2809 for p = 53).
    `numpy`: pairs in lexicographic order, a seeded numpy permutation of the same size.
    """
    check_fields(DatasetSettings(p, train_frac, seed, split, task))
    n_total = p * p
    n_train = int(train_frac * n_total)
    if split == "authors":
        pairs = authors_pair_order(p)
        order = list(range(n_total))
        random.seed(seed)
        random.shuffle(order)
    else:
        pairs = [(a, b) for a in range(p) for b in range(p)]
        order = np.random.default_rng(seed).permutation(n_total).tolist()
    order_t = torch.tensor(order, dtype=torch.int64)
    return ModularArithmetic(
        p=p,
        pairs=torch.tensor(pairs, dtype=torch.int64),
        train_idx=order_t[:n_train],
        val_idx=order_t[n_train:],
        task=task,
    )


def one_hot_inputs(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """x = [e_a; e_b] in R^{2p}, one row per pair."""
    x = torch.zeros(len(a), 2 * p)
    x[torch.arange(len(a)), a] = 1.0
    x[torch.arange(len(b)), p + b] = 1.0
    return x


def one_hot_targets(c: torch.Tensor, p: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(c, p).to(torch.get_default_dtype())


def save_dataset(data: ModularArithmetic, path) -> None:
    from grokslt.io import save_npz

    save_npz(
        path,
        p=np.array(data.p),
        pairs=data.pairs.numpy(),
        train_idx=data.train_idx.numpy(),
        val_idx=data.val_idx.numpy(),
        task=np.array(data.task),
    )


def load_dataset(path) -> ModularArithmetic:
    """A split written by `save_dataset`; a file that is not one is a `BadInput` naming it."""
    try:
        with np.load(path) as arrays:
            return ModularArithmetic(
                p=int(arrays["p"]),
                pairs=torch.from_numpy(arrays["pairs"]),
                train_idx=torch.from_numpy(arrays["train_idx"]),
                val_idx=torch.from_numpy(arrays["val_idx"]),
                task=str(arrays["task"]),
            )
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise BadInput(f"{path}: not a dataset written by `grokslt dataset` ({error})") from None

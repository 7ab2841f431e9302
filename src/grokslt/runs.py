"""A training run on disk: its settings, dataset and checkpoints, and the selection of checkpoints
that one job of a later stage works on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from grokslt.data import ModularAddition, make_dataset
from grokslt.io import list_checkpoints, load_checkpoint
from grokslt.train import TrainConfig


@dataclass
class Run:
    path: Path
    config: TrainConfig
    data: ModularAddition
    checkpoints: dict[int, Path]

    def load(self, step: int) -> dict[str, torch.Tensor]:
        return load_checkpoint(self.checkpoints[step])


def load_run(path: str | Path) -> Run:
    path = Path(path)
    meta = path / "run.json"
    if not meta.exists():
        raise ValueError(f"--run {path}: no run.json there; expected a directory written by `grokslt train`")
    config = TrainConfig(**json.loads(meta.read_text())["config"])
    checkpoints = list_checkpoints(path / "checkpoints")
    if not checkpoints:
        raise ValueError(f"--run {path}: no checkpoints in {path / 'checkpoints'}")
    data = make_dataset(config.p, config.train_frac, config.seed, config.split)
    return Run(path, config, data, checkpoints)


def parse_chunk(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--chunk {text!r}: expected i/n with integers 0 <= i < n") from None
    if not 0 <= index < count:
        raise ValueError(f"--chunk {text!r}: expected i/n with integers 0 <= i < n")
    return index, count


def select_steps(available: list[int], steps: list[int] | None = None, chunk: str | None = None) -> list[int]:
    """The requested steps (all must exist), or chunk i of n contiguous blocks of the sorted steps."""
    if steps is not None and chunk is not None:
        raise ValueError("--steps and --chunk: give one or the other")
    if steps is not None:
        missing = sorted(set(steps) - set(available))
        if missing:
            raise ValueError(f"--steps {missing}: no such checkpoints (have {available[0]}..{available[-1]})")
        return sorted(steps)
    if chunk is None:
        return list(available)
    index, count = parse_chunk(chunk)
    size = len(available)
    return available[index * size // count : (index + 1) * size // count]


def parse_steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--steps {text!r}: expected comma-separated integers") from None


def step_seed(seed: int, step: int) -> int:
    """A 63-bit seed for the random draws made at one checkpoint, from a job's seed and the step, so
    that a checkpoint's result does not depend on which other checkpoints share its job."""
    return int(np.random.SeedSequence([seed, step]).generate_state(1, dtype=np.uint64)[0] >> 1)

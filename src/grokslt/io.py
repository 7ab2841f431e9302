"""Atomic file output and checkpoint storage.

Every file is written to a temporary name in its own directory and renamed into place, so a killed
job never leaves a half-written file that looks finished.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

CHECKPOINT_PATTERN = re.compile(r"step_(\d+)\.safetensors$")


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | os.PathLike, data: Mapping) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def format_cell(value) -> str:
    """Floats in shortest round-trip form, so equal values give equal bytes."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    return "" if value is None else str(value)


def write_csv(path: str | os.PathLike, rows: Iterable[Mapping], columns: list[str]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([format_cell(row.get(col)) for col in columns])
    write_text(path, buffer.getvalue())


def checkpoint_path(directory: str | os.PathLike, step: int) -> Path:
    return Path(directory) / f"step_{step:07d}.safetensors"


def save_params(path: str | os.PathLike, params: Mapping[str, torch.Tensor]) -> None:
    with atomic_path(path) as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in params.items()}, str(tmp))


def save_checkpoint(directory: str | os.PathLike, step: int, params: Mapping[str, torch.Tensor]):
    save_params(checkpoint_path(directory, step), params)


def load_checkpoint(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    return load_file(str(path))


def list_checkpoints(directory: str | os.PathLike) -> dict[int, Path]:
    """{step: path} of the checkpoints in `directory`, sorted by step."""
    found = {}
    for path in Path(directory).glob("step_*.safetensors"):
        match = CHECKPOINT_PATTERN.search(path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def save_npz(path: str | os.PathLike, **arrays) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def save_torch(path: str | os.PathLike, obj) -> None:
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def load_torch(path: str | os.PathLike):
    return torch.load(path, weights_only=True)

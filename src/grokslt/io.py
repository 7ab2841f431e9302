"""Atomic file output and checkpoint storage.

Every file is written to a temporary name in its own directory and renamed into place, so a killed
job never leaves a half-written file that looks finished. Files are serialised in memory and written
by Python, so a full disk or a read-only directory is an `OSError` that names the file, never a
library's internal error; a file that cannot be read back is a `BadInput` that names it.

torch and safetensors are imported by the functions that store tensors: the commands that only read and write
tables (figures, summaries, claims) start without them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import pickle
import re
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from grokslt.errors import BadInput

if TYPE_CHECKING:
    import torch

CHECKPOINT_PATTERN = re.compile(r"step_(\d+)\.safetensors$")


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would outlive the rename
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from error
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> str:
    return write_bytes(path, text.encode())


def write_bytes(path: str | os.PathLike, data: bytes) -> str:
    """Write `data` atomically; returns its SHA-256, for the writer to record (`grokslt.artefacts`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_json(path: str | os.PathLike, data: Mapping) -> str:
    return write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def format_cell(value) -> str:
    """Floats in shortest round-trip form, so equal values give equal bytes."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    return "" if value is None else str(value)


def write_csv(path: str | os.PathLike, rows: Iterable[Mapping], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([format_cell(row.get(col)) for col in columns])
    return write_text(path, buffer.getvalue())


def checkpoint_path(directory: str | os.PathLike, step: int) -> Path:
    return Path(directory) / f"step_{step:07d}.safetensors"


def save_params(path: str | os.PathLike, params: Mapping[str, torch.Tensor]) -> str:
    from safetensors.torch import save

    return write_bytes(path, save({k: v.detach().contiguous().cpu() for k, v in params.items()}))


def save_checkpoint(directory: str | os.PathLike, step: int, params: Mapping[str, torch.Tensor]) -> str:
    return save_params(checkpoint_path(directory, step), params)


def load_checkpoint(path: str | os.PathLike, sha256: str | None = None, fix: str = "") -> dict[str, torch.Tensor]:
    """The tensors of a checkpoint; given `sha256` (what its writer recorded), its bytes must match it."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise BadInput(f"{path}: not the checkpoint training wrote (corrupt or edited: its checksum differs from "
                       f"run.json's){fix}")  # fmt: skip
    try:
        tensors = load(data)
    except SafetensorError as error:
        raise BadInput(f"{path}: not a readable checkpoint ({error}); it is truncated or corrupt") from None
    return {name: tensors[name] for name in sorted(tensors)}  # `load` returns them in a random order


def list_checkpoints(directory: str | os.PathLike) -> dict[int, Path]:
    """{step: path} of the checkpoints in `directory`, sorted by step."""
    found = {}
    for path in Path(directory).glob("step_*.safetensors"):
        match = CHECKPOINT_PATTERN.search(path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def save_npz(path: str | os.PathLike, **arrays) -> str:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return write_bytes(path, buffer.getvalue())


def save_torch(path: str | os.PathLike, obj) -> None:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_bytes(path, buffer.getvalue())


def load_torch(path: str | os.PathLike):
    import torch

    data = io.BytesIO(Path(path).read_bytes())
    try:
        return torch.load(data, weights_only=True)
    except (RuntimeError, EOFError, ValueError, pickle.UnpicklingError):
        raise BadInput(f"{path}: not a readable torch file (truncated or corrupt); delete it to start over") from None

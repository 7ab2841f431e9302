"""The files one stage writes and a later stage reads, sealed by their writer and read back strictly.

A stage that writes a table or traces a later stage reads seals it: beside `X` it writes `X.seal.json`,
the SHA-256 of the bytes it wrote, the command that wrote them and, for a run's tables, the digest of
the run's settings (`config_digest`) they were computed from. A checkpoint's checksum is recorded in
its run's run.json as it is written, and run.json carries the checksum of its own contents
(`record_digest`), its settings included. A reader takes each file through `unsealed` and one strict
reader per kind of table (`read_table` with a `TableKind`: required columns, numbers where numbers
belong, no blank where a True/False is expected, steps unique and from the named run), so an edited,
truncated or foreign file fails in one line that names the file, the column and what to rerun,
instead of yielding a number.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from grokslt.errors import BadInput
from grokslt.io import write_json

SEAL_SUFFIX = ".seal.json"
REBUILD = "delete it and run the workflow again (Snakemake rebuilds it), or rerun `{writer}`"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_digest(config: Mapping) -> str:
    """The identity of a run: the SHA-256 of its settings, as run.json records them."""
    return sha256(json.dumps(dict(config), sort_keys=True).encode())


def record_digest(record: Mapping) -> str:
    """The checksum of a run record's contents (every field but the checksum itself)."""
    return sha256(json.dumps({k: v for k, v in record.items() if k != "record_sha256"}, sort_keys=True).encode())


def seal_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SEAL_SUFFIX)


def seal(path: str | Path, digest: str, writer: str, run: str | None = None) -> None:
    """Record beside `path` the checksum of the bytes just written there, who wrote them and from which run."""
    write_json(seal_path(path), {"file": Path(path).name, "sha256": digest, "writer": writer, "run": run})


def unsealed(path: str | Path, run: str | None = None) -> tuple[bytes, dict]:
    """The bytes of a sealed file and its seal, refused in one line unless they are the bytes its writer
    recorded and (given `run`, a `config_digest`) were computed from that run."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: missing; run the workflow again to rebuild it") from None
    try:
        stamp = json.loads(seal_path(path).read_text())
        writer, digest, source = stamp["writer"], stamp["sha256"], stamp["run"]
    except FileNotFoundError:
        raise BadInput(
            f"{path}: no checksum beside it ({seal_path(path).name}; written by an older grokslt or copied without "
            "it); delete it and run the workflow again"
        ) from None
    except (json.JSONDecodeError, KeyError, TypeError):
        raise BadInput(
            f"{seal_path(path)}: not a seal written by grokslt; delete it and {path}, and run again"
        ) from None  # noqa: E501
    if sha256(data) != digest:
        raise BadInput(
            f"{path}: not the bytes `{writer}` wrote (edited, truncated or corrupt: its checksum differs from "
            f"{seal_path(path).name}); {REBUILD.format(writer=writer)}"
        )
    if run is not None and source != run:
        raise BadInput(
            f"{path}: computed from another run's checkpoints (or before the run was trained again); "
            f"{REBUILD.format(writer=writer)}"
        )
    return data, stamp


@dataclass(frozen=True)
class TableKind:
    """What a table of one kind must hold: `required` columns, `numbers` among them, True/False `flags`, True/False
    `estimate_flags` (blank only in the rows where the column `estimate` is blank) and unique `step`s."""

    name: str
    required: tuple[str, ...]
    numbers: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    estimate_flags: tuple[str, ...] = ()
    estimate: str | None = None
    may_be_empty: bool = False


LLC_FLAGS = ("converged", "local")
LLC_TABLE = TableKind(
    "LLC table",
    required=("step", "llc_mean", *LLC_FLAGS),
    numbers=("llc_mean",),
    flags=LLC_FLAGS,
    may_be_empty=True,
)
# `grokslt coefficient`: the data-rank truth r / 2 (blank where the rule does not apply) beside the nulls
COEFFICIENT_TABLE = TableKind(
    "coefficient table",
    required=("step", "loss_fraction", "interpolating", "rank_gap", "half_rank", "half_rank_stderr", "half_trace",
              "keff_llc", "half_d"),  # fmt: skip
    numbers=("loss_fraction", "half_trace", "half_d"),
    flags=("interpolating", "rank_gap"),
)
LOSS_DATA = TableKind(
    "loss_data.csv",
    required=("step", "diverged", "llc", *LLC_FLAGS),
    numbers=("llc",),
    flags=("diverged",),
    estimate_flags=LLC_FLAGS,
    estimate="llc",
)
# what the summary of a run reads besides
SUMMARISED = dataclasses.replace(
    LOSS_DATA,
    required=(*LOSS_DATA.required, "train_acc", "val_acc", "llc_std", "trace_hutchinson", "K_eff", "keff_llc"),
    numbers=(*LOSS_DATA.numbers, "train_acc", "val_acc", "trace_hutchinson"),
)


def read_table(path: str | Path, kind: TableKind, run: str | None = None, steps: Iterable[int] | None = None):
    """The table at `path`, sealed by its writer (`unsealed`) and holding what `kind` requires; given `steps`
    (the run's checkpoints), each of its steps must be one of them."""
    path = Path(path)
    data, stamp = unsealed(path, run)
    fix = REBUILD.format(writer=stamp["writer"])
    if not data.strip():
        raise BadInput(f"{path}: empty, not even a header; {fix}")
    # blank only where the writer left a cell empty or wrote a NaN: 'n/a', 'NULL' and the like are text here
    table = pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=["", "nan"])
    missing = [c for c in kind.required if c not in table.columns]
    if missing:
        raise BadInput(f"{path}: no column {missing[0]!r} (a {kind.name} has {', '.join(kind.required)}); {fix}")
    if table.empty and not kind.may_be_empty:
        raise BadInput(f"{path}: no rows; {fix}")
    check_steps(table, path, fix, steps)
    for column in kind.numbers if len(table) else ():  # a header alone reads as text
        if not pd.api.types.is_numeric_dtype(table[column]):
            raise BadInput(f"{path}: column {column!r} holds text where numbers belong; {fix}")
    for column in kind.flags:
        table[column] = flag_column(table, column, None, path, fix)
    for column in kind.estimate_flags:
        table[column] = flag_column(table, column, kind.estimate, path, fix)
    if kind.estimate and len(table) and table[kind.estimate].isna().all() and not table["diverged"].all():
        raise BadInput(f"{path}: column {kind.estimate!r} holds no estimate at all; {fix}")
    return table


def check_steps(table: pd.DataFrame, path: Path, fix: str, steps: Iterable[int] | None) -> None:
    if len(table) and not pd.api.types.is_integer_dtype(table["step"]):
        raise BadInput(f"{path}: column 'step' holds blanks or non-integers; {fix}")
    repeated = sorted(set(table.loc[table["step"].duplicated(), "step"].tolist()))
    if repeated:
        raise BadInput(f"{path}: column 'step' repeats steps {repeated[:5]}; {fix}")
    if steps is not None:
        foreign = sorted(set(table["step"].tolist()) - set(steps))
        if foreign:
            raise BadInput(f"{path}: column 'step' holds steps {foreign[:5]} that are no checkpoints of the run; {fix}")


def flag_column(table: pd.DataFrame, column: str, estimate: str | None, path: Path, fix: str) -> pd.Series:
    """A True/False column as booleans, blank only where the column `estimate` is (then None, in an object
    column): a blank never reads as True."""
    values = table[column].map(lambda v: {"True": True, "False": False, True: True, False: False}.get(v, v))
    blank = values.isna()
    allowed = table[estimate].isna() if estimate else pd.Series(False, index=table.index)
    if (blank & ~allowed).any():
        step = int(table.loc[blank & ~allowed, "step"].iloc[0])
        raise BadInput(f"{path}: column {column!r} is blank at step {step}, where True or False is expected; {fix}")
    odd = ~blank & ~values.isin([True, False])
    if odd.any():
        raise BadInput(f"{path}: column {column!r} holds {values[odd].iloc[0]!r}, expected True or False; {fix}")
    return values.astype(object).where(~blank, None) if blank.any() else values.astype(bool)


def read_tables(paths: Iterable[str | Path], kind: TableKind, run: str | None = None, steps=None,
                chunks: bool = True) -> pd.DataFrame:  # fmt: skip
    """The rows of one run's tables in step order, each read by `read_table`; where they are `chunks` of one
    trajectory, a step in two of them (a chunk given twice, or chunks of two different splits) is refused."""
    paths = list(paths)
    frames = [read_table(path, kind, run, steps) for path in paths]
    seen: dict[int, Path] = {}
    for path, frame in zip(paths, frames, strict=True) if chunks else ():
        for step in frame["step"].tolist():
            if step in seen:
                raise BadInput(f"{path}: step {step} is also in {seen[step]} (a chunk given twice?); give each once")
            seen[step] = Path(path)
    filled = [frame for frame in frames if len(frame)]
    if not filled:
        return frames[0] if frames else pd.DataFrame({"step": pd.Series(dtype=int)})
    return pd.concat(filled, ignore_index=True).sort_values("step", ignore_index=True)


def read_arrays(path: str | Path, required: Iterable[str] = (), run: str | None = None) -> dict[str, np.ndarray]:
    """The arrays of a sealed .npz (LLC traces), with the `required` names."""
    data, stamp = unsealed(path, run)
    fix = REBUILD.format(writer=stamp["writer"])
    try:
        with np.load(io.BytesIO(data)) as arrays:
            found = {name: arrays[name] for name in arrays.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
        raise BadInput(f"{path}: not a readable .npz ({error}); {fix}") from None
    missing = [name for name in required if name not in found]
    if missing:
        raise BadInput(f"{path}: no array {missing[0]!r}; {fix}")
    return found

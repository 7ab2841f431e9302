"""One workflow at a time on a results directory.

Snakemake locks its working directory, not the outputs: two workflows started from two directories on
one absolute `results` would each delete and rewrite the other's files. The workflow therefore takes
`RESULTS/.grokslt.lock` when it starts executing jobs (not on a dry run) and gives it back when it ends.
A lock whose process is gone (same host, pid not alive: a killed workflow) is taken over with a warning;
one held by a live process, or by another host, refuses the second workflow in one line.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

from grokslt.errors import BadInput

LOCK_NAME = ".grokslt.lock"
log = logging.getLogger(__name__)


def lock_path(results: str | os.PathLike) -> Path:
    return Path(results) / LOCK_NAME


def check_results_directory(results: str | os.PathLike) -> None:
    """`results` must be a directory or not exist yet."""
    if Path(results).exists() and not Path(results).is_dir():
        raise BadInput(f"results = {str(results)!r}: is a file; expected a directory (or a path that does not exist)")


def acquire(results: str | os.PathLike, pid: int | None = None) -> Path:
    """Take the lock of `results` for process `pid` (this one by default), or refuse naming its holder."""
    check_results_directory(results)
    Path(results).mkdir(parents=True, exist_ok=True)
    path = lock_path(results)
    holder = {"host": socket.gethostname(), "pid": pid or os.getpid(), "cwd": os.getcwd(), "started": time.time()}
    for _ in range(2):
        try:
            with open(path, "x") as handle:
                json.dump(holder, handle)
            return path
        except FileExistsError:
            other = _read(path)
            if other is None and time.time() - path.stat().st_mtime < 10:  # being written this instant
                other = {"pid": "?", "host": "?", "cwd": "?"}
            if other is not None and _alive(other):
                raise BadInput(
                    f"{path}: another workflow (pid {other.get('pid')} on {other.get('host')}, started in "
                    f"{other.get('cwd')}) is writing to this results directory; wait for it to end or use "
                    "another `results` (delete the lock only if no such workflow runs)"
                ) from None
            log.warning("%s: taking over the lock of a workflow that is gone (%s)", path, other)
            path.unlink(missing_ok=True)
    raise BadInput(f"{path}: could not take the lock; delete it if no workflow writes to this results directory")


def release(results: str | os.PathLike, pid: int | None = None) -> None:
    """Give the lock back if this process (or `pid`) holds it."""
    path = lock_path(results)
    holder = _read(path)
    if holder is not None and holder.get("pid") == (pid or os.getpid()) and holder.get("host") == socket.gethostname():
        path.unlink(missing_ok=True)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _alive(holder: dict) -> bool:
    """Whether the holder may still run: another host's process cannot be checked, so it counts as alive."""
    if holder.get("host") != socket.gethostname():
        return True  # includes a lock being written this instant (host "?")
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, TypeError, ValueError):
        return True
    return True

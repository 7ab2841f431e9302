"""Process-level settings that make the many small tensor operations of this model fast on a CPU.

Every `grokslt` command goes through `configure` before it computes: torch's thread count, glibc's
allocator thresholds, and flushing of subnormal floats.

Subnormals. Weight decay drives unused weights and Adam's second moments toward zero, where floats
become subnormal; a CPU takes tens of times longer on each operation that touches one, and long runs
then train 20x slower (840 -> 40 steps/s for the baseline past step 25,000). `configure` sets the
FPU to flush subnormal results to zero and read subnormal inputs as zero (x86 FTZ and DAZ, through
`torch.set_flush_denormal`). The mode belongs to the calling thread and is inherited by the threads
it starts, so it is set before torch's thread pool exists; the compiled kernels run on the calling
thread and see it too. It changes no logged number of the baseline run (tests, docs/speed.md); set
`GROKSLT_SUBNORMALS=ieee` for IEEE-exact gradual underflow.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# glibc's mallopt parameters
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_BYTES = 1 << 30


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def keep_freed_memory() -> bool:
    """Stop glibc from returning freed blocks to the OS after every tensor.

    The model's temporaries (about 0.5 MB each) sit above glibc's default mmap threshold, so each one
    is mapped, page-faulted and unmapped anew: that halves the speed of a training step. Raising the
    thresholds keeps the blocks in the heap for reuse. Returns False where glibc is absent.
    """
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES))


def release_freed_memory() -> None:
    """Hand the heap's free blocks back to the OS (glibc's malloc_trim; nothing elsewhere).

    A chain that interleaves its steps with full-batch observations (tens of MB of temporaries each,
    other sizes than the step's) fragments the heap: measured, a MALA chain observed every 2 draws grew by
    13 MB per observation, 20 GB in half an hour. Trimming after each observation keeps it flat."""
    malloc_trim = getattr(_libc(), "malloc_trim", None)
    if malloc_trim is not None:
        malloc_trim(0)


SUBNORMALS_ENV = "GROKSLT_SUBNORMALS"
SUBNORMAL_MODES = ("flush", "ieee")


def subnormal_mode() -> str:
    """'flush' (the default) or 'ieee', from $GROKSLT_SUBNORMALS."""
    mode = os.environ.get(SUBNORMALS_ENV, "flush")
    if mode not in SUBNORMAL_MODES:
        raise ValueError(f"{SUBNORMALS_ENV} = {mode!r}: expected one of {SUBNORMAL_MODES}")
    return mode


def set_subnormals(mode: str) -> bool:
    """Flush subnormals to zero ('flush') or keep IEEE gradual underflow ('ieee') on this thread;
    False where the CPU offers no such switch (then it computes with IEEE subnormals)."""
    if mode not in SUBNORMAL_MODES:
        raise ValueError(f"subnormals = {mode!r}: expected one of {SUBNORMAL_MODES}")
    import torch

    return torch.set_flush_denormal(mode == "flush")


def configure(threads: int, tensors: bool = True) -> None:
    """Set the subnormal mode, torch's thread count and the allocator for a process that computes with torch
    (`tensors`); a process that reads and writes tables only checks the setting and leaves torch unimported."""
    if threads < 1:
        raise ValueError(f"threads = {threads}: expected a positive integer")
    if not tensors:
        return
    import torch

    set_subnormals(subnormal_mode())
    torch.set_num_threads(threads)
    keep_freed_memory()


def checked_device(name: str) -> torch.device:
    """The torch device `name` names, refused in one line when it is not one or this machine has none."""
    import torch

    from grokslt.errors import BadInput

    try:
        device = torch.device(name)
    except RuntimeError:
        raise BadInput(f"--device {name!r}: expected cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise BadInput(f"--device {name!r}: expected cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {name!r}: this torch ({torch.__version__}) sees no CUDA GPU; use --device cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise BadInput(f"--device {name!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    return device

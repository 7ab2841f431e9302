"""Process-level settings that make the many small tensor operations of this model fast on a CPU."""

from __future__ import annotations

import ctypes
import ctypes.util

import torch

# glibc's mallopt parameters
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Stop glibc from returning freed blocks to the OS after every tensor.

    The model's temporaries (about 0.5 MB each) sit above glibc's default mmap threshold, so each one
    is mapped, page-faulted and unmapped anew: that halves the speed of a training step. Raising the
    thresholds keeps the blocks in the heap for reuse. Returns False where glibc is absent.
    """
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    try:
        libc = ctypes.CDLL(libc_name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES))


def configure(threads: int) -> None:
    """Set torch's thread count and the allocator for a compute process."""
    if threads < 1:
        raise ValueError(f"threads = {threads}: expected a positive integer")
    torch.set_num_threads(threads)
    keep_freed_memory()

"""Compiled CPU kernels for the native sampler (`kernels/sgld.c`), built with the system C compiler.

On a CPU, an SGLD step of the gather-form network spends what its three GEMMs leave on passes over
memory: the gather of W's rows, the scatter of their gradient, the centred residual, and the update
with 162,816 fresh Gaussian numbers per chain (torch's Mersenne Twister costs 2.3 ns a number).
`sgld.c` does each in one pass. Its noise comes from 16 interleaved xoshiro128++ streams (seeded by
SplitMix64) through a Box-Muller transform written with exact float operations only: about 4x faster
than torch's, and bit-for-bit the same on every machine.

The library is compiled on first use into a cache (`$GROKSLT_CACHE_DIR`, else `~/.cache/grokslt`),
keyed by source, compiler and CPU, so each kind of node builds its own. Without a compiler, or with
`GROKSLT_CPU_KERNELS=0`, everything runs in torch: the gather and scatter give the same numbers, the
noise comes from torch's generator (another random stream: an equally valid, different estimate).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

SOURCE = Path(__file__).with_name("kernels") / "sgld.c"
LANES = 16
# -ffp-contract=off: no fused multiply-adds, so the results do not depend on the instruction set.
BASE_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared"]
# Tuning for this CPU, tried in order until one compiles (the second flag is x86-only).
TUNINGS = (["-march=native", "-mprefer-vector-width=512"], ["-march=native"], [])

# Argument kinds of each C function: p a pointer, i an int64_t, f a float; and whether it returns a status.
_ARGUMENTS = {"p": ctypes.c_void_p, "i": ctypes.c_int64, "f": ctypes.c_float}
_SIGNATURES = {
    "pair_rows": ("piippiipp", ctypes.c_int),
    "gather_square": ("piippip", ctypes.c_int),
    "scatter_product": ("ppppiifip", ctypes.c_int),
    "centred_residual": ("pppiiiifpp", ctypes.c_int),
    "normal_fill": ("ppi", None),
    "sgld_update": ("pppifffp", None),
    "subnormals_flushed": ("", ctypes.c_int),
}


def cache_dir() -> Path:
    if "GROKSLT_CACHE_DIR" in os.environ:
        return Path(os.environ["GROKSLT_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "grokslt"


def _cpu_signature() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def _compile(compiler: str, directory: Path) -> Path:
    """The shared library for this source, compiler and CPU in `directory`, built (atomically) if not there."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False).stdout
    identity = [SOURCE.read_text(), compiler, version, platform.machine(), _cpu_signature(), *BASE_FLAGS, repr(TUNINGS)]
    key = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:16]
    target = directory / f"sgld-{key}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for tuning in TUNINGS:
        with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
            partial = Path(tmp.name)
        command = [compiler, *BASE_FLAGS, *tuning, str(SOURCE), "-o", str(partial)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            os.replace(partial, target)
            return target
        partial.unlink(missing_ok=True)
        errors.append(done.stderr.strip())
    raise RuntimeError("\n".join(errors))


@functools.cache
def library() -> ctypes.CDLL | None:
    """The compiled kernels, or None (with one warning saying why) when they cannot be used."""
    if os.environ.get("GROKSLT_CPU_KERNELS", "1") == "0":
        return None
    compiler = shutil.which(os.environ.get("CC", "cc"))
    try:
        if compiler is None:
            raise RuntimeError(f"no C compiler ({os.environ.get('CC', 'cc')!r}) on PATH")
        lib = _load(compiler)
    except (OSError, RuntimeError) as error:
        warnings.warn(
            f"grokslt's CPU kernels are unavailable, the native sampler runs in torch (slower): {error}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    for name, (kinds, restype) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = [_ARGUMENTS[kind] for kind in kinds], restype
    return lib


def _load(compiler: str) -> ctypes.CDLL:
    """The library from the cache; where the cache cannot be written (read-only, not a directory), built
    in a private directory for this process alone, removed once loaded."""
    try:
        return ctypes.CDLL(str(_compile(compiler, cache_dir())))
    except OSError as error:
        private = Path(tempfile.mkdtemp(prefix="grokslt-kernels-"))
        warnings.warn(
            f"grokslt's kernel cache {cache_dir()} cannot be used ({error.strerror or error}); "
            f"building the CPU kernels for this process only (set GROKSLT_CACHE_DIR to a writable directory)",
            RuntimeWarning,
            stacklevel=3,
        )
        try:
            return ctypes.CDLL(str(_compile(compiler, private)))
        finally:
            shutil.rmtree(private, ignore_errors=True)


def applicable(*tensors: torch.Tensor) -> bool:
    """Whether the kernels can take these tensors: float32 on the CPU, and the library is built."""
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors) and library() is not None


def _pointer(tensor: torch.Tensor) -> int:
    if not tensor.is_contiguous():
        raise ValueError("the CPU kernels need contiguous tensors")
    return tensor.data_ptr()


def _indices(t: torch.Tensor) -> torch.Tensor:
    """`t` as contiguous int64 (itself when it already is: this runs every SGLD step)."""
    if t.dtype is torch.int64 and t.is_contiguous():
        return t
    return t.to(torch.int64).contiguous()


def pair_rows(
    idx: torch.Tensor, a: torch.Tensor, b: torch.Tensor, p: int, out: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of the stacked table [chains * 2p, K] that the samples idx [chains, B] read: for chain c,
    c 2p + a[idx] and c 2p + p + b[idx] (flattened, int64)."""
    chains, batch = idx.shape
    idx, a, b = _indices(idx), _indices(a), _indices(b)
    first, second = out or (torch.empty(chains * batch, dtype=torch.int64) for _ in range(2))
    status = library().pair_rows(
        _pointer(idx), chains, batch, _pointer(a), _pointer(b), len(a), p,
        _pointer(first), _pointer(second),
    )  # fmt: skip
    _check_indices(status, len(a))
    return first, second


def gather_square(
    table: torch.Tensor, first: torch.Tensor, second: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """(table[first] + table[second])^2 for a table [rows, K] and row indices [m]: [m, K]."""
    rows, width = table.shape
    first, second = _indices(first), _indices(second)
    z = torch.empty(len(first), width) if out is None else out
    status = library().gather_square(
        _pointer(table), rows, width, _pointer(first), _pointer(second), len(first),
        _pointer(z),
    )  # fmt: skip
    _check_indices(status, rows)
    return z


def scatter_product(
    g: torch.Tensor,
    table: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    scale: float,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Zeros shaped like `table` [rows, K], with scale * g[i] * (table[first[i]] + table[second[i]])
    added onto row first[i] for every i, then onto row second[i]."""
    rows, width = table.shape
    first, second = _indices(first), _indices(second)
    grad = torch.empty(rows, width) if out is None else out
    status = library().scatter_product(
        _pointer(g), _pointer(table), _pointer(first), _pointer(second),
        len(first), width, scale, rows, _pointer(grad),
    )  # fmt: skip
    _check_indices(status, rows)
    return grad


def centred_residual(
    pred: torch.Tensor,
    idx: torch.Tensor,
    labels: torch.Tensor,
    scale: float,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """For pred [chains, B, p] on samples idx [chains, B] with labels: scale * P_perp(onehot - pred)
    and the centred loss per chain (summed in double)."""
    chains, batch, p = pred.shape
    out, loss = out or (torch.empty_like(pred), torch.empty(chains))
    idx, labels = _indices(idx), _indices(labels)
    status = library().centred_residual(
        _pointer(pred), _pointer(idx), _pointer(labels), len(labels), chains, batch, p,
        scale,
        _pointer(out), _pointer(loss),
    )  # fmt: skip
    if status != 0:
        raise IndexError(f"a sample index lies outside [0, {len(labels)}) or a label outside [0, {p})")
    return out, loss


def _check_indices(status: int, rows: int) -> None:
    if status == -2:
        raise MemoryError("the CPU kernels could not allocate their row marks")
    if status != 0:
        raise IndexError(f"a row index lies outside the table of {rows} rows")


def splitmix64(seed: int, count: int) -> list[int]:
    """`count` outputs of SplitMix64 from `seed`: the customary way to seed xoshiro generators."""
    mask = (1 << 64) - 1
    state, out = seed & mask, []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


class NormalStream:
    """Standard normal numbers from the kernels' 16 interleaved xoshiro128++ streams, seeded by
    SplitMix64 from `seed`. Draws advance the stream by whole tiles of 256 numbers."""

    NAME = "xoshiro128++"

    def __init__(self, seed: int):
        words = np.array(splitmix64(seed, 2 * LANES), dtype=np.uint64)
        self.state = np.stack([words & 0xFFFFFFFF, words >> 32], axis=1).astype(np.uint32).reshape(4, LANES)
        self._state_p = self.state.ctypes.data

    def normal(self, n: int) -> torch.Tensor:
        out = torch.empty(n)
        library().normal_fill(self._state_p, _pointer(out), n)
        return out

    def sgld_update_(
        self, w: torch.Tensor, grad: torch.Tensor, pull: torch.Tensor, shrink: float, grad_scale: float, std: float
    ) -> None:
        """w <- w shrink + pull + grad_scale grad + std N(0, I), in place, in one pass (w contiguous)."""
        if not w.shape == grad.shape == pull.shape:
            raise ValueError(f"shapes differ: w {tuple(w.shape)}, grad {tuple(grad.shape)}, pull {tuple(pull.shape)}")
        grad, pull = grad.contiguous(), pull.contiguous()
        pointers = _pointer(w), _pointer(grad), _pointer(pull)
        library().sgld_update(*pointers, w.numel(), shrink, grad_scale, std, self._state_p)

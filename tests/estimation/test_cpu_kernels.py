"""The compiled CPU kernels against independent computations: published reference outputs of the
generators, Box-Muller in float64, the torch forms of the gather and scatter, and the reference loss."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from grokslt import cpu_kernels
from grokslt.estimation.llc import estimate_llc, sampler_settings
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.training.model import _pair_row_index, centred_loss_and_grad

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC", "cc")) is None or os.environ.get("GROKSLT_CPU_KERNELS") == "0",
    reason="no C compiler, or the kernels are switched off",
)
MASK = (1 << 32) - 1


def xoshiro128pp(state):
    """The reference xoshiro128++ (Blackman and Vigna), one 32-bit output per call, in plain Python."""
    s = list(state)

    def rotl(x, k):
        return ((x << k) | (x >> (32 - k))) & MASK

    while True:
        result = (rotl((s[0] + s[3]) & MASK, 7) + s[0]) & MASK
        t = (s[1] << 9) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 11)
        yield result


def reference_normals(seed: int, n: int) -> np.ndarray:
    """What NormalStream(seed).normal(n) should be, from the reference generators and Box-Muller in
    float64: per block, x = one output of each of the 16 lanes, y = the next; the block's normals are
    r cos(theta) for the 16 lanes, then r sin(theta), with u = (x >> 8 + 1) / 2^24 and
    theta = 2 pi (y >> 8) / 2^24."""
    words = [w for z in cpu_kernels.splitmix64(seed, 32) for w in (z & MASK, z >> 32)]
    state = np.array(words, dtype=np.uint64).reshape(4, 16)
    lanes = [xoshiro128pp(state[:, lane].tolist()) for lane in range(16)]
    blocks = -(-n // 32)
    raw = np.array([[next(lane) for lane in lanes] for _ in range(2 * blocks)], dtype=np.float64)
    u = (np.floor(raw[0::2] / 256) + 1) / 2**24
    theta = 2 * np.pi * np.floor(raw[1::2] / 256) / 2**24
    r = np.sqrt(-2 * np.log(u))
    return np.concatenate([r * np.cos(theta), r * np.sin(theta)], axis=1).reshape(-1)[:n]


def test_reference_generators_reproduce_published_outputs():
    assert cpu_kernels.splitmix64(1234567, 3) == [6457827717110365317, 3203168211198807973, 9817491932198370423]
    first = [next(g) for g in [xoshiro128pp([1, 2, 3, 4])] for _ in range(10)]
    assert first == [641, 1573767, 3222811527, 3517856514, 836907274, 4247214768, 3867114732, 1355841295,
                     495546011, 621204420]  # fmt: skip


def test_library_builds_here():
    assert cpu_kernels.library() is not None


def test_normals_are_box_muller_of_the_reference_streams():
    compiled = cpu_kernels.NormalStream(11).normal(5000).double().numpy()
    np.testing.assert_allclose(compiled, reference_normals(11, 5000), rtol=0, atol=2e-6)


def test_draws_continue_the_stream_tile_by_tile():
    stream = cpu_kernels.NormalStream(5)
    first, second = stream.normal(1024), stream.normal(1000)
    whole = cpu_kernels.NormalStream(5).normal(2048)
    assert torch.equal(first, whole[:1024])
    assert torch.equal(second, whole[1024:2024])


def test_normals_are_standard_normal():
    z = cpu_kernels.NormalStream(0).normal(1 << 21).double().numpy()
    n = len(z)
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert abs(z.var() - 1) < 4 * np.sqrt(2 / n)
    assert abs((z**4).mean() - 3) < 4 * np.sqrt(96 / n)
    # Kolmogorov-Smirnov distance to N(0, 1): 1.63 / sqrt(n) is its 1% critical value
    cdf = torch.special.ndtr(torch.from_numpy(np.sort(z))).numpy()
    distance = max((np.arange(1, n + 1) / n - cdf).max(), (cdf - np.arange(n) / n).max())
    assert distance < 1.63 / np.sqrt(n)
    # neighbours (same lane or neighbouring lanes) are uncorrelated
    for lag in (1, 16, 32):
        assert abs(np.corrcoef(z[:-lag], z[lag:])[0, 1]) < 4 / np.sqrt(n)


def test_sgld_update_adds_the_streams_noise():
    gen = torch.Generator().manual_seed(0)
    w, grad, pull = (torch.randn(3, 700, generator=gen) for _ in range(3))
    expected = w * 0.9 + pull + grad * -0.25 + cpu_kernels.NormalStream(8).normal(w.numel()).view(3, 700) * 0.03
    cpu_kernels.NormalStream(8).sgld_update_(w, grad, pull, 0.9, -0.25, 0.03)
    torch.testing.assert_close(w, expected, rtol=0, atol=1e-6)


def test_gather_and_scatter_equal_their_torch_forms_exactly():
    gen = torch.Generator().manual_seed(1)
    W = torch.randn(4, 14, 33, generator=gen)
    a, b = torch.randint(0, 7, (4, 20), generator=gen), torch.randint(0, 7, (4, 20), generator=gen)
    table = W.reshape(-1, 33)
    first, second = _pair_row_index(W, a, b)
    h = table[first] + table[second]
    assert torch.equal(cpu_kernels.gather_square(table, first, second), h.square())
    g = torch.randn(80, 33, generator=gen)
    expected = torch.zeros_like(table)
    for rows in (first, second):
        expected.index_add_(0, rows, g * h * 0.3)
    assert torch.equal(cpu_kernels.scatter_product(g, table, first, second, 0.3), expected)
    # rows shared between `first` and `second` take the two passes in torch's order
    shared = torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0])
    g = torch.randn(3, 33, generator=gen)
    expected = torch.zeros_like(table)
    for rows in shared:
        expected.index_add_(0, rows, g * (table[shared[0]] + table[shared[1]]) * 0.3)
    assert torch.equal(cpu_kernels.scatter_product(g, table, *shared, 0.3), expected)


def test_indices_outside_the_table_are_refused():
    table = torch.zeros(6, 4)
    with pytest.raises(IndexError, match="outside the table of 6 rows"):
        cpu_kernels.gather_square(table, torch.tensor([0, 6]), torch.tensor([1, 2]))
    with pytest.raises(IndexError, match="outside the table"):
        cpu_kernels.scatter_product(torch.zeros(1, 4), table, torch.tensor([-1]), torch.tensor([1]), 1.0)
    with pytest.raises(IndexError, match=r"label outside \[0, 3\)"):
        cpu_kernels.centred_residual(torch.zeros(1, 2, 3), torch.tensor([[0, 1]]), torch.tensor([0, 3]), 1.0)


def test_fused_loss_equals_the_reference_loss_and_gradient():
    gen = torch.Generator().manual_seed(2)
    p, K, n, chains, batch = 7, 48, 40, 3, 16
    a, b = torch.randint(0, p, (n,), generator=gen), torch.randint(0, p, (n,), generator=gen)
    c = (a + b) % p
    W, V = torch.randn(chains, 2 * p, K, generator=gen) * 0.3, torch.randn(chains, p, K, generator=gen) * 0.3
    idx = torch.stack([torch.randperm(n, generator=gen)[:batch] for _ in range(chains)])
    loss, grads = QuadraticNetLoss(a, b, c)({"W": W, "V": V}, idx)
    ref_loss, ref_W, ref_V = centred_loss_and_grad(W.double(), V.double(), a[idx], b[idx], c[idx])
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(grads["W"].double(), ref_W, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads["V"].double(), ref_V, rtol=1e-4, atol=1e-6)


def test_native_estimates_name_their_noise():
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randint(0, 5, (30,), generator=gen), torch.randint(0, 5, (30,), generator=gen)
    params = {"W": torch.randn(10, 8, generator=gen) * 0.3, "V": torch.randn(5, 8, generator=gen) * 0.3}
    settings = sampler_settings("paper_code", num_burnin=5, num_draws=20)
    loss_fn = QuadraticNetLoss(a, b, (a + b) % 5)
    assert estimate_llc(loss_fn, params, 30, settings, 8, seed=0).noise == "xoshiro128++"
    doubles = {k: v.double() for k, v in params.items()}
    assert estimate_llc(loss_fn, doubles, 30, settings, 8, seed=0).noise == "torch"


def test_without_a_compiler_the_sampler_falls_back_to_torch(tmp_path):
    script = (
        "import warnings, torch\n"
        "from grokslt import cpu_kernels\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    assert not cpu_kernels.applicable(torch.zeros(1))\n"
        "print(caught[0].message)\n"
    )
    env = {**os.environ, "CC": "no-such-compiler", "GROKSLT_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert "no C compiler ('no-such-compiler') on PATH" in done.stdout
    assert not list(tmp_path.iterdir())


def test_the_library_is_built_once_per_source_and_cpu(tmp_path):
    env = {**os.environ, "GROKSLT_CACHE_DIR": str(tmp_path)}
    script = "from grokslt import cpu_kernels; print(cpu_kernels.library()._name)"
    paths = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert paths[0] == paths[1]
    assert [f.name for f in tmp_path.iterdir()] == [os.path.basename(paths[0].strip())]


def test_training_gradient_is_the_same_with_and_without_the_kernels(monkeypatch):
    gen = torch.Generator().manual_seed(4)
    p, K, n = 11, 40, 37  # a batch size that is not a power of two: -2/n is inexact
    W, V = torch.randn(2 * p, K, generator=gen), torch.randn(p, K, generator=gen)
    a, b = torch.randint(0, p, (n,), generator=gen), torch.randint(0, p, (n,), generator=gen)
    with_kernels = centred_loss_and_grad(W, V, a, b, (a + b) % p)
    monkeypatch.setattr(cpu_kernels, "applicable", lambda *tensors: False)
    without = centred_loss_and_grad(W, V, a, b, (a + b) % p)
    for fused, plain in zip(with_kernels, without, strict=True):
        assert torch.equal(fused, plain)


def test_a_plain_build_gives_the_same_bits_as_the_tuned_one(tmp_path, monkeypatch):
    """Without -march (SSE2 on x86) the compiler vectorises differently, but no operation changes."""

    def draws():
        stream = cpu_kernels.NormalStream(42)
        w = torch.linspace(-1, 1, 5000)
        stream.sgld_update_(w, torch.cos(w), torch.sin(w), 0.999, -0.01, 0.02)
        return stream.normal(3000), w, cpu_kernels.library()._name

    tuned = draws()
    monkeypatch.setattr(cpu_kernels, "TUNINGS", ([],))
    monkeypatch.setenv("GROKSLT_CACHE_DIR", str(tmp_path))
    cpu_kernels.library.cache_clear()
    try:
        plain = draws()
    finally:
        cpu_kernels.library.cache_clear()
    assert plain[2] != tuned[2]
    assert torch.equal(plain[0], tuned[0]) and torch.equal(plain[1], tuned[1])

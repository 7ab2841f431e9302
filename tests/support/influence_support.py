"""Per-pair posterior traces with a known structure, for WAIC and the influence function and its figure."""

from __future__ import annotations

import numpy as np
import xarray as xr


def fourier_weights(rng, p: int, neurons: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """W [2p, K] whose neuron j embeds both operands as scale * cos(2 pi k a / p + phase), V [p, K] random."""
    a = np.arange(p)[:, None]
    columns = []
    for k, scale in neurons:
        first, second = rng.uniform(0, 2 * np.pi, 2)
        columns.append(
            scale * np.concatenate([np.cos(2 * np.pi * k * a / p + first), np.cos(2 * np.pi * k * a / p + second)])
        )
    W = np.concatenate(columns, axis=1)
    V = rng.normal(size=(p, len(neurons)))
    V *= np.array([scale for _, scale in neurons]) / np.linalg.norm(V, axis=0)
    return W, V


def write_trace(path, rng, p: int, step: int, weights: tuple[np.ndarray, np.ndarray] | None) -> None:
    """A trace file in the layout of the per-pair posterior traces: losses share a latent per answer."""
    a, b = (grid.ravel() for grid in np.meshgrid(np.arange(p), np.arange(p), indexing="ij"))
    order = rng.permutation(p * p)
    split = {"train": order[: p * p // 2], "val": order[p * p // 2 :]}
    chains, draws = 2, 40
    latent = rng.normal(size=(chains, draws, p))
    log_likelihood, constant = {}, {}
    for name, pairs in split.items():
        answer = (a[pairs] + b[pairs]) % p
        loss = latent[..., answer] ** 2 + 0.3 * rng.normal(size=(chains, draws, pairs.size))
        log_likelihood[name] = (("chain", "draw", f"{name}_pair"), -loss.astype(np.float32))
        for key, values in (("a", a[pairs]), ("b", b[pairs]), ("answer", answer)):
            constant[f"{name}_{key}"] = (f"{name}_pair", values)
    if weights is not None:
        constant["W"] = (("input", "neuron"), weights[0])
        constant["V"] = (("output", "neuron"), weights[1])
    attrs = {"nbeta": 100.0, "beta": 100.0 / split["train"].size, "n_train": split["train"].size, "p": p, "step": step}
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset(attrs=attrs),
            "/posterior": xr.Dataset({"w": (("chain", "draw"), rng.normal(size=(chains, draws)))}),
            "/log_likelihood": xr.Dataset(log_likelihood),
            "/constant_data": xr.Dataset(constant),
        }
    )
    tree.to_netcdf(path, engine="h5netcdf")

"""Learning coefficients known in closed form, used to validate the SGLD estimator."""

from __future__ import annotations

import numpy as np


def reduced_rank_regression_llc(M: int, N: int, H: int, r: int) -> float:
    """Aoyagi and Watanabe (2005): y = B A x with A [H, M], B [N, H], true rank r."""
    if N + r <= M + H and M + r <= N + H and H + r <= M + N:
        core = 2 * (H + r) * (M + N) - (M - N) ** 2 - (H + r) ** 2
        return (core + ((M + H + N + r) % 2)) / 8
    if N + r > M + H:
        return (H * M - H * r + N * r) / 2
    if M + r > N + H:
        return (H * N - H * r + M * r) / 2
    return M * N / 2


def normal_crossing_posterior_mean(t: float, gamma: float, k: tuple[int, int], half_width=6.0, points=4001):
    """E[t K] for K(w) = 1/2 (w1^k1 w2^k2)^2 under exp(-t K - gamma/2 ||w||^2), by 2-D quadrature."""
    grid = np.linspace(-half_width, half_width, points)
    w1, w2 = np.meshgrid(grid, grid, indexing="ij")
    potential = 0.5 * (w1 ** k[0] * w2 ** k[1]) ** 2
    log_density = -t * potential - 0.5 * gamma * (w1**2 + w2**2)
    weight = np.exp(log_density - log_density.max())
    return float((t * potential * weight).sum() / weight.sum())

"""Rank-normalised split R-hat, bulk and tail ESS and the MCSE of the mean (Vehtari, Gelman, Simpson, Carpenter and
Buerkner 2021, "Rank-normalization, folding, and localization"), as ArviZ's array functions compute them
(`arviz_stats.base.array_stats`; tests/estimation/test_rank_diagnostics.py holds them equal to it). Written here
because importing ArviZ brings xarray, pandas, matplotlib and scipy.stats: 2 CPU-s in every sampling job.

Every function takes draws [chains, draws] and returns NaN where a value is missing or there are too few draws."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

MIN_DRAWS = 4


def split_chains(draws: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as two chains (a middle draw of an odd count left out)."""
    half = draws.shape[1] // 2
    return np.vstack((draws[:, :half], draws[:, draws.shape[1] - half :]))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..N over all the values, ties given their average rank."""
    flat = values.ravel()
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, flat.size])
    ranks = np.empty(flat.size)
    ranks[order] = np.repeat(starts + (counts + 1) / 2, counts)
    return ranks.reshape(values.shape)


def z_scale(values: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks, Blom's offset 3/8."""
    return ndtri((average_ranks(values) - 3 / 8) / (values.size + 1 / 4))


def potential_scale_reduction(draws: np.ndarray) -> float:
    """Gelman and Rubin's R-hat of chains [chains, draws]: between- against within-chain variance."""
    n = draws.shape[1]
    between = n * np.var(draws.mean(axis=1), ddof=1)
    within = np.mean(np.var(draws, axis=1, ddof=1))
    return float(np.sqrt((between / within + n - 1) / n))


def autocovariance(draws: np.ndarray) -> np.ndarray:
    """Each chain's autocovariance at lags 0..n-1 (divided by n), by FFT."""
    n = draws.shape[1]
    centred = draws - draws.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n


def effective_sample_size(draws: np.ndarray) -> float:
    """Multi-chain ESS with Geyer's initial positive and initial monotone sequences of paired autocorrelations."""
    if np.max(draws) - np.min(draws) < np.finfo(float).resolution:
        return float(draws.size)
    chains, n = draws.shape
    acov = autocovariance(draws)
    mean_var = np.mean(acov[:, 0]) * n / (n - 1)
    var_plus = mean_var * (n - 1) / n + (np.var(draws.mean(axis=1), ddof=1) if chains > 1 else 0.0)
    rho = np.zeros(n)
    rho[0], rho[1] = 1.0, 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    even, odd, t = rho[0], rho[1], 1
    while t < n - 3 and even + odd > 0:
        even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if even + odd >= 0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0:
        rho[last + 1] = even
    for t in range(1, last - 1, 2):  # the paired sums made non-increasing
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2
    tau = -1.0 + 2.0 * np.sum(rho[: last + 1]) + np.sum(rho[last + 1 : last + 2])
    tau = max(tau, 1 / np.log10(draws.size))
    return math.nan if np.isnan(rho).any() else float(draws.size / tau)


def _usable(draws: np.ndarray, min_chains: int) -> bool:
    return draws.ndim == 2 and not np.isnan(draws).any() and draws.shape[1] >= MIN_DRAWS and len(draws) >= min_chains


def rhat_rank(draws: np.ndarray) -> float:
    """The larger of the bulk (rank-normalised) and tail (folded about the median) split R-hat."""
    draws = np.asarray(draws, dtype=float)
    if not _usable(draws, min_chains=2):
        return math.nan
    split = split_chains(draws)
    folded = np.abs(split - np.median(split))
    return max(potential_scale_reduction(z_scale(split)), potential_scale_reduction(z_scale(folded)))


def ess_bulk(draws: np.ndarray) -> float:
    draws = np.asarray(draws, dtype=float)
    return effective_sample_size(z_scale(split_chains(draws))) if _usable(draws, min_chains=1) else math.nan


def ess_tail(draws: np.ndarray, probabilities: tuple[float, float]) -> float:
    """The smaller ESS of the indicators of the draws below each quantile of `probabilities`."""
    draws = np.asarray(draws, dtype=float)
    if not _usable(draws, min_chains=1):
        return math.nan
    indicators = (split_chains((draws <= np.quantile(draws, p)).astype(float)) for p in probabilities)
    return min(effective_sample_size(x) for x in indicators)


def mcse_mean(draws: np.ndarray) -> float:
    draws = np.asarray(draws, dtype=float)
    if not _usable(draws, min_chains=1):
        return math.nan
    return float(np.std(draws, ddof=1) / np.sqrt(effective_sample_size(split_chains(draws))))

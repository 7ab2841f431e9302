"""The Bayesian influence function (BIF) of training pairs on validation pairs under the local posterior.

Upweighting training pair i by a small eps in the tempered posterior exp(-nbeta L_n(w)) changes the
posterior mean of any observable f by -eps * beta * Cov_w(l_i, f) (the derivative of a Gibbs expectation
with respect to a term of its energy). With f the loss l_j of validation pair j, BIF(i, j) = -Cov_w(l_i, l_j)
over the local posterior around w* is that change per unit eps * beta: positive where upweighting pair i
raises pair j's expected loss (the two pairs compete), negative where it lowers it (fitting i helps j; a pair's
influence on itself, -Var_w l_i, is always negative). The losses' covariance equals that of the
log-likelihoods ll = -l, so the BIF is computed from the log-likelihood traces directly.

For modular addition the pairs are grouped by their answer c = (a + b) mod p; a network that has grokked
computes with a few Fourier frequencies k, and under its dominant one answers whose phases k c mod p are
close are treated alike, so ordering pairs by that phase shows the structure the network has learnt.
"""

from __future__ import annotations

import numpy as np

from grokslt.analysis.waic import pooled_draws


def bayesian_influence(train_ll: np.ndarray, val_ll: np.ndarray) -> np.ndarray:
    """BIF(i, j) = -Cov_w(l_i, l_j) [N, M] for training pairs i and validation pairs j, over the pooled draws
    of log-likelihoods [C, D, N] and [C, D, M] (the unbiased covariance, ddof = 1, as np.cov), in float64."""
    train, val = pooled_draws(train_ll), pooled_draws(val_ll)
    if train.shape[0] != val.shape[0]:
        raise ValueError(f"training and validation traces hold {train.shape[0]} and {val.shape[0]} draws")
    train = train - train.mean(axis=0)
    val = val - val.mean(axis=0)
    return -(train.T @ val) / (train.shape[0] - 1)


def influence_stderr(train_ll: np.ndarray, val_ll: np.ndarray) -> np.ndarray:
    """The standard error of `bayesian_influence` from the spread of its value over the chains [C, D, ...] (NaN
    with one chain): each chain's BIF is an independent estimate of the same covariance."""
    chains = train_ll.shape[0]
    if chains < 2:
        return np.full((train_ll.shape[-1], val_ll.shape[-1]), np.nan)
    each = np.stack([bayesian_influence(train_ll[c : c + 1], val_ll[c : c + 1]) for c in range(chains)])
    return each.std(axis=0, ddof=1) / np.sqrt(chains)


def significant_influence(train_ll: np.ndarray, val_ll: np.ndarray, level: float = 0.05) -> np.ndarray:
    """Where the BIF is significant: 0 outside its two-sided (1 - level) interval, `influence_stderr` times
    Student's t with chains - 1 degrees of freedom (none with one chain)."""
    from scipy.stats import t

    chains = train_ll.shape[0]
    if chains < 2:
        return np.zeros((train_ll.shape[-1], val_ll.shape[-1]), dtype=bool)
    with np.errstate(invalid="ignore"):
        return np.abs(bayesian_influence(train_ll, val_ll)) > t.ppf(1 - level / 2, chains - 1) * influence_stderr(
            train_ll, val_ll
        )


def binned_mean(ll: np.ndarray, bins: np.ndarray, n_bins: int) -> np.ndarray:
    """The mean of the last axis of `ll` over the pairs of each bin [..., n_bins] (NaN for an empty bin).

    The covariance is bilinear, so the BIF of bin means is the mean BIF over the pairs of two bins: the
    p x p matrix by answer without the N x M one."""
    ll = np.asarray(ll, dtype=np.float64)
    bins = np.asarray(bins)
    onehot = (bins[:, None] == np.arange(n_bins)[None, :]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ll @ onehot) / onehot.sum(axis=0)


def dominant_frequency(W: np.ndarray, V: np.ndarray, p: int) -> int:
    """The Fourier frequency k in 1..(p-1)//2 that the network with input weights W [2p, K] (rows 0..p-1 embed
    the first operand a, rows p..2p-1 the second b) and output weights V [p, K] uses most.

    Each neuron j contributes V[:, j] (W[a, j] + W[p + b, j])^2, of size ||V[:, j]|| ||W[:, j]||^2 (its atom
    norm). Its spectrum is the share of its input power |DFT_a W[a, j]|^2 + |DFT_b W[p + b, j]|^2 at each
    frequency (k and p - k are one real frequency; the constant term is left out); the dominant frequency
    maximises the sum over neurons of atom norm times share."""
    W, V = np.asarray(W, dtype=np.float64), np.asarray(V, dtype=np.float64)
    if W.shape[0] != 2 * p or V.shape != (p, W.shape[1]):
        raise ValueError(f"W must be [2p, K] and V [p, K] with p = {p}, got {W.shape} and {V.shape}")
    frequencies = np.arange(1, (p - 1) // 2 + 1)
    power = (np.abs(np.fft.fft(W[:p], axis=0)) ** 2 + np.abs(np.fft.fft(W[p:], axis=0)) ** 2)[frequencies]
    share = power / np.maximum(power.sum(axis=0), np.finfo(np.float64).tiny)
    atom_norm = np.linalg.norm(V, axis=0) * np.linalg.norm(W, axis=0) ** 2
    return int(frequencies[np.argmax(share @ atom_norm)])


def pair_order(answer: np.ndarray, p: int, frequency: int | None = None) -> np.ndarray:
    """The permutation that sorts pairs by their answer c, or with a frequency k by the phase (k c) mod p, so
    that answers the network treats alike under frequency k lie side by side; stable (ties keep their order)."""
    answer = np.asarray(answer)
    key = answer if frequency is None else (frequency * answer) % p
    return np.argsort(key, kind="stable")

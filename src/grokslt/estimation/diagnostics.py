"""Convergence diagnostics of an LLC estimate from its chains: rank-normalised split R-hat and ESS as ArviZ
computes them (`grokslt.estimation.rank_diagnostics`, held equal to arviz-stats by its tests).

Honest diagnostics (the columns `r_hat`, `ess_bulk`, `ess_tail`, `mcse`, `converged`) are computed on
full-batch observables at thinned draws (`grokslt.estimation.observables`): x_{c,t} = nbeta (L_n(w_t) -
L_n(w*)) and ||w_t - w*||^2. R-hat is the larger, each ESS the smaller of the two; the MCSE is that of the
mean of x (the full-batch estimate `llc_full`; L_n(w*) is exact), with nbeta times L_init's standard error
added in quadrature where the reported `llc_mean` subtracts an estimated L_init. The minibatch losses the sampler sees
carry white batch noise that inflates their ESS and pulls their R-hat to 1 while the parameters mix
slowly; their diagnostics are kept for comparison as `*_minibatch` (there L_init, shared by every chain,
adds nbeta times its standard error in quadrature to the MCSE: devinterp issue 39).

An estimate is `converged` when (documented in docs/diagnostics.md):
- no chain diverged,
- R-hat <= R_HAT_MAX (1.01, Vehtari et al. 2021) on both observables,
- bulk and tail ESS >= ESS_MIN (100: an MCSE of at most a tenth of the draws' spread) on both,
- the drift of the second half of the chains is at most DRIFT_MAX (5%) of the estimate, or within
  DRIFT_NOISE (10) MCSE: two standard errors of the drift of stationary chains, whose fitted half-chain
  slope has sqrt(24) times the standard error of the mean.
The minibatch verdict `converged_minibatch` keeps the earlier rule: ESS >= ESS_PER_CHAIN (100) per chain
on the minibatch losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grokslt.estimation import rank_diagnostics as rank

R_HAT_MAX = 1.01
ESS_PER_CHAIN = 100
DRIFT_MAX = 0.05
DRIFT_NOISE = 10.0
TAIL_PROBABILITIES = (0.05, 0.95)
ESS_MIN = 100
COLUMNS = ["r_hat", "ess_bulk", "ess_tail", "mcse", "converged"]
MINIBATCH_COLUMNS = [f"{name}_minibatch" for name in COLUMNS]


@dataclass(frozen=True)
class Diagnostics:
    r_hat: float
    ess_bulk: float
    ess_tail: float
    mcse: float  # of the LLC, L_init's error included
    converged: bool

    def columns(self, suffix: str = "") -> dict:
        return {f"{name}{suffix}": getattr(self, name) for name in COLUMNS}


UNKNOWN = Diagnostics(math.nan, math.nan, math.nan, math.nan, False)


def diagnose_minibatch(
    draws: np.ndarray, init_stderr: float, nbeta: float, llc: float, drift: float, diverged: int
) -> Diagnostics:
    """Minibatch diagnostics of the chains `draws` [chains, draws] of nbeta (L - L_init) (diverged chains
    removed), with `init_stderr` the standard error of L_init (0 when it is L_n exactly)."""
    draws = np.asarray(draws, dtype=np.float64)
    chains = draws.shape[0]
    if chains == 0 or draws.shape[1] < 4:
        return UNKNOWN
    r_hat = rank.rhat_rank(draws)
    ess_bulk = rank.ess_bulk(draws)
    ess_tail = rank.ess_tail(draws, TAIL_PROBABILITIES)
    mcse = math.hypot(rank.mcse_mean(draws), nbeta * init_stderr)
    converged = passes(r_hat, min(ess_bulk, ess_tail), ESS_PER_CHAIN * chains, drift, llc, mcse, diverged)
    return Diagnostics(r_hat, ess_bulk, ess_tail, mcse, converged)


def diagnose_full_batch(excess: np.ndarray, distance_sq: np.ndarray, diverged: int) -> Diagnostics:
    """Honest diagnostics from full-batch observations [chains, T] (diverged chains removed): `excess` is
    nbeta (L_n(w_t) - L_n(w*)), whose mean is the estimate; `distance_sq` is ||w_t - w*||^2."""
    excess, distance_sq = np.asarray(excess, np.float64), np.asarray(distance_sq, np.float64)
    if excess.shape[0] == 0 or excess.shape[1] < 4 or not np.isfinite(excess).all():
        return UNKNOWN
    series = [excess, distance_sq]
    r_hat = max(_rhat(x) for x in series)
    ess_bulk = min(rank.ess_bulk(x) for x in series)
    ess_tail = min(rank.ess_tail(x, TAIL_PROBABILITIES) for x in series)
    mcse = rank.mcse_mean(excess)
    llc = float(excess.mean())
    drift = float(np.mean(half_chain_slopes(excess)) * excess.shape[1] / 2)
    converged = passes(r_hat, min(ess_bulk, ess_tail), ESS_MIN, drift, llc, mcse, diverged)
    return Diagnostics(r_hat, ess_bulk, ess_tail, mcse, converged)


def passes(r_hat: float, ess: float, ess_min: float, drift: float, llc: float, mcse: float, diverged: int) -> bool:
    """The convergence rule both diagnoses apply: no diverged chain, R-hat and the smaller ESS within their bounds,
    and a drift between the chains' halves within a share of the estimate or a few MCSE."""
    return bool(
        diverged == 0
        and r_hat <= R_HAT_MAX
        and ess >= ess_min
        and abs(drift) <= max(DRIFT_MAX * abs(llc), DRIFT_NOISE * mcse)
    )


def _rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat; a constant series (a chain that never moved) gives NaN."""
    if np.ptp(x) == 0:
        return math.nan
    return rank.rhat_rank(x)


def half_chain_slopes(trace: np.ndarray) -> np.ndarray:
    """Least-squares slope per step of each chain's second half; NaN where it has fewer than 2 points."""
    half = trace[:, trace.shape[1] // 2 :]
    if half.shape[1] < 2:
        return np.full(len(trace), np.nan)
    x = np.arange(half.shape[1], dtype=np.float64)
    x -= x.mean()
    with np.errstate(invalid="ignore"):
        return (half - half.mean(axis=1, keepdims=True)) @ x / (x @ x)

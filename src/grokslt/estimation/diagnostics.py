"""Convergence diagnostics of an LLC estimate, computed by ArviZ (arviz-stats) from its chains.

The draws are x_{c,t} = nbeta (L_{c,t} - L_init), one row per chain; the LLC is their mean. From
them ArviZ gives the rank-normalised split R-hat, the bulk and tail effective sample sizes (tail: the
smaller ESS of the 5% and 95% quantiles) and the Monte Carlo standard error of the mean. That MCSE
sees only the chains' own noise: L_init, shared by every chain, carries its own error (devinterp
issue 39), nbeta times the standard error of its estimate, which is added in quadrature.

An estimate is `converged` when (documented in README):
- no chain diverged,
- R-hat <= R_HAT_MAX (1.01, Vehtari et al. 2021),
- bulk and tail ESS >= ESS_PER_CHAIN (100) times the number of chains,
- the drift of the second half of the chains (`LLCResult.llc_drift`) is at most DRIFT_MAX (5%) of the
  estimate, or within DRIFT_NOISE (10) MCSE: two standard errors of the drift of stationary chains, whose
  fitted half-chain slope has sqrt(24) times the standard error of the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from arviz_stats.base import array_stats

R_HAT_MAX = 1.01
ESS_PER_CHAIN = 100
DRIFT_MAX = 0.05
DRIFT_NOISE = 10.0
TAIL_PROBABILITIES = (0.05, 0.95)
COLUMNS = ["r_hat", "ess_bulk", "ess_tail", "mcse", "converged"]


@dataclass(frozen=True)
class Diagnostics:
    r_hat: float
    ess_bulk: float
    ess_tail: float
    mcse: float  # of the LLC, L_init's error included
    converged: bool

    def columns(self) -> dict:
        return {name: getattr(self, name) for name in COLUMNS}


def diagnose(
    draws: np.ndarray, init_stderr: float, nbeta: float, llc: float, drift: float, diverged: int
) -> Diagnostics:
    """Diagnostics of the chains `draws` [chains, draws] of nbeta (L - L_init) (diverged chains removed),
    with `init_stderr` the standard error of L_init (0 when it is L_n exactly)."""
    draws = np.asarray(draws, dtype=np.float64)
    chains = draws.shape[0]
    if chains == 0 or draws.shape[1] < 4:
        return Diagnostics(math.nan, math.nan, math.nan, math.nan, False)
    r_hat = float(array_stats.rhat(draws, method="rank"))
    ess_bulk = float(array_stats.ess(draws, method="bulk"))
    ess_tail = float(array_stats.ess(draws, method="tail", prob=TAIL_PROBABILITIES))
    mcse = math.hypot(float(array_stats.mcse(draws, method="mean")), nbeta * init_stderr)
    converged = (
        diverged == 0
        and r_hat <= R_HAT_MAX
        and min(ess_bulk, ess_tail) >= ESS_PER_CHAIN * chains
        and abs(drift) <= max(DRIFT_MAX * abs(llc), DRIFT_NOISE * mcse)
    )
    return Diagnostics(r_hat, ess_bulk, ess_tail, mcse, bool(converged))

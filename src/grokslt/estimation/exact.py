"""Exact references for the LLC's estimand: long full-batch MALA chains in float64.

At a point w* and a given (nbeta, gamma), the estimand is E[nbeta (L_n(w) - L_n(w*))] under the localized
tempered posterior exp(-nbeta L_n(w) - gamma/2 ||w - w*||^2). MALA's accept/reject step makes its chains
exact for that posterior whatever the step, which is tuned to an acceptance rate in ACCEPT_RANGE; the
reference is checked by R-hat and ESS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from grokslt.estimation.llc import estimate_llc
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.estimation.samplers import SamplerSettings

ACCEPT_RANGE = (0.5, 0.9)


@dataclass(frozen=True)
class ReferenceSettings:
    num_chains: int = 16
    num_burnin: int = 2000
    num_draws: int = 20000


def tuned_mala_step(loss_fn, params, n, nbeta, gamma, seed, first: float = 1e-3) -> tuple[float, float]:
    """(step size, acceptance rate) of short MALA runs, halving or doubling the step until the rate
    lies in ACCEPT_RANGE."""
    step, rate = first, 0.0
    for _ in range(16):
        settings = SamplerSettings(step_size=step, localization=gamma, num_chains=4, num_burnin=0, num_draws=300,
                                   nbeta=nbeta, sampler="mala")  # fmt: skip
        rate = estimate_llc(loss_fn, params, n, settings, n, seed).summary()["accept_rate"]
        if rate < ACCEPT_RANGE[0]:
            step /= 2
        elif rate > ACCEPT_RANGE[1]:
            step *= 2
        else:
            break
    return step, rate


def reference_estimate(data, params, nbeta: float, gamma: float, seed: int, reference: ReferenceSettings) -> dict:
    """The exact estimand by long float64 MALA chains, with their diagnostics."""
    loss_fn = QuadraticNetLoss.training_set(data)
    exact = {k: v.double() for k, v in params.items()}
    began = time.perf_counter()
    step, _ = tuned_mala_step(loss_fn, exact, data.n_train, nbeta, gamma, seed)
    settings = SamplerSettings(step_size=step, localization=gamma, num_chains=reference.num_chains,
                               num_burnin=reference.num_burnin, num_draws=reference.num_draws, nbeta=nbeta,
                               sampler="mala")  # fmt: skip
    result = estimate_llc(loss_fn, exact, data.n_train, settings, data.n_train, seed)
    summary = result.summary()
    return {
        "reference": result.llc_mean,
        "reference_mcse": summary["mcse"],
        "reference_r_hat": summary["r_hat"],
        "reference_ess": summary["ess_bulk"],
        "reference_converged": summary["converged"],
        "reference_step": step,
        "reference_accept": summary["accept_rate"],
        "reference_seconds": time.perf_counter() - began,
    }

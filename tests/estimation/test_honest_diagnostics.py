"""Honest diagnostics and locality against cases with a known answer."""

import math

import numpy as np
import pytest
from estimation_support import ShiftedQuadratic

from grokslt.errors import BadInput
from grokslt.estimation.diagnostics import diagnose_full_batch, diagnose_minibatch
from grokslt.estimation.llc import estimate_llc
from grokslt.estimation.locality import LOCAL_MAX_FRACTION
from grokslt.estimation.observables import checked_thinning, default_thinning
from grokslt.estimation.samplers import SamplerSettings


def ar1(rng, chains: int, draws: int, rho: float) -> np.ndarray:
    x = np.zeros((chains, draws))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + math.sqrt(1 - rho**2) * rng.normal(size=chains)
    return x


def test_white_batch_noise_hides_slow_mixing_that_the_full_batch_series_shows():
    """A slow AR(1) (the parameters) under white noise 30x its variance (the minibatch losses): the
    minibatch diagnostics overstate the ESS; the full-batch series gives the AR(1)'s own ESS."""
    rng = np.random.default_rng(1)
    chains, draws, rho = 4, 4000, 0.995
    slow = ar1(rng, chains, draws, rho)
    noisy = slow + math.sqrt(30) * rng.normal(size=slow.shape)
    true_ess = chains * draws * (1 - rho) / (1 + rho)  # about 40
    minibatch = diagnose_minibatch(noisy, 0.0, 1.0, float(noisy.mean()), 0.0, 0)
    honest = diagnose_full_batch(slow, slow**2, 0)
    assert minibatch.ess_bulk > 3 * true_ess
    assert true_ess / 2 < honest.ess_bulk < 2 * true_ess
    assert not honest.converged
    assert honest.mcse > 2 * float(np.std(slow) / np.sqrt(minibatch.ess_bulk))


def test_independent_draws_are_converged():
    rng = np.random.default_rng(2)
    draws = rng.normal(3.0, 1.0, size=(4, 400))
    honest = diagnose_full_batch(draws, rng.chisquare(5, size=(4, 400)), 0)
    assert honest.converged and honest.r_hat < 1.01 and honest.ess_bulk > 1000


@pytest.mark.parametrize("nbeta, gamma, step, local", [(50.0, 1.0, 0.02, True), (0.1, 0.01, 2.0, False)])
def test_mala_on_a_gaussian_target_gives_its_estimand_converged_and_judges_locality(nbeta, gamma, step, local):
    model = ShiftedQuadratic(h=np.linspace(0.5, 2.0, 10), a=np.full(10, 1.0))
    settings = SamplerSettings(step_size=step, localization=gamma, num_chains=4, num_burnin=200, num_draws=4000,
                               nbeta=nbeta, sampler="mala", observe_every=4)  # fmt: skip
    result = estimate_llc(model, {"w": model.a.clone()}, 1, settings, 1, seed=3)
    summary = result.summary()
    assert summary["llc_full"] == pytest.approx(model.estimand(nbeta, gamma), abs=4 * summary["mcse"])
    assert summary["converged"], summary
    # loss excess = estimand / nbeta; the zero function's loss is 0.5 sum h = 6.25
    assert summary["zero_loss"] == pytest.approx(0.5 * float(model.h.sum()))
    assert summary["loss_excess"] == pytest.approx(summary["llc_full"] / nbeta, rel=1e-9)
    assert summary["local"] == local
    assert (summary["loss_excess_fraction"] <= LOCAL_MAX_FRACTION) == local
    assert math.isnan(summary["sampled_train_acc"])  # this loss function gives no accuracy


def test_the_default_thinning_bounds_the_observations_cost_and_too_few_are_refused():
    assert default_thinning(1123, 128) == 12  # one observation ~ 2.9 steps: <= 25% every 12 draws
    assert default_thinning(100, 100) == 2  # full batch: one observation ~ 1/3 step
    assert checked_thinning(None, 1123, 128, 500) == 12
    with pytest.raises(BadInput, match="observe_every = 200: leaves 2 full-batch observations of 500 draws"):
        checked_thinning(200, 1123, 128, 500)

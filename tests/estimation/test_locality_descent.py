"""Locality is two-sided: chains that descend below L_n(w*) (w* not a minimum) are not sampling w*'s basin."""

import numpy as np
import pytest
from estimation_support import ShiftedQuadratic

from grokslt.estimation.llc import estimate_llc
from grokslt.estimation.locality import locality, mean_stderr
from grokslt.estimation.samplers import SamplerSettings

CENTRE = {"loss": 1.0, "zero_loss": 10.0, "accuracy": 1.0, "norm": 1.0}


def observations(loss: np.ndarray) -> dict:
    return {"loss": loss, "distance_sq": np.full_like(loss, 0.01)}


def test_a_mean_loss_below_the_centre_by_more_than_noise_descends_and_is_not_local():
    rng = np.random.default_rng(0)
    below = CENTRE["loss"] - 0.05 + 0.001 * rng.standard_normal((4, 50))  # 0.05 under L_n(w*), noise ~1e-4
    row = locality(observations(below), CENTRE)
    assert row["loss_excess_fraction"] == pytest.approx(-0.005, abs=1e-3)  # the one-sided rule passed this
    assert row["descends"] and not row["local"]


def test_a_mean_loss_below_the_centre_within_noise_stays_local():
    rng = np.random.default_rng(1)
    noisy = CENTRE["loss"] + rng.standard_normal((4, 50))  # each chain's mean varies by ~0.14
    noisy -= noisy.mean() - CENTRE["loss"] + 0.01  # 0.01 below: well within 2 standard errors (~0.14)
    row = locality(observations(noisy), CENTRE)
    assert row["loss_excess"] == pytest.approx(-0.01)
    assert not row["descends"] and row["local"]


def test_the_standard_error_comes_from_the_chains_means_or_one_chains_draws():
    loss = np.array([[1.0, 3.0], [3.0, 5.0]])  # chain means 2 and 4
    assert mean_stderr(loss) == pytest.approx(np.std([2.0, 4.0], ddof=1) / np.sqrt(2))
    assert mean_stderr(loss[:1]) == pytest.approx(np.std([1.0, 3.0], ddof=1) / np.sqrt(2))


def test_sgld_started_off_the_minimum_descends_and_its_negative_llc_is_not_local():
    model = ShiftedQuadratic(h=np.linspace(0.5, 2.0, 10), a=np.full(10, 1.0))
    settings = SamplerSettings(step_size=0.02, localization=0.01, num_chains=4, num_burnin=0, num_draws=400,
                               nbeta=50.0, sampler="mala", observe_every=4)  # fmt: skip
    start = {"w": model.a.clone() + 0.3}  # w* on a slope: the chains fall toward a
    summary = estimate_llc(model, start, 1, settings, 1, seed=3).summary()
    assert summary["llc_full"] < 0 and summary["loss_excess_fraction"] > -0.1  # inside the old one-sided bound
    assert summary["descends"] and not summary["local"]

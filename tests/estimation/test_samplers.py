"""Every sampler against models whose learning coefficient (or exact posterior mean) is known, and
against devinterp where devinterp has the sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from known_coefficients import normal_crossing_posterior_mean

from grokslt.estimation.llc import estimate_llc, run_chains
from grokslt.estimation.preconditioner import Blocks, Layout
from grokslt.estimation.samplers import SAMPLERS, SamplerSettings


@pytest.fixture
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def regression(d: int = 4, n: int = 2000):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=gen)
    y = X @ torch.randn(d, generator=gen) + torch.randn(n, generator=gen)
    w_star = torch.linalg.lstsq(X, y[:, None]).solution[:, 0]

    def loss_fn(params, idx):  # every sample's prediction by one product, then the batch's (no [chains, batch, d] copy)
        return 0.5 * (y[idx] - (params["w"] @ X.T).gather(1, idx)).pow(2).mean(dim=1)

    # its Gauss-Newton matrix (and Hessian) X^T X / n, for the preconditioned sampler
    loss_fn.curvature_blocks = lambda centre: {"w": Blocks((X.T @ X / n).unsqueeze(0), Layout(None, 0))}
    return loss_fn, w_star


# per sampler: step size and the relative tolerance of its estimate of d/2 (MALA is exact; the others
# carry a discretisation bias, RMSProp-SGLD also the missing preconditioner-drift term of devinterp's)
REGULAR = {"sgld": (2e-4, 0.08), "rmsprop_sgld": (2e-5, 0.12), "sgnht": (2e-4, 0.12), "mala": (2e-3, 0.06),
           "pmala": (0.5, 0.06)}  # fmt: skip


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_a_regular_model_has_half_its_dimension(sampler, float64):
    """Linear regression, d = 4, full batches, no localization: E[nbeta (L - L(w*))] = d/2 exactly
    under the tempered posterior, a Gaussian."""
    step, tolerance = REGULAR[sampler]
    loss_fn, w_star = regression()
    settings = SamplerSettings(
        step_size=step, localization=0.0, num_chains=16, num_burnin=1000, num_draws=3000, nbeta=200.0,
        init_loss="full", sampler=sampler,
    )  # fmt: skip
    result = estimate_llc(loss_fn, {"w": w_star}, 2000, settings, batch_size=2000, seed=1)
    assert result.llc_mean == pytest.approx(2.0, rel=tolerance), result.llc_mean


def crossing(params, idx):
    w = params["w"]
    return 0.5 * (w[..., 0] * w[..., 1] ** 2) ** 2


def test_mala_is_exact_on_a_singular_model(float64):
    """K = (w1 w2^2)^2 / 2 (lambda = 1/4): at nbeta = 1e3, gamma = 4, MALA's estimate is the exact
    posterior mean of nbeta K (quadrature) within 4 Monte Carlo standard errors, and it reports its
    acceptance rate."""
    t, gamma = 1e3, 4.0
    settings = SamplerSettings(
        step_size=2e-3, localization=gamma, num_chains=256, num_burnin=1000, num_draws=4000, nbeta=t, sampler="mala"
    )
    result = estimate_llc(crossing, {"w": torch.zeros(2)}, 1, settings, 1, seed=0)
    exact = normal_crossing_posterior_mean(t, gamma, (1, 2))
    stderr = result.llc_std / np.sqrt(256)
    assert abs(result.llc_mean - exact) < 4 * stderr and stderr < 0.02 * exact, (result.llc_mean, exact, stderr)
    rate = result.summary()["accept_rate"]
    assert 0.3 < rate < 1.0


def test_mala_leaves_the_mode_of_a_high_dimensional_gaussian(float64):
    """The localizing Gaussian alone (L = 0), d = 50,000, gamma = 1e4, eps gamma = 0.025: started at its
    mode, an adjusted chain accepts about exp(-(eps gamma)^2 d / 8) = 2% of its steps and never reaches the
    typical set |w - w*|^2 ~ d / gamma. The unadjusted burn-in brings it there; the adjusted draws then accept
    most steps and keep E|w - w*|^2 = d / gamma."""
    d, gamma, eps = 50_000, 1e4, 2.5e-6
    settings = SamplerSettings(
        step_size=eps, localization=gamma, num_chains=2, num_burnin=300, num_draws=200, nbeta=1.0, sampler="mala",
        observe_every=10,
    )  # fmt: skip

    def flat(params, idx):
        w = params["w"]
        return torch.zeros(w.shape[0]), {"w": torch.zeros_like(w)}

    generators = [torch.Generator().manual_seed(seed) for seed in (0, 1)]
    _, statistics, observations, _ = run_chains(flat, {"w": torch.zeros(2, d)}, 1, settings, 1, generators)
    assert (statistics["accept_rate"] > 0.75).all(), statistics["accept_rate"]
    distance = observations["distance_sq"].mean()
    assert distance == pytest.approx(d / gamma, rel=0.02), distance


@pytest.mark.parametrize("sampler", ["sgnht", "rmsprop_sgld"])
def test_the_other_samplers_find_the_singular_coefficient(sampler, float64):
    """The same crossing: within 10 per cent of the exact posterior mean."""
    t, gamma = 1e3, 4.0
    step = {"sgnht": 1e-4, "rmsprop_sgld": 1e-5}[sampler]
    settings = SamplerSettings(
        step_size=step, localization=gamma, num_chains=256, num_burnin=3000, num_draws=8000, nbeta=t,
        init_loss="full", sampler=sampler,
    )  # fmt: skip
    result = estimate_llc(crossing, {"w": torch.zeros(2)}, 1, settings, 1, seed=0)
    assert result.llc_mean == pytest.approx(normal_crossing_posterior_mean(t, gamma, (1, 2)), rel=0.1)

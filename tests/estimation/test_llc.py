import numpy as np
import pytest
import torch
from known_coefficients import normal_crossing_posterior_mean, reduced_rank_regression_llc

from grokslt import cpu_kernels
from grokslt.estimation import llc
from grokslt.estimation.llc import (
    PRESETS,
    SamplerSettings,
    bias_reduced_llc,
    chain_statistics,
    epoch_batches,
    estimate_llc,
    sampler_settings,
)


@pytest.fixture
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def test_presets_hold_the_papers_settings():
    code, text = PRESETS["paper_code"], PRESETS["paper_text"]
    assert (code.step_size, code.localization, code.num_chains, code.num_burnin, code.num_draws) == (
        5e-4,
        5.0,
        3,
        100,
        500,
    )
    assert code.resolved_nbeta(128) == pytest.approx(26.38, abs=0.01)
    assert (text.step_size, text.nbeta, text.localization, text.num_draws) == (1e-4, 30.0, 5.0, 600)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"step_size": 0.0}, "step_size = 0.0: expected a positive number"),
        ({"num_chains": 0}, "num_chains = 0"),
        ({"num_burnin": -1}, "num_burnin = -1"),
        ({"nbeta": -2.0}, "nbeta = -2.0"),
        ({"localization": -1.0}, "localization = -1.0"),
        ({"init_loss": "first"}, "init_loss = 'first'"),
    ],
)
def test_bad_sampler_settings_are_named(override, message):
    with pytest.raises(ValueError, match=message):
        sampler_settings("paper_code", **override)
    with pytest.raises(ValueError, match="preset = 'fast'"):
        sampler_settings("fast")


def test_epoch_batches_visit_every_sample_once_per_epoch():
    batches = list(epoch_batches(10, 4, chains=3, steps=5, generator=torch.Generator().manual_seed(0)))
    assert [b.shape for b in batches] == [(3, 4), (3, 4), (3, 2), (3, 4), (3, 4)]
    assert all(b.is_contiguous() for b in batches)
    for chain in torch.cat(batches[:3], dim=1):  # one epoch: every sample once
        assert sorted(chain.tolist()) == list(range(10))
    for chain in torch.cat(batches[3:], dim=1):  # the next epoch's first eight, all different
        assert len(set(chain.tolist())) == 8


def test_epoch_batches_are_the_same_drawn_in_pieces(monkeypatch):
    """Long chains draw their epochs in pieces; the generator fills them in order, so the batches are
    those of one draw."""
    monkeypatch.setattr(llc, "EPOCH_DRAW", 300)  # three epochs of 2 x 50 at a time
    pieces = list(epoch_batches(50, 16, chains=2, steps=40, generator=torch.Generator().manual_seed(1)))
    generator = torch.Generator().manual_seed(1)
    noise = torch.rand(10, 2, 50, generator=generator).argsort(dim=-1)
    expected = [noise[e, :, s : s + 16] for e in range(10) for s in range(0, 50, 16)][:40]
    assert all(torch.equal(a, b) for a, b in zip(pieces, expected, strict=True))


def test_regular_model_has_half_its_dimension(float64):
    """Linear regression with unit noise in d = 6 dimensions: lambda = d / 2."""
    gen = torch.Generator().manual_seed(0)
    n, d = 5000, 6
    X = torch.randn(n, d, generator=gen)
    y = X @ torch.randn(d, generator=gen) + torch.randn(n, generator=gen)
    w_star = torch.linalg.lstsq(X, y[:, None]).solution[:, 0]

    def loss_fn(params, idx):
        return 0.5 * (y[idx] - torch.einsum("cbd,cd->cb", X[idx], params["w"])).pow(2).mean(dim=1)

    settings = SamplerSettings(
        step_size=1e-4,
        localization=0.0,
        num_chains=8,
        num_burnin=400,
        num_draws=2000,
        nbeta=n / np.log(n),
        init_loss="full",
    )
    result = estimate_llc(loss_fn, {"w": w_star}, n, settings, batch_size=1000, seed=1)
    assert result.llc_mean == pytest.approx(d / 2, rel=0.08)


def assert_near(result, exact, max_relative_error):
    """The estimate lies within 4 Monte Carlo standard errors (chains are independent) of the exact
    value, and that error bar is small enough for the check to mean something."""
    stderr = result.llc_std / np.sqrt(len(result.llc_per_chain))
    assert stderr < max_relative_error / 4 * exact
    assert abs(result.llc_mean - exact) < 4 * stderr, (result.llc_mean, exact, stderr)


def normal_crossing(k):
    def loss_fn(params, idx):
        w = params["w"]
        return 0.5 * torch.prod(w ** torch.tensor(k, dtype=w.dtype), dim=-1) ** 2

    return loss_fn


def test_normal_crossing_single_factor_reaches_its_coefficient(float64):
    """K = w^4 / 2 (f = x w^2): lambda = 1/(2 * 2) = 1/4."""
    settings = SamplerSettings(
        step_size=1e-4,
        localization=1.0,
        num_chains=128,
        num_burnin=1000,
        num_draws=4000,
        nbeta=1e4,
        init_loss="full",
    )
    result = estimate_llc(normal_crossing((2,)), {"w": torch.zeros(1)}, 1, settings, 1, seed=0)
    assert result.llc_mean == pytest.approx(0.25, rel=0.06)


@pytest.mark.parametrize("dtype, noise", [(torch.float64, "torch"), (torch.float32, "xoshiro128++")])
def test_normal_crossing_two_factors_matches_exact_posterior(dtype, noise):
    """K = (w1 w2^2)^2 / 2: lambda = 1/(2 max k) = 1/4. At finite nbeta the estimate is the posterior
    mean of nbeta K, computed here by quadrature; it approaches 1/4 from below as nbeta grows. That
    target has no bias left, so the check is to Monte Carlo error: 1024 chains, about 1.7 per cent.
    In float32 on a CPU the noise comes from the compiled kernels, in float64 from torch."""
    t, gamma = 1e3, 4.0
    settings = SamplerSettings(
        step_size=1e-4,
        localization=gamma,
        num_chains=1024,
        num_burnin=3000,
        num_draws=6000,
        nbeta=t,
        init_loss="full",
    )
    result = estimate_llc(normal_crossing((1, 2)), {"w": torch.zeros(2, dtype=dtype)}, 1, settings, 1, seed=0)
    assert result.noise == (noise if cpu_kernels.library() is not None else "torch")
    assert_near(result, normal_crossing_posterior_mean(t, gamma, (1, 2)), max_relative_error=0.08)
    limits = [normal_crossing_posterior_mean(s, 1.0, (1, 2)) for s in (1e2, 1e4, 1e5)]
    assert limits[0] < limits[1] < limits[2] < 0.25
    assert limits[2] == pytest.approx(0.25, rel=0.05)


def test_reduced_rank_regression_matches_aoyagi_watanabe(float64):
    """y = B A x + noise, A [2, 3], B [3, 2], true map 0: lambda = 5/2 (Aoyagi and Watanabe 2005).

    The loss is the population loss 1/2 ||B A||_F^2 (x ~ N(0, I), n -> infinity): at finite n the
    empirical loss around the true parameter fluctuates by about sqrt(lambda nbeta / n) in LLC units,
    which would swamp the check. Minibatch sampling is checked by the regular model and devinterp."""
    M, N, H = 3, 3, 2
    assert reduced_rank_regression_llc(M, N, H, 0) == 2.5
    assert reduced_rank_regression_llc(M, N, H, 2) == (H * (M + N) - H * H) / 2  # regular at full rank
    assert reduced_rank_regression_llc(2, 5, 1, 0) == (1 * 2 - 0 + 0) / 2  # M + H < N + r

    def loss_fn(params, idx):
        return 0.5 * (params["B"] @ params["A"]).pow(2).sum((-2, -1))

    settings = SamplerSettings(
        step_size=1e-4,
        localization=1.0,
        num_chains=64,
        num_burnin=2000,
        num_draws=8000,
        nbeta=1e3,
        init_loss="full",
    )
    result = estimate_llc(loss_fn, {"A": torch.zeros(H, M), "B": torch.zeros(N, H)}, 1, settings, 1, seed=2)
    assert result.llc_mean == pytest.approx(2.5, rel=0.06)  # nbeta 1e3 leaves a bias of a few per cent


def test_diverged_chains_are_excluded_with_a_warning():
    trace = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]])
    with pytest.warns(RuntimeWarning, match="1 of 3 SGLD chains diverged"):
        result = chain_statistics(trace, init_loss=0.0, nbeta=2.0)
    assert result.diverged.tolist() == [False, True, False]
    assert result.llc_mean == pytest.approx((3.0 + 7.0) / 2)
    assert np.isnan(result.llc_per_chain[1])


def test_all_chains_diverged_is_an_error():
    def exploding(params, idx):
        return params["w"].pow(2).sum(-1)

    settings = SamplerSettings(
        step_size=10.0,
        localization=0.0,
        num_chains=2,
        num_burnin=0,
        num_draws=300,
        nbeta=100.0,
        init_loss="full",
    )
    with pytest.raises(RuntimeError, match="all 2 SGLD chains diverged"):
        estimate_llc(exploding, {"w": torch.ones(3)}, 1, settings, 1, seed=0)


def test_loss_slope_sees_a_climbing_chain():
    draws = np.arange(100, dtype=float)
    result = chain_statistics(np.stack([draws * 0.01, np.ones(100)]), init_loss=0.0, nbeta=10.0)
    assert result.loss_slope.tolist() == pytest.approx([0.01, 0.0], abs=1e-12)
    assert result.llc_drift == pytest.approx(10.0 * 0.005 * 50)


def test_bias_reduced_llc_recovers_the_intercept():
    nbetas = np.array([10.0, 30.0, 100.0, 300.0])
    fit = bias_reduced_llc(nbetas, 7.0 - 2.0 / np.log(nbetas))
    assert fit.intercept == pytest.approx(7.0)
    assert fit.slope == pytest.approx(-2.0)
    noisy = bias_reduced_llc(nbetas, 7.0 - 2.0 / np.log(nbetas) + np.array([0.1, -0.1, 0.05, 0.0]))
    assert noisy.intercept_stderr > 0
    with pytest.raises(ValueError, match="at least 3"):
        bias_reduced_llc([10.0, 20.0], [1.0, 2.0])


def test_bias_reduced_estimate_of_a_two_factor_crossing(float64):
    """K = (w1 w2)^2 / 2 has lambda = 1/2 with multiplicity m = 2: the plain estimate sits below 1/2 by
    about (m - 1) / log(nbeta); the intercept over nbeta removes most of that bias."""
    settings = SamplerSettings(
        step_size=1e-4, localization=1.0, num_chains=64, num_burnin=2000, num_draws=6000, nbeta=1.0, init_loss="full"
    )
    nbetas = [1e2, 3e2, 1e3]
    estimates = [
        estimate_llc(normal_crossing((1, 1)), {"w": torch.zeros(2)}, 1, settings.replace(nbeta=nbeta), 1, 0).llc_mean
        for nbeta in nbetas
    ]
    fit = bias_reduced_llc(nbetas, estimates)
    assert max(fit.estimates) < 0.4  # 0.32 .. 0.38
    assert fit.slope < 0
    assert fit.intercept == pytest.approx(0.5, abs=0.04)  # 0.492 +- 0.010


def test_diagnostics_are_arvizs_on_the_saved_traces(tmp_path):
    """The honest R-hat, ESS and MCSE equal ArviZ called directly on the saved full-batch observations
    (the worse of nbeta (L_n - L_n(w*)) and ||w - w*||^2); the minibatch ones equal ArviZ on the saved
    loss traces of nbeta (L - L_init), their MCSE adding nbeta times L_init's standard error in quadrature."""
    from arviz_stats.base import array_stats

    from grokslt.cli import main
    from grokslt.training.train import TrainConfig, train

    train(TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=50, max_steps=100), tmp_path / "run")
    main(["llc", "--run", str(tmp_path / "run"), "--num-draws", "200", "--out", str(tmp_path / "llc.csv"),
          "--traces", str(tmp_path / "llc.npz")])  # fmt: skip
    import pandas as pd

    table = pd.read_csv(tmp_path / "llc.csv")
    saved = np.load(tmp_path / "llc.npz")
    traces = saved["loss_trace"].astype(np.float64)
    for i, (row, trace) in enumerate(zip(table.itertuples(), traces, strict=True)):
        excess = row.nbeta * (trace - row.init_loss)
        assert row.r_hat_minibatch == pytest.approx(array_stats.rhat(excess, method="rank"), rel=1e-9)
        assert row.ess_bulk_minibatch == pytest.approx(array_stats.ess(excess, method="bulk"), rel=1e-9)
        tail = array_stats.ess(excess, method="tail", prob=(0.05, 0.95))
        assert row.ess_tail_minibatch == pytest.approx(tail, rel=1e-9)
        chains = array_stats.mcse(excess, method="mean")
        assert row.mcse_minibatch == pytest.approx(np.hypot(chains, row.nbeta * row.init_loss_stderr), rel=1e-9)
        assert row.init_loss_stderr > 0 and row.mcse_minibatch > chains
        full = row.nbeta * (saved["observed_loss"][i] - saved["centre_loss"][i])
        distance = saved["observed_distance_sq"][i]
        assert full.shape == (3, 200 // row.observed_every)
        assert row.llc_full == pytest.approx(full.mean(), rel=1e-9)
        rhat = max(array_stats.rhat(x, method="rank") for x in (full, distance))
        assert row.r_hat == pytest.approx(rhat, rel=1e-9)
        assert row.ess_bulk == pytest.approx(min(array_stats.ess(x, method="bulk") for x in (full, distance)))
        honest = np.hypot(array_stats.mcse(full, method="mean"), row.nbeta * row.init_loss_stderr)
        assert row.mcse == pytest.approx(honest, rel=1e-9)
    assert table["converged"].dtype == bool and table["local"].dtype == bool


def test_converged_needs_every_threshold():
    from grokslt.estimation.diagnostics import diagnose_minibatch

    rng = np.random.default_rng(0)
    stationary = rng.normal(5.0, 1.0, size=(4, 1000))
    assert diagnose_minibatch(stationary, 0.0, 10.0, 5.0, 0.0, 0).converged
    assert not diagnose_minibatch(stationary, 0.0, 10.0, 5.0, 0.0, 1).converged  # a diverged chain
    assert not diagnose_minibatch(stationary, 0.0, 10.0, 5.0, 1.0, 0).converged  # drift of 20% of the estimate, 60 MCSE
    shifted = stationary + np.arange(4)[:, None]  # chains that disagree
    assert diagnose_minibatch(shifted, 0.0, 10.0, 6.5, 0.0, 0).r_hat > 1.1
    assert not diagnose_minibatch(shifted, 0.0, 10.0, 6.5, 0.0, 0).converged
    walk = rng.normal(size=(4, 1000)).cumsum(axis=1) * 0.01 + 5  # strongly autocorrelated
    assert not diagnose_minibatch(walk, 0.0, 10.0, 5.0, 0.0, 0).converged


def test_the_expected_init_loss_is_what_the_minibatch_losses_average_to_over_epochs():
    """`init_loss: expected` = L_n(w*) x the epoch's mean batch-centring factor, exactly the mean minibatch loss
    the chains see at w* (devinterp's batches, last one short): checked against 400 shuffled epochs at a point
    that is not a minimum, within 4 standard errors; it carries no standard error of its own."""
    from grokslt.estimation.llc import epoch_batches, initial_losses
    from grokslt.estimation.quadratic_loss import QuadraticNetLoss
    from grokslt.estimation.samplers import SamplerSettings
    from grokslt.training.data import make_dataset

    data = make_dataset(7, 0.6, 0)  # n = 29, batches of 8: 3 full and one of 5
    generator = torch.Generator().manual_seed(0)
    params = {"W": torch.randn(1, 14, 6, generator=generator), "V": torch.randn(1, 7, 6, generator=generator)}
    loss_fn = QuadraticNetLoss.training_set(data)
    n, batch = data.n_train, 8
    expected, stderr = initial_losses(loss_fn, params, n, SamplerSettings(init_loss="expected"), batch, generator)
    epochs = 400
    losses = torch.stack([loss_fn(params, idx)[0].clone() for idx in epoch_batches(n, batch, 1, 4 * epochs, generator)])
    per_epoch = losses.view(epochs, 4).mean(dim=1)
    standard_error = per_epoch.std().item() / epochs**0.5
    assert abs(per_epoch.mean().item() - expected.item()) < 4 * standard_error
    full, _ = initial_losses(loss_fn, params, n, SamplerSettings(init_loss="full"), batch, generator)
    assert abs(full.item() - expected.item()) > 8 * standard_error  # the centring factor matters here
    assert stderr.item() == 0.0

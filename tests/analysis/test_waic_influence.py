"""WAIC of a tempered posterior against PSIS-LOO and closed forms; the Bayesian influence function against
np.cov; the Fourier frequency of a synthetic network; the influence figure from small synthetic trace files."""

from __future__ import annotations

import arviz_base
import arviz_stats
import numpy as np
import pytest
from influence_support import fourier_weights, write_trace

from grokslt.analysis.influence import bayesian_influence, binned_mean, dominant_frequency, pair_order
from grokslt.analysis.waic import bayes_generalisation_loss, waic
from grokslt.figures.influence import checkpoint_influence, influence_figure

LOG_2PI = np.log(2 * np.pi)


def gaussian_location(rng, y: np.ndarray, beta: float, chains: int, draws: int) -> np.ndarray:
    """Log-likelihoods [C, D, n] of y_i ~ N(mu, 1) at exact draws of the flat-prior tempered posterior of mu,
    N(ybar, 1 / (n beta))."""
    mu = rng.normal(y.mean(), 1 / np.sqrt(y.size * beta), (chains, draws))
    return -0.5 * (y - mu[..., None]) ** 2 - 0.5 * LOG_2PI


def test_waic_at_beta_one_agrees_with_psis_loo():
    rng = np.random.default_rng(0)
    y = rng.normal(0.3, 1.0, 200)
    mu = rng.normal(y.mean(), 1 / np.sqrt(y.size), (4, 1000))
    ll = -0.5 * (y - mu[..., None]) ** 2 - 0.5 * LOG_2PI
    loo = arviz_stats.loo(arviz_base.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}}), var_name="y")
    result = waic(ll, beta=1.0)
    assert result.n == 200
    # n W_n and -elpd_loo differ by O(1/n) and Monte Carlo error: far less than the penalty of about 1
    assert -y.size * result.waic == pytest.approx(loo.elpd, abs=0.1)
    assert y.size * (result.waic - result.training_loss) == pytest.approx(result.effective_parameters)
    # the penalties themselves (about 1, the one parameter), which a wrong factor on V_n would double or drop
    assert result.effective_parameters == pytest.approx(loo.p, rel=0.1)
    assert y.size * result.stderr == pytest.approx(loo.se, rel=0.05)


def test_functional_variance_matches_its_closed_form():
    rng = np.random.default_rng(1)
    n, beta = 200, 0.1
    y = rng.normal(0.0, 1.0, n)
    ll = gaussian_location(rng, y, beta, chains=20, draws=1000)
    # ll_i = -(d_i - e)^2 / 2 + const with d_i = y_i - ybar, e ~ N(0, s2): Var = d_i^2 s2 + s2^2 / 2
    s2 = 1 / (n * beta)
    exact = s2 * np.sum((y - y.mean()) ** 2) + n * s2**2 / 2
    per_chain = [waic(ll[c : c + 1], beta).functional_variance for c in range(ll.shape[0])]
    mcse = np.std(per_chain, ddof=1) / np.sqrt(len(per_chain))
    assert mcse < 0.02 * exact
    assert abs(waic(ll, beta).functional_variance - exact) < 4 * mcse


def test_waic_predicts_the_generalisation_loss_at_low_temperature():
    """E[W_n] = E[G_n] + o(1/n) at beta = 0.1, with a tolerance that the penalty at beta = 0, 2 beta or 1 misses.

    W_n and its expectation depend on the data only through ybar and, linearly, the residual sum of squares
    sum_i (y_i - ybar)^2; G_n only through ybar. Fixing that sum at its expectation n - 1 (ybar and the residuals'
    direction, independent of it for Gaussian data, stay random) leaves E[W_n] and E[G_n] unchanged and removes
    the dataset-to-dataset spread (about 1 / sqrt(2n)) that would otherwise need thousands of datasets to resolve
    a penalty of 1 / n."""
    rng = np.random.default_rng(2)
    n, beta, mu0 = 200, 0.1, 0.5
    s2 = 1 / (n * beta)
    results = []
    for _ in range(50):
        y = rng.normal(mu0, 1.0, n)
        residual = y - y.mean()
        y = y.mean() + residual * np.sqrt((n - 1) / np.sum(residual**2))
        results.append(waic(gaussian_location(rng, y, beta, chains=2, draws=500), beta))
    # G_n = 0.5 log(2 pi (1 + s2)) + (1 + (ybar - mu0)^2) / (2 (1 + s2)), with E[(ybar - mu0)^2] = 1 / n
    expected_g = 0.5 * np.log(2 * np.pi * (1 + s2)) + (1 + 1 / n) / (2 * (1 + s2))
    training = np.mean([r.training_loss for r in results])
    variance = np.mean([r.functional_variance for r in results])
    tolerance = 0.3 / n
    assert np.mean([r.waic for r in results]) == pytest.approx(training + beta * variance / n)
    assert abs(training + beta * variance / n - expected_g) < tolerance
    for wrong in (0.0, 2 * beta, 1.0):
        assert abs(training + wrong * variance / n - expected_g) > 2 * tolerance


def test_bayes_generalisation_loss_is_minus_the_mean_log_predictive_density():
    rng = np.random.default_rng(3)
    val_ll = rng.normal(-1.0, 0.5, (2, 3, 4))
    pointwise = -np.log(np.mean(np.exp(val_ll.reshape(6, 4)), axis=0))
    value, stderr = bayes_generalisation_loss(val_ll.astype(np.float32))
    assert value == pytest.approx(pointwise.mean())
    assert stderr == pytest.approx(pointwise.std(ddof=1) / 2)


def test_waic_stderr_is_the_spread_of_the_pointwise_criterion():
    rng = np.random.default_rng(4)
    ll = rng.normal(-1.0, 0.5, (2, 30, 5))
    beta = 0.3
    pointwise = -np.log(np.mean(np.exp(ll.reshape(60, 5)), axis=0)) + beta * ll.reshape(60, 5).var(axis=0, ddof=1)
    result = waic(ll, beta)
    assert result.waic == pytest.approx(pointwise.mean())
    assert result.stderr == pytest.approx(pointwise.std(ddof=1) / np.sqrt(5))


def test_bayesian_influence_is_minus_the_covariance_of_losses():
    rng = np.random.default_rng(5)
    shared = rng.normal(size=(2, 40, 1))
    train = shared + rng.normal(size=(2, 40, 5))
    val = np.concatenate([train[..., :1], -shared + 0.1 * rng.normal(size=(2, 40, 3))], axis=-1)
    bif = bayesian_influence(train, val)
    covariance = np.cov(np.concatenate([train, val], axis=-1).reshape(80, 9), rowvar=False)
    assert bif.shape == (5, 4)
    np.testing.assert_allclose(bif, -covariance[:5, 5:])
    assert bif[0, 0] == pytest.approx(-train[..., 0].var(ddof=1))  # a pair's influence on itself lowers its loss
    assert (bif[:, 1:] > 0).all()  # losses moving oppositely: upweighting one raises the other's loss


def test_binned_influence_is_the_mean_influence_over_the_bins_pairs():
    rng = np.random.default_rng(6)
    train, val = rng.normal(size=(2, 30, 8)), rng.normal(size=(2, 30, 6))
    train_bins, val_bins = np.array([0, 1, 1, 2, 0, 2, 2, 1]), np.array([2, 2, 0, 1, 0, 1])
    full = bayesian_influence(train, val)
    binned = bayesian_influence(binned_mean(train, train_bins, 4), binned_mean(val, val_bins, 4))
    for c in range(3):
        for d in range(3):
            assert binned[c, d] == pytest.approx(full[np.ix_(train_bins == c, val_bins == d)].mean())
    assert np.isnan(binned[3]).all() and np.isnan(binned[:, 3]).all()  # an empty bin


def test_dominant_frequency_weights_neurons_by_their_atom_norm():
    rng = np.random.default_rng(7)
    p = 23
    # three large neurons at k = 5 (atom norm 1) outweigh thirty small ones at k = 8 (atom norm 0.4^3 each, 1.9 in
    # all), which would win if neurons were counted alike (30 to 3) or by their input power (4.8 to 3);
    # k = 18 is k = 5 reflected
    W, V = fourier_weights(rng, p, [(5, 1.0), (18, 1.0), (5, 1.0)] + [(8, 0.4)] * 30)
    assert dominant_frequency(W, V, p) == 5
    W, V = fourier_weights(rng, p, [(5, 0.4)] * 3 + [(8, 1.0)] * 6)
    assert dominant_frequency(W, V, p) == 8
    with pytest.raises(ValueError, match="2p, K"):
        dominant_frequency(W[:p], V, p)


def test_pair_order_by_answer_and_by_phase():
    np.testing.assert_array_equal(pair_order(np.array([2, 0, 2, 1]), 5), [1, 3, 0, 2])
    # k = 2, p = 5: answers 0..4 have phases 0, 2, 4, 1, 3
    np.testing.assert_array_equal(pair_order(np.arange(5), 5, frequency=2), [0, 3, 1, 4, 2])
    np.testing.assert_array_equal(
        pair_order(np.array([1, 3, 1, 0]), 5, frequency=2), [3, 1, 0, 2]
    )  # ties keep their order


def test_influence_figure_from_trace_files(tmp_path):
    rng = np.random.default_rng(8)
    p = 11
    write_trace(tmp_path / "early.nc", rng, p, 700, None)
    write_trace(tmp_path / "late.nc", rng, p, 15900, fourier_weights(rng, p, [(3, 1.0)] * 4))
    late = checkpoint_influence(tmp_path / "late.nc")
    assert (late.frequency, late.p, late.step, late.draws) == (3, p, 15900, 80)
    assert late.by_answer.shape == (p, p)
    # every answer's losses share one latent: the diagonal (same answer) carries the negative influence
    assert np.diag(late.by_answer).mean() < late.by_answer[~np.eye(p, dtype=bool)].mean()
    panels = [("memorisation (step 700)", tmp_path / "early.nc"), ("after grokking", tmp_path / "late.nc")]
    fig = influence_figure(panels)
    titles = [axis.get_title() for axis in fig.axes]
    assert any("memorisation (step 700)" in title for title in titles)
    assert any("after grokking" in title for title in titles)

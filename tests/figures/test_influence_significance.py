"""The influence figure marks which BIF cells are significant: 0 outside their 95% interval over the chains."""

import numpy as np
from influence_support import fourier_weights, write_trace

from grokslt.analysis.influence import bayesian_influence, influence_stderr, significant_influence
from grokslt.figures.influence import checkpoint_influence


def test_the_standard_error_is_the_spread_of_the_chains_bifs():
    rng = np.random.default_rng(0)
    train, val = rng.normal(size=(3, 50, 4)), rng.normal(size=(3, 50, 2))
    each = np.stack([bayesian_influence(train[c : c + 1], val[c : c + 1]) for c in range(3)])
    np.testing.assert_allclose(influence_stderr(train, val), each.std(axis=0, ddof=1) / np.sqrt(3))
    assert np.isnan(influence_stderr(train[:1], val[:1])).all()


def test_shared_latents_are_significant_and_independent_pairs_mostly_not():
    rng = np.random.default_rng(1)
    chains, draws, bins = 8, 200, 6
    latent = rng.normal(size=(chains, draws, bins))
    train = latent + 0.5 * rng.normal(size=latent.shape)  # training bin c and validation bin c share latent c
    val = latent + 0.5 * rng.normal(size=latent.shape)
    significant = significant_influence(train, val)
    assert np.diag(significant).all()
    assert significant[~np.eye(bins, dtype=bool)].mean() <= 0.15  # ~5% expected by chance
    assert not significant_influence(train[:1], val[:1]).any()  # one chain: no interval, nothing claimed


def test_the_figure_s_checkpoint_carries_the_mask(tmp_path):
    rng = np.random.default_rng(8)
    write_trace(tmp_path / "late.nc", rng, 11, 15900, fourier_weights(rng, 11, [(3, 1.0)] * 4))
    late = checkpoint_influence(tmp_path / "late.nc")
    assert late.significant.shape == (11, 11) and late.significant.dtype == bool

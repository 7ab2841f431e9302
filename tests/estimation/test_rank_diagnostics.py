"""The rank-normalised R-hat, bulk and tail ESS and MCSE of `grokslt.estimation.rank_diagnostics` are ArviZ's
(arviz-stats' array functions, the field's reference) on chains that mix well, slowly, not at all, with ties, odd
draw counts and too few draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from arviz_stats.base import array_stats

from grokslt.estimation import rank_diagnostics as rank

TAILS = (0.05, 0.95)


def ar1(chains: int, draws: int, phi: float, seed: int, offsets=0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros((chains, draws))
    noise = rng.standard_normal((chains, draws))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x + offsets


CASES = {
    "white": np.random.default_rng(0).standard_normal((4, 500)),
    "slow": ar1(4, 400, 0.95, 1),
    "stuck apart": ar1(4, 300, 0.5, 2, offsets=np.array([[0.0], [0.5], [3.0], [6.0]])),
    "odd draws": ar1(3, 101, 0.7, 3),
    "ties": np.round(ar1(4, 200, 0.8, 4), 0),
    "one chain": ar1(1, 200, 0.3, 5),
    "indicator-like": (ar1(4, 200, 0.9, 6) > 1.0).astype(float),
    "heavy tails": np.random.default_rng(7).standard_cauchy((4, 300)),
}


@pytest.mark.parametrize("name", CASES)
def test_each_statistic_is_arvizs(name):
    draws = CASES[name]
    expected = {
        "rhat": float(array_stats.rhat(draws, method="rank")),
        "bulk": float(array_stats.ess(draws, method="bulk")),
        "tail": float(array_stats.ess(draws, method="tail", prob=TAILS)),
        "mcse": float(array_stats.mcse(draws, method="mean")),
    }
    ours = {
        "rhat": rank.rhat_rank(draws),
        "bulk": rank.ess_bulk(draws),
        "tail": rank.ess_tail(draws, TAILS),
        "mcse": rank.mcse_mean(draws),
    }
    for key, value in expected.items():
        if math.isnan(value):
            assert math.isnan(ours[key]), (key, ours[key])
        else:
            assert ours[key] == pytest.approx(value, rel=1e-9), key


def test_the_cases_span_what_the_convergence_rule_tells_apart():
    assert rank.rhat_rank(CASES["white"]) < 1.01 < rank.rhat_rank(CASES["stuck apart"])
    assert rank.ess_bulk(CASES["slow"]) < 100 < rank.ess_bulk(CASES["white"])


def test_too_few_draws_or_a_missing_value_give_nan():
    assert math.isnan(rank.rhat_rank(np.zeros((4, 3))))
    assert math.isnan(rank.ess_bulk(np.zeros((4, 3))))
    with_nan = CASES["white"].copy()
    with_nan[0, 0] = np.nan
    assert math.isnan(rank.mcse_mean(with_nan)) and math.isnan(rank.ess_tail(with_nan, TAILS))


def test_average_ranks_share_ties():
    assert rank.average_ranks(np.array([[3.0, 1.0], [1.0, 2.0]])).tolist() == [[4.0, 1.5], [1.5, 3.0]]

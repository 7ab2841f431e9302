"""The quadratic (Laplace) estimand lambda_Q from stochastic Lanczos quadrature on Gauss-Newton products, against
a dense eigendecomposition, the V block's closed form, the trace limit and the rank bound."""

import numpy as np
import pytest
import torch
from estimation_support import dense_gauss_newton

from grokslt.analysis.hessian import exact_trace
from grokslt.estimation.laplace import (
    LaplaceSettings,
    flat_operator,
    gauss_newton_product,
    gauss_newton_quadrature,
    gauss_rule,
    lanczos,
    laplace_stop,
    radau_rule,
)
from grokslt.estimation.linear_v import v_only_estimand
from grokslt.training.data import make_dataset

P, K = 7, 6


@pytest.fixture(scope="module")
def net():
    generator = torch.Generator().manual_seed(0)
    data = make_dataset(P, 0.5, 0)
    a, b, _ = data.subset("train")
    W = torch.randn(2 * P, K, generator=generator, dtype=torch.float64)
    V = torch.randn(P, K, generator=generator, dtype=torch.float64)
    return data, W, V, a, b


def dense_estimand(G, nbeta, gamma):
    h = torch.linalg.eigvalsh(G).clamp(min=0)
    return 0.5 * float((nbeta * h / (nbeta * h + gamma)).sum())


def test_the_product_is_the_dense_gauss_newton_matrix(net):
    _, W, V, a, b = net
    G = dense_gauss_newton(W, V, a, b)
    matvec = flat_operator(gauss_newton_product(W, V, a, b), (W.shape, V.shape))
    directions = torch.randn(3, G.shape[0], dtype=torch.float64)
    assert torch.allclose(matvec(directions), directions @ G, atol=1e-10)


def quadrature(nodes, weights, norm, nbeta, gamma):
    nodes = np.clip(nodes, 0, None)
    return norm * (weights * nbeta * nodes / (nbeta * nodes + gamma)).sum(axis=1)


@pytest.mark.parametrize("nbeta, gamma", [(1e4, 1e4), (100.0, 1.0), (1e5, 1e-2)])
def test_gauss_and_radau_bracket_each_probe(net, nbeta, gamma):
    """For one probe z, Gauss over-estimates z^T f(G) z and Gauss-Radau at 0 under-estimates it; with as many
    steps as the Krylov space needs both are exact."""
    _, W, V, a, b = net
    G = dense_gauss_newton(W, V, a, b)
    h, vectors = torch.linalg.eigh(G)
    f = nbeta * h.clamp(min=0) / (nbeta * h.clamp(min=0) + gamma)
    z = torch.randint(0, 2, (4, G.shape[0]), generator=torch.Generator().manual_seed(1)).double() * 2 - 1
    exact = ((z @ vectors).square() * f).sum(dim=1).numpy()
    matvec = flat_operator(gauss_newton_product(W, V, a, b), (W.shape, V.shape))
    for steps in (4, G.shape[0]):
        alpha, beta = lanczos(matvec, z, steps, torch.Generator().manual_seed(2))
        (g_nodes, g_weights), (r_nodes, r_weights) = gauss_rule(alpha, beta), radau_rule(alpha, beta)
        upper = quadrature(g_nodes, g_weights, G.shape[0], nbeta, gamma)
        lower = quadrature(r_nodes, r_weights, G.shape[0], nbeta, gamma)
        assert np.all(lower <= exact * (1 + 1e-8) + 1e-8) and np.all(exact <= upper * (1 + 1e-8) + 1e-8)
        if steps == G.shape[0]:
            assert np.allclose(upper, exact, rtol=1e-6) and np.allclose(lower, exact, rtol=1e-6)
        else:
            assert np.all(upper - lower > 1e-3)  # a real bracket, not a collapsed one


def test_equal_to_a_dense_eigendecomposition_within_its_standard_error(net):
    _, W, V, a, b = net
    exact = dense_estimand(dense_gauss_newton(W, V, a, b), 100.0, 1.0)
    estimate = gauss_newton_quadrature(W, V, a, b, probes=200, steps=2 * P * K + P * K, seed=0)
    value = estimate.laplace_estimand(100.0, 1.0)
    assert value["upper"] == pytest.approx(value["lower"], rel=1e-8)
    assert abs(value["value"] - exact) < 4 * value["stderr"]


def test_the_v_block_is_the_closed_form_v_only_estimand(net):
    """At a minimum of V (V* fitted by least squares), the V-only estimand of `linear_v` is its trace part: the
    same spectrum, so lambda_Q of G's V block equals it (exactly, with enough Lanczos steps)."""
    data, W, V, a, b = net
    phi = (W[a] + W[P + b]).square()
    phi_c = phi - phi.mean(dim=0)
    target = torch.nn.functional.one_hot(data.subset("train")[2], P).double()
    V_star = torch.linalg.lstsq(phi_c, target - target.mean(dim=0)).solution.T
    for nbeta, gamma in [(1e4, 1e4), (1e3, 1e-2)]:
        closed = v_only_estimand(W, V_star, data, nbeta, gamma)
        assert abs(closed["shift_part"]) < 1e-8 * closed["estimand"]
        quadrature = gauss_newton_quadrature(W, V_star, a, b, probes=300, steps=K, seed=0, v_only=True)
        value = quadrature.laplace_estimand(nbeta, gamma)
        assert abs(value["value"] - closed["estimand"]) < 4 * value["stderr"] + 1e-9


def test_trace_limit_where_curvature_is_far_below_gamma_over_nbeta(net):
    """nbeta h << gamma for every h: lambda_Q = nbeta tr(G) / (2 gamma), and tr(G) = tr(H) - the residual term,
    which is the exact Hessian trace of `analysis.hessian` when the residual term vanishes (it does in trace:
    its contribution sums to 0 for the centred loss)."""
    _, W, V, a, b = net
    nbeta, gamma = 1e-3, 1e6
    quadrature = gauss_newton_quadrature(W, V, a, b, probes=8, steps=30, seed=0)
    trace = exact_trace(W, V, a, b)
    assert quadrature.matrix_trace()["value"] == pytest.approx(trace, rel=0.2)  # Hutchinson with 8 probes
    value = quadrature.laplace_estimand(nbeta, gamma)
    assert value["value"] == pytest.approx(nbeta * quadrature.matrix_trace()["value"] / (2 * gamma), rel=1e-6)


def test_never_above_half_the_rank_bound_at_large_nbeta(net):
    """As gamma / nbeta -> 0, lambda_Q tends to rank(G) / 2 <= n (p - 1) / 2; Gauss-Radau never overshoots and the
    mid-point stays within the probes' noise of the bound even with few Lanczos steps."""
    _, W, V, a, b = net
    G = dense_gauss_newton(W, V, a, b)
    rank = int(np.linalg.matrix_rank(G.numpy()))
    assert rank <= len(a) * (P - 1)
    quadrature = gauss_newton_quadrature(W, V, a, b, probes=64, steps=G.shape[0], seed=3)
    value = quadrature.laplace_estimand(1e5, 1e-3)
    assert value["value"] == pytest.approx(rank / 2, abs=4 * value["stderr"])
    few = gauss_newton_quadrature(W, V, a, b, probes=64, steps=6, seed=3).laplace_estimand(1e5, 1e-3)
    assert few["lower"] <= rank / 2 + 4 * few["stderr"]


def test_lanczos_stops_where_the_bracket_closes_and_not_where_it_stays_open(net):
    """Where nbeta h_max / gamma is small, f is nearly linear on the spectrum: a few steps close the bracket, and the
    early mid-point is within the tolerance of the exhaustive one. Where f is a step far inside the spectrum the
    bracket stays open and every step is taken."""
    _, W, V, a, b = net
    steps = 2 * P * K + P * K
    settings = LaplaceSettings(laplace_bracket_rtol=1e-4)
    for nbeta, gamma, stops_early in [(1.0, 1e3, True), (1e5, 1e-3, False)]:
        early = gauss_newton_quadrature(W, V, a, b, 8, steps, seed=0, until=laplace_stop(nbeta, gamma, settings))
        full = gauss_newton_quadrature(W, V, a, b, 8, steps, seed=0)
        assert (early.lanczos_steps < 10) == stops_early and full.lanczos_steps == steps
        value, exhaustive = early.laplace_estimand(nbeta, gamma), full.laplace_estimand(nbeta, gamma)["value"]
        if stops_early:
            assert value["upper"] - value["lower"] <= 1e-4 * value["value"]
            assert value["value"] == pytest.approx(exhaustive, rel=1e-4)
        else:
            assert early.lanczos_steps >= 0.9 * steps


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from grokslt.training.train import TrainConfig, train

    config = TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=50, max_steps=100, early_stop=False)
    directory = tmp_path_factory.mktemp("run")
    train(config, directory)
    return directory


def test_every_llc_row_carries_lambda_q_at_its_own_settings(tiny_run, tmp_path):
    """The LLC table's Laplace columns are the quadrature's at the row's nbeta and gamma, seeded by the step."""
    import pandas as pd

    from grokslt.estimation.checkpoint_llc import Checkpoints, Sampling, write_llc_table
    from grokslt.estimation.laplace import LaplaceSettings
    from grokslt.training.runs import load_run, run_seed, step_seed

    laplace = LaplaceSettings(laplace_probes=3, laplace_lanczos_steps=12)
    out = tmp_path / "llc.csv"
    sampling = Sampling("paper_code", {"num_draws": 20, "num_burnin": 5}, seed=4)
    write_llc_table(tiny_run, out, sampling, Checkpoints("100"), laplace=laplace)
    row = pd.read_csv(out).iloc[0]
    run = load_run(tiny_run)
    a, b, _ = run.data.subset("train")
    params = run.load(100)
    seed = run_seed(4, run.config)  # the run's own, from the seed given
    nbeta, gamma = row["nbeta"], row["localization"]
    expected = gauss_newton_quadrature(params["W"], params["V"], a, b, 3, 12, step_seed(seed, 100),
                                       until=laplace_stop(nbeta, gamma, laplace))  # fmt: skip
    value = expected.laplace_estimand(nbeta, gamma)
    assert row["lambda_q"] == pytest.approx(value["value"], rel=1e-9)
    assert row["lambda_q_lanczos_steps"] == expected.lanczos_steps <= 12
    every_step = gauss_newton_quadrature(params["W"], params["V"], a, b, 3, 12, step_seed(seed, 100))
    assert row["lambda_q"] == pytest.approx(every_step.laplace_estimand(nbeta, gamma)["value"], rel=1e-4)
    assert row["lambda_q_lower"] <= row["lambda_q"] <= row["lambda_q_upper"]
    closed = v_only_estimand(params["W"], params["V"], run.data, row["nbeta"], row["localization"])
    assert row["v_reach"] == pytest.approx(closed["estimand"] / closed["learning_coefficient"], rel=1e-9)
    assert row["llc_minus_lambda_q"] == pytest.approx(row["llc_mean"] - row["lambda_q"], rel=1e-9)
    assert row["laplace_probes"] == 3


def test_no_lambda_q_where_it_is_not_the_estimand(tiny_run, tmp_path):
    """A refined estimate (one weight group) is not the whole network's: its Laplace columns are empty."""
    import pandas as pd

    from grokslt.estimation.checkpoint_llc import Checkpoints, Sampling, write_llc_table

    out = tmp_path / "llc.csv"
    write_llc_table(tiny_run, out, Sampling("paper_code", {"num_draws": 20, "num_burnin": 5, "weights": "V"}),
                    Checkpoints("100"))  # fmt: skip
    row = pd.read_csv(out).iloc[0]
    assert np.isnan(row["lambda_q"]) and np.isnan(row["v_reach"])
    assert row["laplace_probes"] == 0

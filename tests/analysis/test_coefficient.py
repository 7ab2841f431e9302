"""The data-rank learning coefficient: the Lanczos count of G's rank against a dense rank, and the rule's refusals."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from estimation_support import dense_gauss_newton

from grokslt.analysis.coefficient import data_rank, write_coefficient_table
from grokslt.errors import BadInput
from grokslt.estimation.laplace import gauss_newton_quadrature
from grokslt.training.data import make_dataset


def interpolating_net(p=5, hidden=16):
    """Random W and V* fitting the centred targets exactly (hidden >= n - 1: the centred features span them)."""
    data = make_dataset(p, 0.5, 0)
    a, b, c = data.subset("train")
    W = torch.randn(2 * p, hidden, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    phi = (W[a] + W[p + b]).square()
    target = torch.nn.functional.one_hot(c, p).double()
    V = torch.linalg.lstsq(phi - phi.mean(0), target - target.mean(0)).solution.T
    return W, V, a, b


def test_the_count_is_the_dense_rank_of_the_gauss_newton_matrix():
    W, V, a, b = interpolating_net()
    G = dense_gauss_newton(W, V, a, b).numpy()
    rank = np.linalg.matrix_rank(G, tol=1e-9 * np.linalg.eigvalsh(G).max())
    assert rank <= min(G.shape[0], 5 * (len(a) - 1))
    # a probe's Krylov space has at most rank + 1 dimensions: more steps than that make the rules exact
    quadrature = gauss_newton_quadrature(W, V, a, b, probes=32, steps=5 * len(a) + 2, seed=0)
    counted = data_rank(quadrature)
    assert counted["rank_gap"]
    assert counted["data_rank"] == pytest.approx(rank, abs=4 * counted["data_rank_stderr"])


def test_no_half_rank_where_the_checkpoint_does_not_interpolate(tmp_path):
    from grokslt.training.train import TrainConfig, train

    config = TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=50, max_steps=50, early_stop=False)
    train(config, tmp_path / "run")
    write_coefficient_table(tmp_path / "run", tmp_path / "c.csv", steps="50", probes=2, lanczos_steps=8)
    row = pd.read_csv(tmp_path / "c.csv").iloc[0]
    assert not row["interpolating"] and math.isnan(row["half_rank"])
    assert row["lambda_q_local"] == pytest.approx(row["half_trace"], rel=0.5)  # nbeta h << gamma: tr(G) / 2
    with pytest.raises(BadInput, match="probes = 1"):
        write_coefficient_table(tmp_path / "run", tmp_path / "c.csv", probes=1)

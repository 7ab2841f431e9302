"""Small losses and networks with known answers for the estimators' tests (tests/estimation, tests/analysis)."""

from __future__ import annotations

import torch

from grokslt.training.data import make_dataset
from grokslt.training.model import forward_pairs


class ShiftedQuadratic:
    """L(w) = 1/2 sum_k h_k (w_k - a_k)^2: minimum at a, where the chains start; the zero function (w = 0)
    has loss 1/2 sum h_k a_k^2. Its tempered posterior at w* = a is Gaussian with precision nbeta h + gamma."""

    def __init__(self, h, a):
        self.h, self.a = torch.as_tensor(h, dtype=torch.float64), torch.as_tensor(a, dtype=torch.float64)

    def __call__(self, params, idx):
        u = params["w"] - self.a
        loss = 0.5 * (self.h * u**2).sum(dim=1)
        return loss, {"w": self.h * u}

    def estimand(self, nbeta, gamma) -> float:
        return float(0.5 * (nbeta * self.h / (nbeta * self.h + gamma)).sum())


def tiny_net(p=7, K=6, seed=0):
    data = make_dataset(p, 0.6, seed)
    generator = torch.Generator().manual_seed(seed)
    W = torch.randn(2 * p, K, generator=generator, dtype=torch.float64)
    V = 0.1 * torch.randn(p, K, generator=generator, dtype=torch.float64)
    W[:, :2] *= 0.01  # two small atoms: atoms:top and atoms:rest both non-empty
    return data, W, V


def dense_gauss_newton(W, V, a, b):
    """(1/n) J^T P J from autograd's Jacobian of the centred outputs."""

    def centred_outputs(flat):
        outputs = forward_pairs(flat[: W.numel()].reshape(W.shape), flat[W.numel() :].reshape(V.shape), a, b)
        return (outputs - outputs.mean(dim=0)).reshape(-1)

    J = torch.autograd.functional.jacobian(centred_outputs, torch.cat([W.reshape(-1), V.reshape(-1)]))
    return J.T @ J / len(a)

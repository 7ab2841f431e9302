"""The two-layer quadratic network Yhat = V sigma(W^T x), sigma(z) = z^2, no biases (section 3.2).

Parameters are stored as PyTorch `nn.Linear` weights: W has shape [K, 2p] (the paper's W^T) and V has
shape [p, K]. Because x = [e_a; e_b] is two one-hots, W^T x = W[:, a] + W[:, p + b]: the first layer
is a gather of two columns, not a matmul. The functional forms accept leading batch dimensions on
the parameters ([C, K, 2p], [C, p, K]) so that chains or checkpoints run as one computation.
"""

from __future__ import annotations

import torch
from torch import nn

from grokslt.loss import centred_residual


class QuadraticNet(nn.Module):
    """`nn.Linear(2p, K)` then `nn.Linear(K, p)`, both bias-free, PyTorch's default initialisation.

    Created in that order, right after `torch.manual_seed(seed)`, it draws the same initial weights as
    the authors' model.
    """

    def __init__(self, p: int, hidden: int):
        super().__init__()
        if p < 1 or hidden < 1:
            raise ValueError(f"p = {p}, hidden = {hidden}: expected positive sizes")
        self.p = p
        self.hidden = hidden
        self.W = nn.Linear(2 * p, hidden, bias=False)
        self.V = nn.Linear(hidden, p, bias=False)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return forward_pairs(self.W.weight, self.V.weight, a, b)

    def forward_dense(self, x: torch.Tensor) -> torch.Tensor:
        return forward_dense(self.W.weight, self.V.weight, x)

    def params(self) -> dict[str, torch.Tensor]:
        return {"W": self.W.weight.detach(), "V": self.V.weight.detach()}

    def load_params(self, params: dict[str, torch.Tensor]) -> QuadraticNet:
        with torch.no_grad():
            self.W.weight.copy_(params["W"])
            self.V.weight.copy_(params["V"])
        return self


def hidden_pre_activation(W: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """W^T x for x = [e_a; e_b]: rows W[:, a] + W[:, p + b], shape [..., n, K]."""
    p = W.shape[-1] // 2
    rows = W.transpose(-1, -2)  # [..., 2p, K]
    first = torch.take_along_dim(rows, a.unsqueeze(-1), dim=-2)
    second = torch.take_along_dim(rows, (b + p).unsqueeze(-1), dim=-2)
    return first + second


def forward_pairs(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Network outputs [..., n, p] by the gather form."""
    return hidden_pre_activation(W, a, b).square() @ V.transpose(-1, -2)


def forward_dense(W: torch.Tensor, V: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Network outputs [..., n, p] from dense inputs x [n, 2p], exactly as written in the paper."""
    return (x @ W.transpose(-1, -2)).square() @ V.transpose(-1, -2)


def atom_norms(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """||v_j|| ||w_j||^2 = ||v_j (w_j w_j^T)||_F for each neuron j: the size of its atom in Phi_p."""
    return V.norm(dim=-2) * W.pow(2).sum(dim=-1)


def atoms(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """The atoms v_j (x) w_j w_j^T, shape [K, p, 2p, 2p]; their sum over j is (Q_1, ..., Q_p)."""
    outer = W.unsqueeze(-1) * W.unsqueeze(-2)  # [K, 2p, 2p]
    return V.transpose(0, 1)[:, :, None, None] * outer[:, None]


def centred_loss_and_grad(
    W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The centred loss of the gather-form network and its gradient, derived by hand.

    With h = W^T x, z = h^2, E = P_perp (Y - z V^T): dL/dYhat = -E / n, so
    dL/dV = (dL/dYhat)^T z, dL/dh = 2 h (dL/dYhat V), and dL/dW scatters dL/dh back onto the two
    columns a and p + b of each sample. Leading batch dimensions on W, V, a, b, c are allowed.
    Returns (loss [...], grad_W, grad_V); about 40% of the FLOPs of autograd on the dense form.
    """
    n = a.shape[-1]
    p = V.shape[-2]
    h = hidden_pre_activation(W, a, b)
    z = h.square()
    pred = z @ V.transpose(-1, -2)
    target = torch.zeros_like(pred).scatter_(-1, c.unsqueeze(-1), 1.0)
    residual = centred_residual(pred, target)
    loss = 0.5 * residual.pow(2).sum(dim=(-2, -1)) / n
    d_pred = residual.mul_(-1.0 / n)
    grad_V = d_pred.transpose(-1, -2) @ z
    d_h = (d_pred @ V).mul_(2.0 * h)
    grad_rows = torch.zeros(W.shape[:-2] + (2 * p, W.shape[-2]), dtype=W.dtype, device=W.device)
    index = torch.cat([a, b + p], dim=-1).unsqueeze(-1).expand(*a.shape[:-1], 2 * n, h.shape[-1])
    grad_rows.scatter_add_(-2, index, torch.cat([d_h, d_h], dim=-2))
    return loss, grad_rows.transpose(-1, -2), grad_V

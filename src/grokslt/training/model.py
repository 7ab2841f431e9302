"""The two-layer quadratic network Yhat = V sigma(W^T x), sigma(z) = z^2, no biases (section 3.2).

Parameters follow the paper: W has shape [d, K] = [2p, K] and V has shape [p, K]. Because
x = [e_a; e_b] is two one-hots, W^T x = W[a] + W[p + b]: the first layer is a gather of two rows of
W, not a matmul, and its gradient is a scatter-add onto those rows. The functional forms accept
leading batch dimensions on the parameters ([C, 2p, K], [C, p, K]) so that chains or checkpoints
run as one computation.
"""

from __future__ import annotations

import torch
from torch import nn

from grokslt import cpu_kernels
from grokslt.training.loss import centred_residual


class QuadraticNet(nn.Module):
    """The network with parameters W [2p, K] and V [p, K].

    Initialised as the authors' model: `nn.Linear(2p, K)` then `nn.Linear(K, p)`, both bias-free with
    PyTorch's default initialisation, created in that order right after `torch.manual_seed(seed)`;
    W is the transpose of the first layer's weight and V the second layer's weight.
    """

    def __init__(self, p: int, hidden: int):
        super().__init__()
        if p < 1 or hidden < 1:
            raise ValueError(f"p = {p}, hidden = {hidden}: expected positive sizes")
        self.p = p
        self.hidden = hidden
        first = nn.Linear(2 * p, hidden, bias=False)
        second = nn.Linear(hidden, p, bias=False)
        self.W = nn.Parameter(first.weight.detach().t().contiguous())
        self.V = nn.Parameter(second.weight.detach().clone())

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return forward_pairs(self.W, self.V, a, b)

    def forward_dense(self, x: torch.Tensor) -> torch.Tensor:
        return forward_dense(self.W, self.V, x)

    def params(self) -> dict[str, torch.Tensor]:
        return {"W": self.W.detach(), "V": self.V.detach()}

    def load_params(self, params: dict[str, torch.Tensor]) -> QuadraticNet:
        with torch.no_grad():
            self.W.copy_(params["W"])
            self.V.copy_(params["V"])
        return self

    @classmethod
    def from_params(cls, params: dict[str, torch.Tensor]) -> QuadraticNet:
        two_p, hidden = params["W"].shape
        return cls(two_p // 2, hidden).load_params(params)


def _flat_row_index(rows: torch.Tensor, batch_shape: torch.Size, per_batch: int) -> torch.Tensor:
    """Indices of `rows` [..., n] into the batch-flattened table [prod(batch_shape) * per_batch, K]."""
    rows = rows.expand(batch_shape + rows.shape[-1:])
    offsets = torch.arange(batch_shape.numel(), device=rows.device).reshape(batch_shape + (1,))
    return (rows + offsets * per_batch).reshape(-1)


def _pair_row_index(W: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat row indices of W for a and for p + b, over W's batch dimensions."""
    two_p = W.shape[-2]
    batch = W.shape[:-2]
    return _flat_row_index(a, batch, two_p), _flat_row_index(b + two_p // 2, batch, two_p)


def hidden_pre_activation(W: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """W^T x for x = [e_a; e_b]: W[a] + W[p + b], shape [..., n, K]."""
    hidden = W.shape[-1]
    table = W.reshape(-1, hidden)
    h = _gather_pairs(table, *_pair_row_index(W, a, b))
    return h.reshape(W.shape[:-2] + a.shape[-1:] + (hidden,))


def _gather_pairs(table: torch.Tensor, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """table[first] + table[second]."""
    return table.index_select(0, first).add_(table.index_select(0, second))


def _gather_square(table: torch.Tensor, first: torch.Tensor, second: torch.Tensor):
    """(z, h) with h = table[first] + table[second] and z = h^2. Where the CPU kernels apply, z comes
    in one pass and h is None: the scatter recomputes it from the table, which stays in cache."""
    if cpu_kernels.applicable(table):
        return cpu_kernels.gather_square(table, first, second), None
    h = _gather_pairs(table, first, second)
    return h.square(), h


def _scatter_hidden_grad(g: torch.Tensor, table: torch.Tensor, first, second, scale: float, h) -> torch.Tensor:
    """Zeros like `table` with scale * g * h added onto rows `first`, then onto rows `second`, where
    h = table[first] + table[second] (None: recompute it in the CPU kernel): the gradient for `table`
    when scale * g * h is that for h."""
    if h is None:
        return cpu_kernels.scatter_product(g, table, first, second, scale)
    product = (g * h).mul_(scale)
    grad = torch.zeros_like(table)
    for index in (first, second):
        grad.index_add_(0, index, product)
    return grad


def forward_pairs(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Network outputs [..., n, p] by the gather form."""
    return hidden_pre_activation(W, a, b).square() @ V.transpose(-1, -2)


def forward_dense(W: torch.Tensor, V: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Network outputs [..., n, p] from dense inputs x [n, 2p], exactly as written in the paper."""
    return (x @ W).square() @ V.transpose(-1, -2)


def atom_norms(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """||v_j|| ||w_j||^2 = ||v_j (x) w_j w_j^T||_F for each neuron j: its atom's size in Phi_p."""
    return V.norm(dim=-2) * W.pow(2).sum(dim=-2)


def top_atoms(W: torch.Tensor, V: torch.Tensor, mass: float = 0.99) -> torch.Tensor:
    """The neurons whose atoms carry the function: the fewest, largest by `atom_norms`, holding `mass` of
    their total (their count is K_eff of Remark 5.5), as indices sorted by size. Weight decay acts on the
    atoms like an L1 penalty (the L2 <-> L1 duality of homogeneous nets), so trained networks put their
    function on few atoms and leave the rest near zero."""
    if not 0 < mass <= 1:
        raise ValueError(f"mass = {mass!r}: expected a number in (0, 1]")
    norms = atom_norms(W.double(), V.double())
    order = norms.argsort(descending=True)
    total = norms.sum()
    if total == 0:
        return order[:0]
    cumulative = norms[order].cumsum(0) / total
    return order[: min(int((cumulative < mass).sum()) + 1, len(norms))]


def atoms(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """The atoms v_j (x) w_j w_j^T, shape [K, p, 2p, 2p]; their sum over j is (Q_1, ..., Q_p)."""
    columns = W.transpose(0, 1)  # [K, 2p]
    outer = columns.unsqueeze(-1) * columns.unsqueeze(-2)
    return V.transpose(0, 1)[:, :, None, None] * outer[:, None]


def centred_loss_and_grad(
    W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The centred loss of the gather-form network and its gradient, derived by hand.

    With h = W^T x, z = h^2, E = P_perp (Y - z V^T): dL/dYhat = -E / n, so
    dL/dV = (dL/dYhat)^T z, dL/dh = 2 h (dL/dYhat V), and dL/dW scatter-adds dL/dh onto the two
    rows a and p + b of each sample. Leading batch dimensions on W, V, a, b, c are allowed.
    Returns (loss [...], grad_W, grad_V); about 40% of the FLOPs of autograd on the dense form.
    """
    n = a.shape[-1]
    hidden = W.shape[-1]
    table = W.reshape(-1, hidden)
    first, second = _pair_row_index(W, a, b)
    z, h = _gather_square(table, first, second)
    z = z.reshape(W.shape[:-2] + (n, hidden))
    pred = z @ V.transpose(-1, -2)
    target = torch.zeros_like(pred).scatter_(-1, c.expand(pred.shape[:-1]).unsqueeze(-1), 1.0)
    residual = centred_residual(pred, target)
    loss = 0.5 * residual.pow(2).sum(dim=(-2, -1)) / n
    grad_V = (residual.transpose(-1, -2) @ z).mul_(-1.0 / n)
    # dL/dh = -(2/n) (residual V) h
    grad_W = _scatter_hidden_grad((residual @ V).reshape(-1, hidden), table, first, second, -2.0 / n, h)
    return loss, grad_W.reshape(W.shape), grad_V

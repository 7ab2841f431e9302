"""A fixed preconditioner P = (nbeta G + gamma I)^-1 from the Gauss-Newton matrix G at w*, block by block.

The localized tempered posterior exp(-nbeta L_n(w) - gamma/2 ||w - w*||^2) has, near w*, the precision
nbeta G + gamma I with G = (1/n) J^T C J (J the Jacobian of the n x p outputs, C the centring over the samples;
`grokslt.estimation.laplace`). Its eigenvalues span nbeta h_max + gamma down to gamma, a condition number of
nbeta h_max / gamma (3e4 at nbeta 1e6, gamma 1 on the paper's baseline), which plain Langevin must resolve with one
step size. Preconditioning by the inverse precision makes every direction P sees relax at the same rate. P is built
once at w* and never changes, so Metropolis-adjusted Langevin with it stays exact for the target.

For the quadratic network f_c(a, b) = sum_k V_ck h_k^2, h_k = W_ka + W_k(p+b) (`grokslt.training.model`):
- V block, exact: with W fixed the outputs are linear in V with features z = h^2, so G_VV = I_p (x) Z_c^T Z_c / n
  (Z_c centred over the samples), one K x K matrix shared by the p rows of V (as `linear_v.v_only_estimand`'s H).
- W block, per neuron: the outputs' derivative in W_rk is 2 V_ck h_ik [r in {a_i, p + b_i}], so
  G_(rk),(r'k') = 4 (V^T V)_kk' (A_k^T C A_k')_rr' / n with (A_k)_ir = h_ik [r in {a_i, p + b_i}]. P keeps the K
  diagonal blocks k = k' (each 2p x 2p): the whole W block (2pK)^2 is too large to factor, its diagonal drops the
  coupling of W_ka with W_k(p+b) through the shared h_k (the pairs), and neurons couple only through the overlap
  of their output weights (V^T V)_kk'. The blocks W-V and across neurons are left out; what they hold makes P
  inexact, which costs mixing speed, never correctness.

A loss function offers its Gauss-Newton blocks by `curvature_blocks(centre)` (centre: w* without a chain
dimension), {name: Blocks}; `preconditioned_mala` in `grokslt.estimation.samplers` uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grokslt.errors import BadInput
from grokslt.training.model import hidden_pre_activation

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Layout:
    """How a parameter tensor [*shape] falls into independent blocks: `block_axis` indexes the m coordinates of a
    block; `group_axis` (or none) the G blocks with matrices of their own; every other axis repeats each block's
    matrix (V's p rows share one K x K matrix)."""

    group_axis: int | None
    block_axis: int

    def permutation(self, dims: int) -> list[int]:
        """Axes of a tensor [R, *shape] (R chains) in the order (group, chains, repeated axes, block)."""
        shape_axes = [a + 1 for a in range(dims)]
        lead = [self.group_axis + 1] if self.group_axis is not None else []
        rest = [a for a in shape_axes if a - 1 not in (self.group_axis, self.block_axis)]
        return lead + [0] + rest + [self.block_axis + 1]

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """x [R, *shape] -> [G, R * rows, m]."""
        moved = x.permute(self.permutation(x.dim() - 1))
        if self.group_axis is None:
            moved = moved.unsqueeze(0)
        return moved.reshape(moved.shape[0], -1, moved.shape[-1])

    def merge(self, y: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        """The inverse of `split`, back to [R, *shape] (`shape` of x)."""
        order = self.permutation(len(shape) - 1)
        moved_shape = [shape[a] for a in order]
        moved = y.reshape(moved_shape)
        return moved.permute(torch.argsort(torch.tensor(order)).tolist())


@dataclass(frozen=True)
class Blocks:
    """G restricted to one parameter tensor, as `matrices` [G, m, m] (positive semi-definite) on its `layout`."""

    matrices: torch.Tensor
    layout: Layout


class BlockPreconditioner:
    """P = (nbeta G + gamma I)^-1 on each tensor's blocks, kept as eigenvectors Q [G, m, m] and precisions
    a = nbeta h + gamma [G, m] (h >= 0, the blocks' eigenvalues clipped at 0). Coordinates y = Q^T (w - w*) per
    block ([G, R * rows, m]) make P diagonal: P = Q diag(1 / a) Q^T."""

    def __init__(self, blocks: dict[str, Blocks], nbeta: float, gamma: float, dtype: torch.dtype):
        self.layouts = {name: block.layout for name, block in blocks.items()}
        self.vectors, self.precision = {}, {}
        for name, block in blocks.items():
            h, Q = torch.linalg.eigh(block.matrices.double())
            self.vectors[name] = Q.to(dtype)
            precision = nbeta * h.clamp(min=0.0) + gamma
            if not bool((precision > 0).all()):
                raise BadInput(f"sampler = pmala: localization {gamma} and a singular Gauss-Newton block of {name}: "
                               "P = (nbeta G + gamma I)^-1 does not exist; expected gamma > 0")  # fmt: skip
            self.precision[name] = precision.to(dtype).unsqueeze(1)  # [G, 1, m]

    def to_eigen(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """Q^T x for x [R, *shape] -> [G, R * rows, m]."""
        return torch.bmm(self.layouts[name].split(x), self.vectors[name])

    def from_eigen(self, name: str, y: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        """Q y -> [R, *shape]."""
        return self.layouts[name].merge(torch.bmm(y, self.vectors[name].transpose(1, 2)), shape)

    def condition_number(self) -> float:
        """max a / min a over every block: the condition number of the precision that P removes."""
        values = torch.cat([a.flatten() for a in self.precision.values()])
        return float(values.max() / values.min())


def per_chain_sum(y: torch.Tensor, chains: int) -> torch.Tensor:
    """Sum of y [G, R * rows, m] per chain, [R], in float64."""
    return y.double().reshape(y.shape[0], chains, -1).sum(dim=(0, 2))


# -- the quadratic network's Gauss-Newton blocks ---------------------------------------------------------------

V_LAYOUT = Layout(group_axis=None, block_axis=1)  # V [p, K]: one K x K block for its p rows
W_LAYOUT = Layout(group_axis=1, block_axis=0)  # W [2p, K]: one 2p x 2p block per neuron


def feature_block(phi: torch.Tensor) -> Blocks:
    """G's V block from the features Phi = h^2 [n, K]: Phi_c^T Phi_c / n, in float64."""
    phi = phi.double()
    centred = phi - phi.mean(dim=0, keepdim=True)
    return Blocks((centred.T @ centred / len(phi)).unsqueeze(0), V_LAYOUT)


def neuron_blocks(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> Blocks:
    """G's W block's diagonal blocks, one per neuron k: 4 ||V_k||^2 (A_k^T A_k - s_k s_k^T / n) / n with
    s_k = A_k^T 1 (module doc), in float64. A_k has two non-zeros per row (columns a_i and p + b_i), so
    A_k^T A_k is a scatter of h_ik^2 onto four entries per pair."""
    W, V = W.detach().double(), V.detach().double()
    p, hidden = V.shape
    n, width = len(a), 2 * p
    h = hidden_pre_activation(W, a, b)  # [n, K]
    squares = h.square().T.contiguous()  # [K, n]
    first, second = a, b + p
    gram = torch.zeros(hidden, width * width, dtype=torch.float64)
    for r, s in ((first, first), (first, second), (second, first), (second, second)):
        gram.index_add_(1, r * width + s, squares)
    incidence = torch.nn.functional.one_hot(first, width).double() + torch.nn.functional.one_hot(second, width).double()
    sums = h.T @ incidence  # [K, 2p]
    centred = gram.view(hidden, width, width) - sums.unsqueeze(2) * sums.unsqueeze(1) / n
    scale = 4.0 * V.square().sum(dim=0) / n  # [K]
    return Blocks(centred * scale.view(-1, 1, 1), W_LAYOUT)


def quadratic_net_blocks(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> dict[str, Blocks]:
    """{"W": per-neuron blocks, "V": the exact V block} at w* = (W [2p, K], V [p, K]) on the pairs (a, b)."""
    phi = hidden_pre_activation(W.detach().double(), a, b).square()
    return {"W": neuron_blocks(W, V, a, b), "V": feature_block(phi)}

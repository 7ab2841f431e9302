"""Refined LLCs (Wang et al., ICLR 2025): the estimate restricted to a group of weights or to a subset of the data.

Weight-refined: only the group's parameters move, the others stay at w*; the estimate is the LLC of the
model w_group -> f(w_group, w*_rest) at w*_group, localized around it. Groups of the quadratic network
(`grokslt.estimation.samplers.WEIGHT_GROUPS`):
- `all`; `W`, `V`: the layers;
- `W_a`, `W_b`: the rows of W that embed the first operand a, the second operand b;
- `atoms:top`, `atoms:rest`: the columns of W and V of the neurons whose atoms carry the function (the K_eff
  largest by ||v_j|| ||w_j||^2, `grokslt.training.model.top_atoms`, chosen at each checkpoint), the others.
V alone makes the network linear in V, with an exact estimand (`grokslt.estimation.linear_v`), always beside it.

Data-refined: the posterior's loss and the estimate are those of a subset of the pairs (`ModularArithmetic.subset`:
train, val, all, residue:c), n its size. Every subset's loss is the paper's centred loss, centred over the
subset's (and the minibatch's) samples. For `residue:c` all pairs share one target, which the centring removes:
the loss is then the spread of the network's outputs over pairs with the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from grokslt.errors import BadInput
from grokslt.estimation.functional_loss import NetworkLoss
from grokslt.estimation.linear_v import LinearInVLoss, v_only_estimand
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.estimation.samplers import SamplerSettings
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network
from grokslt.training.model import top_atoms
from grokslt.training.train import zero_function_loss

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Piece:
    """Where a sampled parameter lives: the network's tensor, and (for part of it) the indices along one of
    its dimensions (counted without the chain dimension)."""

    tensor: str
    dim: int | None = None
    index: torch.Tensor | None = None

    def take(self, full: torch.Tensor, chains: bool) -> torch.Tensor:
        if self.index is None:
            return full
        return full.index_select(self.dim + int(chains), self.index)


def weight_pieces(group: str, W: torch.Tensor, V: torch.Tensor) -> dict[str, Piece]:
    """The parameters a weight group samples, by name, at w* = (W [2p, K], V [p, K]), indices on their device."""
    p = V.shape[0]
    if group == "all":
        return {"W": Piece("W"), "V": Piece("V")}
    if group in ("W", "V"):
        return {group: Piece(group)}
    if group in ("W_a", "W_b"):
        rows = torch.arange(p, device=W.device) if group == "W_a" else torch.arange(p, 2 * p, device=W.device)
        return {group: Piece("W", 0, rows)}
    if group in ("atoms:top", "atoms:rest"):
        top = top_atoms(W, V)
        neurons = top if group == "atoms:top" else _complement(top, V.shape[1])
        if len(neurons) == 0:
            raise BadInput(f"weights = {group!r}: no neurons in that group at this checkpoint")
        name = group.split(":")[1]
        return {f"W_{name}": Piece("W", 1, neurons.sort().values), f"V_{name}": Piece("V", 1, neurons.sort().values)}
    raise BadInput(f"weights = {group!r}: expected one of all, W, V, W_a, W_b, atoms:top, atoms:rest")


def _complement(indices: torch.Tensor, size: int) -> torch.Tensor:
    keep = torch.ones(size, dtype=torch.bool, device=indices.device)
    keep[indices] = False
    return keep.nonzero().flatten()


class FrozenParamsLoss:
    """A loss function of part of the parameters (`pieces`), the rest held at `centre` (w*, no chain dimension):
    it writes the sampled parts into a copy of w* per chain, calls `inner`, and returns the sampled parts'
    gradients."""

    def __init__(self, inner, centre: Params, pieces: dict[str, Piece]):
        self.inner, self.centre, self.pieces = inner, centre, pieces
        self._full: dict[int, Params] = {}

    def free_centre(self) -> Params:
        """The sampled parameters at w*, without a chain dimension."""
        return {name: piece.take(self.centre[piece.tensor], chains=False) for name, piece in self.pieces.items()}

    def assemble(self, free: Params) -> Params:
        rows = next(iter(free.values())).shape[0]
        if rows not in self._full:  # held entries never change: copied once per number of rows
            self._full[rows] = {k: v.unsqueeze(0).repeat(rows, *[1] * v.dim()) for k, v in self.centre.items()}
        full = dict(self._full[rows])
        for name, piece in self.pieces.items():
            if piece.index is None:
                full[piece.tensor] = free[name]
            else:
                full[piece.tensor].index_copy_(piece.dim + 1, piece.index, free[name])
        return full

    def __call__(self, free: Params, idx: torch.Tensor):
        loss, grads = self.inner(self.assemble(free), idx)
        return loss, {name: piece.take(grads[piece.tensor], chains=True) for name, piece in self.pieces.items()}

    def observe(self, free: Params) -> dict[str, torch.Tensor]:
        return self.inner.observe(self.assemble(free))

    def curvature_blocks(self, free_centre: Params) -> dict:
        """The inner loss's Gauss-Newton blocks of the sampled tensors, where they are whole tensors (W or V)."""
        parts = [name for name, piece in self.pieces.items() if piece.index is not None]
        if parts:
            raise BadInput(f"sampler = pmala: no preconditioner for part of a tensor ({', '.join(parts)}); "
                           "expected weights all, W or V")  # fmt: skip
        blocks = self.inner.curvature_blocks(self.centre)
        return {name: blocks[piece.tensor] for name, piece in self.pieces.items()}


@dataclass
class RefinedProblem:
    """What the sampler needs for one checkpoint's refined estimate: the loss function of the sampled
    parameters, their values at w*, the number of pairs n, and the closed-form estimand where one exists."""

    loss_fn: Callable
    centre: Params
    n: int
    exact: Callable[[float], dict] | None = None


def refined_problem(
    data: ModularArithmetic,
    params: Params,
    settings: SamplerSettings,
    device="cpu",
    pair_sets: Sequence[str] = (),
    network: Network | None = None,
) -> RefinedProblem:
    """The estimate of `settings.weights` on `settings.data` at w* = params (the quadratic network's {"W", "V"}
    unless `network` says otherwise); per-pair traces on `pair_sets` (names of subsets) where asked."""
    n = len(data.subset(settings.data)[0])
    network = network or Network.paper(data.p, params["W"].shape[1])
    if not network.paper_model:
        check_network_supports(settings, network)
        centre = {name: value.detach().to(device) for name, value in params.items()}
        loss_fn = NetworkLoss.training_set(network, data, device, settings.data, pair_sets)
        problem = RefinedProblem(loss_fn, centre, n)
    else:
        W, V = params["W"].detach().to(device), params["V"].detach().to(device)
        problem = _problem(data, W, V, settings, device, pair_sets, n)
    # locality's scale: the whole network's zero function on the training set, whatever group or subset is sampled
    problem.loss_fn.zero_function_loss = zero_function_loss(data, network.loss)
    return problem


def check_network_supports(settings: SamplerSettings, network: Network) -> None:
    """Weight groups (and V's closed form) are the quadratic network's with the centred loss: refused for others."""
    if settings.weights != "all" and not network.paper_model:
        raise BadInput(
            f"weights = {settings.weights!r}: weight groups are the quadratic network's with the centred MSE; this "
            f"run is model {network.model} with loss {network.loss}: use weights all"
        )


def _problem(data, W, V, settings: SamplerSettings, device, pair_sets, n: int) -> RefinedProblem:
    exact = None
    if settings.weights == "V":

        def exact(nbeta: float) -> dict:  # noqa: E306
            return v_only_estimand(W, V, data, nbeta, settings.localization, settings.data)

        if not pair_sets:  # linear in V: the fast path (its observations have no per-pair losses)
            return RefinedProblem(LinearInVLoss.training_set(data, W, device, settings.data), {"V": V}, n, exact)
    inner = QuadraticNetLoss.training_set(data, device, settings.data, pair_sets)
    if settings.weights == "all":
        return RefinedProblem(inner, {"W": W, "V": V}, n)
    frozen = FrozenParamsLoss(inner, {"W": W, "V": V}, weight_pieces(settings.weights, W, V))
    return RefinedProblem(frozen, frozen.free_centre(), n, exact)

"""The loss function of `grokslt.estimation.llc` for any model family, batched over chains by `torch.func`.

`NetworkLoss(network, a, b, c)` is loss_fn(params [C, ...], idx [C, B]) -> (loss [C], gradients): each chain's
minibatch loss from `vmap` of the family's forward pass on unbatched parameters, and the gradients by one
backward pass of the chains' summed losses (chains do not interact, so each chain's gradient is its own loss's),
so a family needs no hand-derived gradient. This is 30% faster per step than `vmap(grad(...))` for the MLP on one
CPU thread. The quadratic network keeps its own faster `QuadraticNetLoss` (`grokslt.estimation.quadratic_loss`);
on it the two agree to rounding (tested).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch.func import vmap

from grokslt.estimation.observables import fit_on_training_set
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network
from grokslt.training.loss import pair_losses, sample_loss


@dataclass
class NetworkLoss:
    """The run's training loss of `network` on the pairs (a, b) with classes c; `pair_sets` ({name: (a, b, c)})
    are the sets of pairs whose per-pair losses `observe` also reports."""

    network: Network
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    pair_sets: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        def minibatch_loss(params, idx):
            return sample_loss(self.network.loss, self.network.forward(params, self.a[idx], self.b[idx]), self.c[idx])

        self._losses = vmap(minibatch_loss)
        self._outputs = vmap(self.network.forward, in_dims=(0, None, None))

    @property
    def loss_kind(self) -> str:
        """The loss the network trained with (L_init's expectation depends on it: `init_loss_factor`)."""
        return self.network.loss

    @classmethod
    def training_set(cls, network: Network, data: ModularArithmetic, device="cpu", subset="train", pair_sets=()):
        """On `subset` of the data's pairs (`ModularArithmetic.subset`), with per-pair traces on `pair_sets`."""
        pairs = data.subsets_on({subset, *pair_sets}, device)
        return cls(network, *pairs[subset], {name: pairs[name] for name in pair_sets})

    def __call__(self, params, idx):
        with torch.enable_grad():
            leaves = {name: value.detach().requires_grad_(True) for name, value in params.items()}
            loss = self._losses(leaves, idx)
            grads = torch.autograd.grad(loss.sum(), list(leaves.values()))
        return loss.detach(), dict(zip(leaves, grads, strict=True))

    @torch.no_grad()
    def observe(self, params, rows_at_once: int = 8) -> dict[str, torch.Tensor]:
        """Each chain's full loss and accuracy on (a, b, c), [R] each (`observables.fit_on_training_set`), and its
        per-pair losses on each of `pair_sets` ([R, m]), `rows_at_once` chains at a time to bound the memory of
        their outputs."""
        parts = []
        rows = next(iter(params.values())).shape[0]
        for s in range(0, rows, rows_at_once):
            chunk = {name: value[s : s + rows_at_once] for name, value in params.items()}
            own = self._outputs(chunk, self.a, self.b)
            seen = fit_on_training_set(own, self.c, self.network.loss)
            for name, (a, b, c) in self.pair_sets.items():
                pred = own if a is self.a else self._outputs(chunk, a, b)
                seen[f"pairs_{name}"] = pair_losses(self.network.loss, pred, c)
            parts.append(seen)
        return {name: torch.cat([part[name] for part in parts]) for name in parts[0]}

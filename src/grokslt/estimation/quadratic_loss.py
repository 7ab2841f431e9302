"""The training loss of the paper's quadratic network for `grokslt.estimation.llc`, with its hand-derived gradient:
faster than `functional_loss.NetworkLoss`, which it agrees with to rounding (tested)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from grokslt import cpu_kernels
from grokslt.estimation.observables import fit_on_training_set
from grokslt.estimation.preconditioner import quadratic_net_blocks
from grokslt.training.data import ModularArithmetic
from grokslt.training.loss import pair_losses
from grokslt.training.model import centred_loss_and_grad, forward_pairs


@dataclass
class QuadraticNetLoss:
    """loss_fn for `grokslt.estimation.llc`: the centred minibatch loss of the network on the training set,
    with its gradient. params {"W": [C, 2p, K], "V": [C, p, K]}, idx [C, B] -> (loss [C], grads).
    `pair_sets` ({name: (a, b, c)}) are the sets of pairs whose per-pair losses `observe` also reports.

    On a CPU with the compiled kernels, everything but the three GEMMs runs in `grokslt.cpu_kernels`
    into buffers reused from call to call (the returned gradients are overwritten by the next call);
    elsewhere it is `centred_loss_and_grad`."""

    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    pair_sets: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.a, self.b, self.c = (t.contiguous() for t in (self.a, self.b, self.c))
        self._buffers = {}

    @classmethod
    def training_set(cls, data: ModularArithmetic, device="cpu", subset: str = "train", pair_sets=()):
        """On `subset` of the data's pairs (`ModularArithmetic.subset`), with per-pair traces on `pair_sets`."""
        pairs = data.subsets_on({subset, *pair_sets}, device)
        return cls(*pairs[subset], {name: pairs[name] for name in pair_sets})

    def __call__(self, params, idx):
        W, V = params["W"], params["V"]
        if W.dim() == 3 and cpu_kernels.applicable(W, V):
            return self._fused(W, V, idx)
        loss, grad_W, grad_V = centred_loss_and_grad(W, V, self.a[idx], self.b[idx], self.c[idx])
        return loss, {"W": grad_W, "V": grad_V}

    def curvature_blocks(self, centre) -> dict:
        """The Gauss-Newton blocks at w* = centre ({"W", "V"} without a chain dimension) that the preconditioned
        sampler inverts (`grokslt.estimation.preconditioner`)."""
        return quadratic_net_blocks(centre["W"], centre["V"], self.a, self.b)

    def observe(self, params, rows_at_once: int = 8) -> dict[str, torch.Tensor]:
        """Each chain's full training-set loss L_n and accuracy (`observables.fit_on_training_set`), [R] each,
        and its per-pair losses on each of `pair_sets` ([R, m]), `rows_at_once` chains at a time to bound the
        memory of their outputs."""
        parts = []
        for s in range(0, params["W"].shape[0], rows_at_once):
            W, V = params["W"][s : s + rows_at_once], params["V"][s : s + rows_at_once]
            own = forward_pairs(W, V, self.a, self.b)
            seen = fit_on_training_set(own, self.c)
            for name, (a, b, c) in self.pair_sets.items():  # the loss's own pairs reuse its forward pass
                seen[f"pairs_{name}"] = pair_losses("centred_mse", own if a is self.a else forward_pairs(W, V, a, b), c)
            parts.append(seen)
        return {name: torch.cat([part[name] for part in parts]) for name in parts[0]}

    def _fused(self, W, V, idx):
        chains, two_p, hidden = W.shape
        batch, p = idx.shape[1], two_p // 2
        buffer = self._buffers_for(chains, batch, p, hidden)
        table = W.view(-1, hidden)
        first, second = cpu_kernels.pair_rows(idx, self.a, self.b, p, out=buffer["rows"])
        cpu_kernels.gather_square(table, first, second, out=buffer["z"])
        V = buffer["V_padded"].copy_(V)
        pred = torch.bmm(buffer["z_3d"], V.transpose(1, 2), out=buffer["pred"])
        # dL/dpred = -P_perp(Y - pred) / B
        dpred, loss = cpu_kernels.centred_residual(pred, idx, self.c, -1.0 / batch, out=buffer["dpred_loss"])
        grad_V = torch.bmm(buffer["dpred_t"], buffer["z_3d"], out=buffer["grad_V"])
        torch.bmm(dpred, V, out=buffer["dz"])  # dL/dh = 2 h dz
        cpu_kernels.scatter_product(buffer["dz_2d"], table, first, second, 2.0, out=buffer["grad_W"])
        return loss, {"W": buffer["grad_W_3d"], "V": grad_V}

    def _buffers_for(self, chains, batch, p, hidden) -> dict:
        """Output tensors (and views of them) for one shape of call, made once: every tensor operation
        saved matters in a loop whose memory passes evict torch's dispatch code from the cache."""
        key = (chains, batch, p, hidden)
        if key not in self._buffers:
            z, dz = torch.empty(chains * batch, hidden), torch.empty(chains, batch, hidden)
            dpred, grad_W = torch.empty(chains, batch, p), torch.empty(chains * 2 * p, hidden)
            rows = torch.empty(2, chains * batch, dtype=torch.int64)
            # rows 4 KB apart (K = 1024) share cache sets and slow MKL's GEMM with V by a fifth
            V_padded = torch.empty(chains, p, hidden + 16)[:, :, :hidden]
            self._buffers[key] = {
                "rows": (rows[0], rows[1]),
                "z": z,
                "z_3d": z.view(chains, batch, hidden),
                "V_padded": V_padded,
                "pred": torch.empty(chains, batch, p),
                "dpred_loss": (dpred, torch.empty(chains)),
                "dpred_t": dpred.transpose(1, 2),
                "grad_V": torch.empty(chains, p, hidden),
                "dz": dz,
                "dz_2d": dz.view(-1, hidden),
                "grad_W": grad_W,
                "grad_W_3d": grad_W.view(chains, 2 * p, hidden),
            }
        return self._buffers[key]

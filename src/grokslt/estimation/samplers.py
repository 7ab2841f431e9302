"""Samplers of the localized tempered posterior around w* (appendix B), and their settings.

The target is exp(-U(w)) with U(w) = nbeta L_n(w) + gamma/2 ||w - w*||^2. Every sampler moves a batch
of chains (each tensor [R, ...], one row per chain) by `step`, given the loss and gradient of the
current minibatch; the chain loop (`grokslt.estimation.llc.run_chains`), the LLC statistics, the command line and
the tables do not know which one runs. Adding a sampler is one class here, registered in SAMPLERS:

- `sgld`: devinterp's SGLD (1.3.2 and 2.x), w <- w - (eps/2)(nbeta g + gamma (w - w*) + lambda w)
  + sqrt(eps) N(0, I). On a CPU the update runs in the compiled kernel, noise included.
- `rmsprop_sgld`: devinterp 2.x's `SGMCMC.rmsprop_sgld` (optim/sgmcmc.py with
  optim/preconditioner.py `RMSpropPreconditioner`): V <- alpha V + (1 - alpha) g^2 with g the raw
  minibatch gradient, G = 1 / (sqrt(V) + delta), w <- w - (eps/2) G (nbeta g + gamma (w - w*) + lambda w)
  + sqrt(eps G) N(0, I); alpha = 0.99 and delta = 0.1 are devinterp's defaults (`rmsprop_sgld(alpha=0.99,
  eps=0.1)`), V starts at zero and is updated before its first use.
- `sgnht`: devinterp 1.3.2's `optim/sgnht.py` (Ding et al. 2014), one thermostat per chain over all its
  parameters: m <- m - eps (nbeta g + gamma (w - w*)); m <- m - xi m; m <- m + sqrt(2 A eps) N(0, I);
  w <- w + m; xi <- xi + mean(m^2) - eps, with m_0 = sqrt(eps) N(0, I), xi_0 = A = 0.01 (devinterp's default
  diffusion factor). devinterp's SGNHT has no localization; ours adds gamma (w - w*) (and lambda w) to the
  gradient, so gamma = 0 is devinterp's sampler.
- `mala`: Metropolis-adjusted Langevin on the full-batch potential U: the proposal
  w' = w - (eps/2) grad U(w) + sqrt(eps) N(0, I) is accepted with probability
  min(1, exp(U(w) - U(w') + log q(w | w') - log q(w' | w))), q the proposal density. Exact for the
  target whatever eps (no discretisation or minibatch bias); reports its acceptance rate over the draws.
  Its burn-in steps are unadjusted (every proposal accepted: full-batch Langevin): chains start at w*,
  the mode, which in d dimensions lies far from the typical set, and there MALA accepts a step with
  probability about exp(-(eps gamma)^2 d / 8) (Christensen, Roberts and Rosenthal 2005 on the transient
  phase), 0.015 at eps gamma = 0.025 and d = 54,272 (measured: 0.01-0.04), so an adjusted burn-in never
  leaves w*. The draws are adjusted, so the stationary distribution is the target's whatever the start.
- `pmala`: MALA in the metric of a fixed preconditioner P = (nbeta G + gamma I)^-1, G the Gauss-Newton matrix's
  blocks at w* (`grokslt.estimation.preconditioner`): exact whatever P, fast where P is close to the inverse
  precision (V alone: exactly), for the settings where nbeta h_max / gamma is too large for a single step size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from grokslt.cpu_kernels import NormalStream
from grokslt.errors import BadInput
from grokslt.estimation.preconditioner import BlockPreconditioner, per_chain_sum
from grokslt.settings import setting
from grokslt.training.data import parse_subset
from grokslt.training.loss import epoch_centring_factor

Params = dict[str, torch.Tensor]
Evaluate = Callable[[Params], "tuple[torch.Tensor, Params]"]


class Sampler:
    """One update rule for a batch of chains. `step` moves `chains.params` in place; a sampler that
    evaluated the loss at the new positions itself (MALA) returns (loss, grads) there, else None."""

    name: ClassVar[str]
    own_settings: ClassVar[dict[str, float]] = {}  # its settings beyond the common ones, with defaults
    full_batch: ClassVar[bool] = False  # True: every step sees the whole training set
    init_loss: ClassVar[str] = "batches"  # how L_init is measured unless the settings say otherwise
    statistics_names: ClassVar[tuple[str, ...]] = ()  # the keys of `statistics`

    def __init__(self, settings: SamplerSettings, nbeta: float):
        self.settings, self.nbeta = settings, nbeta
        self.eps, self.gamma = settings.step_size, settings.localization

    def start(self, chains: Chains, loss_fn=None) -> None:
        """Set up the sampler's own state (momenta, preconditioners) before the first step; `loss_fn` is the
        loss the chains sample (`grokslt.estimation.llc.run_chains`)."""

    def step(self, chains: Chains, loss: torch.Tensor, grads: Params, evaluate: Evaluate):
        raise NotImplementedError

    def statistics(self) -> dict[str, np.ndarray]:
        """Per-chain statistics of the run, such as an acceptance rate."""
        return {}

    def option(self, name: str) -> float:
        value = getattr(self.settings, name)
        return self.own_settings[name] if value is None else value


@dataclass
class Chains:
    """The chains' positions, their centres w* and their random streams: rows are split evenly into
    groups, one per point w* (each with its own generator and, on a CPU, compiled noise stream)."""

    params: Params
    centers: Params
    generators: Sequence[torch.Generator]
    streams: Sequence[NormalStream] | None

    def __post_init__(self):
        rows = next(iter(self.params.values())).shape[0]
        per_group = rows // len(self.generators)
        self.groups = [slice(g * per_group, (g + 1) * per_group) for g in range(len(self.generators))]

    @property
    def rows(self) -> int:
        return next(iter(self.params.values())).shape[0]

    def normal_(self, out: torch.Tensor) -> torch.Tensor:
        """Fill `out` [R, ...] with standard normals, each group from its own stream."""
        for index, group in enumerate(self.groups):
            if self.streams:
                out[group] = self.streams[index].normal(out[group].numel()).view_as(out[group])
            else:
                out[group].normal_(generator=self.generators[index])
        return out

    def uniform(self) -> torch.Tensor:
        """One uniform number in [0, 1) per chain, each group's from its generator."""
        device = next(iter(self.params.values())).device
        return torch.cat([torch.rand(g.stop - g.start, generator=self.generators[i], device=device)
                          for i, g in enumerate(self.groups)])  # fmt: skip


def per_chain(values: torch.Tensor) -> torch.Tensor:
    """Sum over every dimension but the first (the chain), in float64."""
    return values.double().flatten(1).sum(dim=1)


class SGLD(Sampler):
    name = "sgld"

    def start(self, chains: Chains, loss_fn=None) -> None:
        eps, gamma, decay = self.eps, self.gamma, self.settings.weight_decay
        # w - (eps/2)(nbeta grad + gamma (w - w*) + decay w) + sqrt(eps) N(0, I)
        #   = shrink w + pull + grad_scale grad + sqrt(eps) N(0, I)
        self.shrink, self.grad_scale = 1.0 - 0.5 * eps * (gamma + decay), -0.5 * eps * self.nbeta
        self.noise_std = math.sqrt(eps)
        self.pull = {k: v * (0.5 * eps * gamma) for k, v in chains.centers.items()}
        self.draws = None if chains.streams else {k: torch.empty_like(v) for k, v in chains.centers.items()}

    def step(self, chains: Chains, loss, grads, evaluate):
        for name, w in chains.params.items():
            if chains.streams:
                for group, stream in zip(chains.groups, chains.streams, strict=True):
                    stream.sgld_update_(
                        w[group],
                        grads[name][group],
                        self.pull[name][group],
                        self.shrink,
                        self.grad_scale,
                        self.noise_std,
                    )
            else:
                for group, generator in zip(chains.groups, chains.generators, strict=True):
                    self.draws[name][group].normal_(std=self.noise_std, generator=generator)
                w.mul_(self.shrink).add_(self.pull[name]).add_(grads[name], alpha=self.grad_scale).add_(
                    self.draws[name]
                )
        return None


class RMSPropSGLD(Sampler):
    name = "rmsprop_sgld"
    own_settings = {"rmsprop_alpha": 0.99, "rmsprop_eps": 0.1}

    def start(self, chains: Chains, loss_fn=None) -> None:
        self.square_avg = {k: torch.zeros_like(v) for k, v in chains.params.items()}
        self.noise = {k: torch.empty_like(v) for k, v in chains.params.items()}
        self.alpha, self.delta = self.option("rmsprop_alpha"), self.option("rmsprop_eps")

    def step(self, chains: Chains, loss, grads, evaluate):
        for name, w in chains.params.items():
            g, average = grads[name], self.square_avg[name]
            average.mul_(self.alpha).addcmul_(g, g, value=1 - self.alpha)
            preconditioner = 1.0 / (average.sqrt() + self.delta)
            drift = g * self.nbeta + self.gamma * (w - chains.centers[name]) + self.settings.weight_decay * w
            noise = chains.normal_(self.noise[name])
            w.add_(preconditioner * drift, alpha=-0.5 * self.eps).add_(
                preconditioner.sqrt() * noise, alpha=self.eps**0.5
            )
        return None


class SGNHT(Sampler):
    name = "sgnht"
    own_settings = {"diffusion_factor": 0.01}

    def start(self, chains: Chains, loss_fn=None) -> None:
        self.diffusion = self.option("diffusion_factor")
        self.momentum = {k: chains.normal_(torch.empty_like(v)).mul_(self.eps**0.5) for k, v in chains.params.items()}
        device = next(iter(chains.params.values())).device
        self.thermostat = torch.full((chains.rows,), self.diffusion, device=device)
        self.noise = {k: torch.empty_like(v) for k, v in chains.params.items()}
        self.size = sum(v[0].numel() for v in chains.params.values())

    def step(self, chains: Chains, loss, grads, evaluate):
        energy = torch.zeros(chains.rows, dtype=torch.float64, device=self.thermostat.device)
        for name, w in chains.params.items():
            m = self.momentum[name]
            shape = (-1,) + (1,) * (m.dim() - 1)
            drift = grads[name] * self.nbeta + self.gamma * (w - chains.centers[name]) + self.settings.weight_decay * w
            m.sub_(drift, alpha=self.eps)
            m.sub_(self.thermostat.view(shape) * m)
            m.add_(chains.normal_(self.noise[name]), alpha=(2 * self.diffusion * self.eps) ** 0.5)
            w.add_(m)
            energy += per_chain(m * m)
        self.thermostat += (energy / self.size - self.eps).to(self.thermostat.dtype)
        return None


class MALA(Sampler):
    name = "mala"
    full_batch = True
    init_loss = "full"
    statistics_names = ("accept_rate",)

    def start(self, chains: Chains, loss_fn=None) -> None:
        self.accepted = torch.zeros(chains.rows, dtype=torch.float64)
        self.steps = 0  # adjusted steps
        self.unadjusted_left = self.settings.num_burnin
        self.noise = {k: torch.empty_like(v) for k, v in chains.params.items()}

    def potential(self, chains: Chains, params: Params, loss: torch.Tensor) -> torch.Tensor:
        """U per chain, in float64: nbeta L + gamma/2 ||w - w*||^2 + lambda/2 ||w||^2."""
        distance = sum(per_chain((params[k] - chains.centers[k]) ** 2) for k in params)
        norm = sum(per_chain(params[k] ** 2) for k in params)
        return self.nbeta * loss.double() + 0.5 * self.gamma * distance + 0.5 * self.settings.weight_decay * norm

    def potential_grad(self, chains: Chains, params: Params, grads: Params) -> Params:
        decay = self.settings.weight_decay
        return {
            k: grads[k] * self.nbeta + self.gamma * (params[k] - chains.centers[k]) + decay * params[k] for k in params
        }

    def step(self, chains: Chains, loss, grads, evaluate):
        # the loss function may return reused buffers, which evaluating the proposal overwrites
        loss, grads = loss.clone(), {k: v.clone() for k, v in grads.items()}
        current = chains.params
        drift = self.potential_grad(chains, current, grads)
        here = self.potential(chains, current, loss)
        proposal = {
            k: w - 0.5 * self.eps * drift[k] + self.eps**0.5 * chains.normal_(self.noise[k]) for k, w in current.items()
        }
        forward = sum(per_chain((proposal[k] - current[k] + 0.5 * self.eps * drift[k]) ** 2) for k in current)
        new_loss, new_grads = evaluate(proposal)
        new_loss, new_grads = new_loss.clone(), {k: v.clone() for k, v in new_grads.items()}
        there = self.potential(chains, proposal, new_loss)
        reverse_drift = self.potential_grad(chains, proposal, new_grads)
        backward = sum(per_chain((current[k] - proposal[k] + 0.5 * self.eps * reverse_drift[k]) ** 2) for k in current)
        log_ratio = here - there + (forward - backward) / (2 * self.eps)
        accept = torch.log(chains.uniform().double()) < log_ratio.to(torch.float64)
        if self.unadjusted_left > 0:  # burn-in: every finite proposal
            self.unadjusted_left -= 1
            accept = torch.ones_like(accept)
        else:
            self.accepted += accept.cpu().double()
            self.steps += 1
        accept &= torch.isfinite(there)
        shape = lambda t: accept.view((-1,) + (1,) * (t.dim() - 1)).to(t.device)  # noqa: E731
        for k, w in current.items():
            w.copy_(torch.where(shape(w), proposal[k], w))
        kept_grads = {k: torch.where(shape(g), new_grads[k], grads[k]) for k, g in grads.items()}
        return torch.where(accept.to(loss.device), new_loss, loss), kept_grads

    def statistics(self) -> dict[str, np.ndarray]:
        return {"accept_rate": (self.accepted / max(1, self.steps)).numpy()}


class PreconditionedMALA(MALA):
    """MALA in the metric of a fixed preconditioner P = (nbeta G + gamma I)^-1, G the loss's Gauss-Newton blocks at
    w* (`grokslt.estimation.preconditioner`): w' = w - (eps/2) P grad U(w) + sqrt(eps) P^(1/2) xi, accepted with the
    ratio of the P-metric proposal densities N(w' | w - (eps/2) P grad U(w), eps P). The moves run in the
    coordinates y = Q^T (w - w*) of P's eigenvectors, where P is diagonal: two block products per step. Built once
    at w*, P never depends on the chain's position, so the chain is exact for the target whatever P (a poor P costs
    mixing, not bias). eps is in P's units: where P is a Gaussian's exact inverse precision the best is near
    2.7 d^(-1/3) (acceptance 0.57, Roberts and Rosenthal 1998). Burn-in is unadjusted as MALA's."""

    name = "pmala"

    def start(self, chains: Chains, loss_fn=None) -> None:
        super().start(chains)
        blocks_of = getattr(loss_fn, "curvature_blocks", None)
        if blocks_of is None:
            raise BadInput(
                f"sampler = pmala: the loss {type(loss_fn).__name__} has no Gauss-Newton blocks for its preconditioner "
                "(the quadratic network's loss with weights all, W or V has)"
            )
        dtype = next(iter(chains.params.values())).dtype
        ridge = self.gamma + self.settings.weight_decay
        self.points = []  # one preconditioner per point w* (group of chains)
        for group in chains.groups:
            centre = {k: v[group.start] for k, v in chains.centers.items()}
            self.points.append(BlockPreconditioner(blocks_of(centre), self.nbeta, ridge, dtype))
        self.coordinates = [self.eigen(chains, index, chains.params) for index in range(len(self.points))]
        self.eigen_drift = None  # P's coordinates of grad U at the chains' positions, kept between steps

    def eigen(self, chains: Chains, index: int, values: Params, centred: bool = True) -> dict[str, torch.Tensor]:
        """Q^T (values - w*) (or Q^T values) on the rows of point `index`."""
        group, point = chains.groups[index], self.points[index]
        shifted = {k: v[group] - chains.centers[k][group] if centred else v[group] for k, v in values.items()}
        return {k: point.to_eigen(k, v) for k, v in shifted.items()}

    def step(self, chains: Chains, loss, grads, evaluate):
        loss, grads = loss.clone(), {k: v.clone() for k, v in grads.items()}
        current = chains.params
        here = self.potential(chains, current, loss)
        if self.eigen_drift is None:
            drift = self.potential_grad(chains, current, grads)
            self.eigen_drift = [self.eigen(chains, i, drift, centred=False) for i in range(len(self.points))]
        noise = {k: self.layout_noise(chains, k) for k in current}
        proposed, proposal = [], {k: torch.empty_like(w) for k, w in current.items()}
        for i, (point, group) in enumerate(zip(self.points, chains.groups, strict=True)):
            y, g = self.coordinates[i], self.eigen_drift[i]
            moved = {}
            for k in current:
                a = point.precision[k]
                xi = point.layouts[k].split(noise[k][group])
                moved[k] = y[k] - (0.5 * self.eps) * g[k] / a + self.eps**0.5 * xi / a.sqrt()
                shape = current[k][group].shape
                proposal[k][group] = chains.centers[k][group] + point.from_eigen(k, moved[k], shape)
            proposed.append(moved)
        new_loss, new_grads = evaluate(proposal)
        new_loss, new_grads = new_loss.clone(), {k: v.clone() for k, v in new_grads.items()}
        there = self.potential(chains, proposal, new_loss)
        new_drift = self.potential_grad(chains, proposal, new_grads)
        new_eigen_drift = [self.eigen(chains, i, new_drift, centred=False) for i in range(len(self.points))]
        log_q = torch.zeros_like(here)  # log q(w | w') - log q(w' | w), per chain
        for i, (point, group) in enumerate(zip(self.points, chains.groups, strict=True)):
            rows = group.stop - group.start
            for k in current:
                y, y_new, a = self.coordinates[i][k], proposed[i][k], point.precision[k]
                forward = y_new - y + (0.5 * self.eps) * self.eigen_drift[i][k] / a
                backward = y - y_new + (0.5 * self.eps) * new_eigen_drift[i][k] / a
                log_q[group] += per_chain_sum(a * (forward.square() - backward.square()), rows) / (2 * self.eps)
        accept = self.accepted_now(chains, here - there + log_q, there)
        self.keep(chains, accept, proposal, proposed, new_eigen_drift)
        shape = lambda t: accept.view((-1,) + (1,) * (t.dim() - 1)).to(t.device)  # noqa: E731
        kept_grads = {k: torch.where(shape(g), new_grads[k], grads[k]) for k, g in grads.items()}
        return torch.where(accept.to(loss.device), new_loss, loss), kept_grads

    def layout_noise(self, chains: Chains, name: str) -> torch.Tensor:
        """Standard normals in the shape of the parameter: any orthogonal rearrangement of them is standard normal,
        so they serve as P's coordinates directly."""
        return chains.normal_(self.noise[name])

    def accepted_now(self, chains: Chains, log_ratio: torch.Tensor, there: torch.Tensor) -> torch.Tensor:
        """MALA's rule: every finite proposal during the unadjusted burn-in, then Metropolis-Hastings."""
        accept = torch.log(chains.uniform().double()) < log_ratio.to(torch.float64)
        if self.unadjusted_left > 0:
            self.unadjusted_left -= 1
            accept = torch.ones_like(accept)
        else:
            self.accepted += accept.cpu().double()
            self.steps += 1
        return accept & torch.isfinite(there)

    def keep(self, chains: Chains, accept: torch.Tensor, proposal: Params, proposed, new_eigen_drift) -> None:
        """Move the accepted chains: positions, P's coordinates and the drift's."""
        for k, w in chains.params.items():
            w.copy_(torch.where(accept.view((-1,) + (1,) * (w.dim() - 1)).to(w.device), proposal[k], w))
        for i, group in enumerate(chains.groups):
            rows = accept[group].to(next(iter(chains.params.values())).device)
            for state, new in ((self.coordinates[i], proposed[i]), (self.eigen_drift[i], new_eigen_drift[i])):
                for k, old in state.items():
                    by_chain = (old.shape[0], len(rows), -1)  # [G, R * rows, m] is chain-major along its middle
                    state[k] = torch.where(rows.view(1, -1, 1), new[k].view(by_chain), old.view(by_chain)).view(
                        old.shape
                    )


SAMPLERS: dict[str, type[Sampler]] = {cls.name: cls for cls in (SGLD, RMSPropSGLD, SGNHT, MALA, PreconditionedMALA)}
SAMPLER_OPTIONS = {name: sampler for sampler in SAMPLERS.values() for name in sampler.own_settings}
INIT_LOSS_MODES = ("batches", "full", "expected")
# the parameters a (weight-refined) estimate samples, the others held at w* (`grokslt.estimation.refined`)
WEIGHT_GROUPS = ("all", "W", "V", "W_a", "W_b", "atoms:top", "atoms:rest")


@dataclass(frozen=True)
class SamplerSettings:
    """The settings of an LLC estimate. `nbeta=None` means devinterp's default B / ln B for batch size B;
    `init_loss=None` the sampler's own way of measuring L_init = L(w*): "batches" (devinterp 1.3.2: the
    mean loss of `num_chains` distinct minibatches), "full" (L_n on the whole training set) or "expected" (L_n times
    `epoch_centring_factor`: exactly what the minibatch losses average to at w*, which "batches" estimates with the
    noise of a few minibatches; that noise, nbeta times its standard error, is shared by every chain). The last
    three settings belong to one sampler each (None: its default)."""

    step_size: float = setting(5e-4, "SGLD step size epsilon", exclusive_minimum=0)
    localization: float = setting(5.0, "localization gamma", minimum=0)
    num_chains: int = setting(3, "chains per estimate", minimum=1)
    num_burnin: int = setting(100, "steps discarded before the draws", minimum=0)
    num_draws: int = setting(500, "draws per chain", minimum=1)
    nbeta: float | None = setting(None, "inverse temperature n beta (none: B / ln B)", exclusive_minimum=0)
    weight_decay: float = setting(0.0, "weight decay of the sampler (a Gaussian prior at 0)", minimum=0)
    init_loss: str | None = setting(None, "L_init: batches | full | expected (none: the sampler's)",
                                    choices=INIT_LOSS_MODES)  # fmt: skip
    weights: str = setting(
        "all",
        "parameters sampled, the others held at w*: all | W | V (closed form beside) | W_a | W_b (rows of the first,"
        " second operand) | atoms:top | atoms:rest (neurons of the K_eff largest atoms, the others)",
        choices=WEIGHT_GROUPS,
    )
    data: str = setting("train", "pairs whose loss the posterior and estimate use: train | val | all | residue:c "
                        "(training pairs with answer c)")  # fmt: skip
    observe_every: int | None = setting(
        None, "draws between full-batch observations of L_n and ||w - w*||^2 (none: cost <= 25%)", minimum=1
    )
    sampler: str = setting(
        "sgld",
        "sgld | rmsprop_sgld | sgnht | mala | pmala (MALA preconditioned by the Gauss-Newton matrix at w*)",
        choices=tuple(SAMPLERS),
    )
    rmsprop_alpha: float | None = setting(
        None, "rmsprop_sgld: moving-average decay (0.99)", exclusive_minimum=0, exclusive_maximum=1
    )
    rmsprop_eps: float | None = setting(None, "rmsprop_sgld: stability constant delta (0.1)", exclusive_minimum=0)
    diffusion_factor: float | None = setting(None, "sgnht: diffusion factor A (0.01)", exclusive_minimum=0)

    def check(self) -> None:
        parse_subset(self.data)
        for name, owner in SAMPLER_OPTIONS.items():
            if getattr(self, name) is not None and owner.name != self.sampler:
                raise BadInput(
                    f"{name} = {getattr(self, name)!r}: a setting of sampler {owner.name}, not of {self.sampler}"
                )

    def resolved_nbeta(self, batch_size: int) -> float:
        if self.nbeta is not None:
            return float(self.nbeta)
        if batch_size < 2:
            raise BadInput(f"batch_size = {batch_size}: the default nbeta B / ln B needs B >= 2")
        return batch_size / math.log(batch_size)

    @property
    def init_loss_mode(self) -> str:
        return self.init_loss or SAMPLERS[self.sampler].init_loss

    def init_loss_factor(self, n: int, batch_size: int, loss: str = "centred_mse") -> float:
        """What L_n(w*) is multiplied by for L_init in the modes computed from it: 1 for `full`, and for
        `expected` the mean batch-centring factor of the batches the sampler sees (1 for full batches, and for a
        loss without centring, such as the cross-entropy, whose minibatch mean is unbiased)."""
        if self.init_loss_mode != "expected" or SAMPLERS[self.sampler].full_batch or loss != "centred_mse":
            return 1.0
        return epoch_centring_factor(n, batch_size)

    def make_sampler(self, batch_size: int) -> Sampler:
        return SAMPLERS[self.sampler](self, self.resolved_nbeta(batch_size))

    def replace(self, **changes) -> SamplerSettings:
        return dataclasses.replace(self, **changes)

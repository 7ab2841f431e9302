"""The local learning coefficient (appendix B), batched over chains.

The target is exp(-n beta L_n(w) - gamma/2 ||w - w*||^2), sampled by one of `grokslt.estimation.samplers` (by
default devinterp's SGLD). A draw records the loss L_B of the step's minibatch at w_t before the
update (L_n for full-batch samplers); after `num_burnin` steps, `num_draws` draws give the chain's
estimate nbeta (mean L_B - L_init), and the LLC is the mean over chains. `estimate_llc` works for any
model: it only needs a batched loss (and optionally gradient).

Every `observe_every` draws the chains' networks are also evaluated on the full training set
(`grokslt.estimation.observables`): the full-batch estimate `llc_full` = nbeta (mean L_n(w_t) - L_n(w*)),
the honest convergence diagnostics (`grokslt.estimation.diagnostics`) and the locality columns
(`grokslt.estimation.locality`) come from those observations.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from grokslt import cpu_kernels
from grokslt.cpu_kernels import NormalStream
from grokslt.errors import BadInput, ComputationFailed
from grokslt.estimation.diagnostics import COLUMNS as DIAGNOSTIC_COLUMNS
from grokslt.estimation.diagnostics import (
    MINIBATCH_COLUMNS,
    UNKNOWN,
    Diagnostics,
    diagnose_full_batch,
    diagnose_minibatch,
    half_chain_slopes,
)
from grokslt.estimation.locality import COLUMNS as LOCALITY_COLUMNS
from grokslt.estimation.locality import locality
from grokslt.estimation.observables import centre_observation, checked_thinning, observe
from grokslt.estimation.samplers import SAMPLERS, Chains, SamplerSettings
from grokslt.runtime import release_freed_memory
from grokslt.settings import check_fields

Params = dict[str, torch.Tensor]
# loss_fn(params with a leading chain dimension, sample indices [C, B]) -> loss [C],
# or (loss [C], gradients with the shapes of params)
LossFn = Callable[[Params, torch.Tensor], "torch.Tensor | tuple[torch.Tensor, Params]"]

EPOCH_DRAW = 1 << 20  # random numbers drawn at once for minibatch permutations


PRESETS: dict[str, SamplerSettings] = {
    # What produced the authors' logs (their training.py): devinterp's default nbeta = B / ln B.
    "paper_code": SamplerSettings(step_size=5e-4, localization=5.0, num_chains=3, num_burnin=100, num_draws=500),
    # Appendix H.1 of the paper.
    "paper_text": SamplerSettings(
        step_size=1e-4, localization=5.0, num_chains=3, num_burnin=100, num_draws=600, nbeta=30.0
    ),
    # What produced the authors' learning-rate / weight-decay sweep (results/sweep_batch_lr_wd): their
    # training.py at commit 761c299 (SergioEstanRuiz/geom_phase_transitions), the devinterp call in
    # train() (lines 119-132, kwargs line 124: lr=4e-4, localization=100.0, nbeta=default_nbeta(train_loader)
    # = B / ln B) and ExperimentParams (lines 36-38: num_chains 3, num_draws 500, num_burnin 100).
    "paper_code_lr_wd": SamplerSettings(
        step_size=4e-4, localization=100.0, num_chains=3, num_burnin=100, num_draws=500
    ),
    # What devinterp's grokking example estimates at each checkpoint of its MLP (examples/grokking.ipynb in
    # timaeus-research/devinterp at commit 2558dd00f2628da60d5bb053efcb66f26bfab145: cell 17 lines 1-4 and cell 21
    # line 8; reference/devinterp_grokking/SETTINGS.md part 4): SGLD, step 3e-3, gamma 5, nbeta 2 (fixed, not
    # B / ln B), one chain of 500 draws, no burn-in, L_init from one minibatch.
    "devinterp_grokking": SamplerSettings(
        step_size=3e-3, localization=5.0, nbeta=2.0, num_chains=1, num_burnin=0, num_draws=500
    ),
    # The cheapest settings found whose chains stay near w* and converge on full-batch observables at the
    # baseline's decisive checkpoints (measured/locality: loss excess 0.1-1.8% of L_n(0), honest R-hat <= 1.01
    # at 4 of 5). The localization dominates (gamma 1e4), so the values are 50-80 times below the paper's;
    # SGLD's step bias here is +2.6% (exact V-only check) and +2.8% against MALA on all weights. L_init is the
    # minibatch losses' exact expectation: devinterp's few-batch estimate of it put an error of nbeta x 7e-4 = 7.2,
    # shared by every chain, on an LLC of 4-8 at memorisation (measured/calibration_local).
    "local": SamplerSettings(
        step_size=1e-5, localization=1e4, nbeta=1e4, num_chains=4, num_burnin=500, num_draws=2000, init_loss="expected"
    ),  # fmt: skip
    # Settings whose estimand reaches the learning coefficient (CLAIMS.md's reach rule): at nbeta 1e6, gamma 1 the
    # V-only estimand is 95.5% of V's p rank / 2 at the baseline's stop, and lambda_Q is r / 2 (measured/coefficient).
    # Plain Langevin faces a condition number nbeta h_max / gamma ~ 3e4 there; MALA preconditioned by the
    # Gauss-Newton blocks at w* (`pmala`, its step in P's units) removes it on V alone (P exact), not on all weights
    # (measured/coefficient/reach.csv): there the diagnostics say so.
    "reach": SamplerSettings(
        step_size=0.05, localization=1.0, nbeta=1e6, num_chains=4, num_burnin=200, num_draws=1000, sampler="pmala"
    ),
}


def sampler_settings(preset: str | SamplerSettings, **overrides) -> SamplerSettings:
    """A preset's settings with `overrides` (None: keep the preset's), checked."""
    if isinstance(preset, SamplerSettings):
        settings = preset
    elif preset in PRESETS:
        settings = PRESETS[preset]
    else:
        raise BadInput(f"preset = {preset!r}: expected one of {sorted(PRESETS)}")
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(SamplerSettings)})
    if unknown:
        raise BadInput(f"sampler settings {unknown}: unknown; expected some of {sorted(PRESET_FIELDS)}")
    settings = settings.replace(**{k: v for k, v in overrides.items() if v is not None})
    check_fields(settings)
    return settings


PRESET_FIELDS = [f.name for f in dataclasses.fields(SamplerSettings)]


@dataclass
class LLCResult:
    llc_mean: float
    llc_std: float
    llc_per_chain: np.ndarray  # [C], NaN for diverged chains
    init_loss: float
    loss_trace: np.ndarray  # [C, draws]
    nbeta: float
    diverged: np.ndarray  # [C] bool
    loss_slope: np.ndarray  # [C], least-squares slope of the loss per draw over the second half
    noise: str = "torch"  # where the Gaussian noise came from: "torch", "xoshiro128++" or "devinterp"
    init_loss_stderr: float = 0.0
    diagnostics: Diagnostics | None = None  # honest: on the full-batch observations
    minibatch_diagnostics: Diagnostics | None = None  # on the minibatch loss trace, for comparison
    sampler_statistics: dict = dataclasses.field(default_factory=dict)  # per-chain arrays, e.g. accept_rate
    observations: dict = dataclasses.field(default_factory=dict)  # {name: [C, T]} full-batch, thinned
    centre: dict = dataclasses.field(default_factory=dict)  # L_n(w*), accuracy, ||w*||, L_n(0)
    observed_every: int = 0  # draws between observations (0: none)
    exact: dict = dataclasses.field(default_factory=dict)  # the closed-form estimand, where one exists

    @property
    def llc_full(self) -> float:
        """nbeta (mean L_n(w_t) - L_n(w*)) over the observations of the chains that did not diverge."""
        if "loss" not in self.observations:
            return math.nan
        return float(self.nbeta * (self.observations["loss"][~self.diverged].mean() - self.centre["loss"]))

    @property
    def llc_drift(self) -> float:
        """How far the estimate would move over the second half of the draws at the fitted slope,
        in LLC units (nbeta x slope x draws / 2); near 0 for stationary chains."""
        draws = self.loss_trace.shape[1]
        return float(self.nbeta * np.nanmean(self.loss_slope[~self.diverged]) * draws / 2)

    def described(self) -> str:
        """The estimate in words: its value, its MCSE (not the spread between chains) and whether it is local and
        converged, e.g. '35.00 (MCSE 0.26): local, not converged (R-hat 1.027, ESS 97/120)'."""
        return described(self.summary())

    def summary(self) -> dict:
        chains = {f"llc_chain_{i}": float(v) for i, v in enumerate(self.llc_per_chain)}
        return {
            "llc_mean": self.llc_mean,
            "llc_std": self.llc_std,
            **chains,
            "init_loss": self.init_loss,
            "nbeta": self.nbeta,
            "n_diverged": int(self.diverged.sum()),
            "loss_slope": float(np.nanmean(self.loss_slope)),
            "llc_drift": self.llc_drift,
            "noise": self.noise,
            "init_loss_stderr": self.init_loss_stderr,
            "llc_full": self.llc_full,
            "observed_every": self.observed_every,
            **self.diagnostics.columns(),
            **self.minibatch_diagnostics.columns("_minibatch"),
            **locality({k: v[~self.diverged] for k, v in self.observations.items()}, self.centre),
            "exact_llc": self.exact.get("estimand", math.nan),
            "exact_learning_coefficient": self.exact.get("learning_coefficient", math.nan),
            **{name: float(np.mean(values)) for name, values in self.sampler_statistics.items()},
        }


def described(row: dict) -> str:
    """An LLC table row in words (`LLCResult.described`)."""
    if row.get("descends"):
        where = "not local: the chains descend below L_n(w*)"
    elif not row.get("local"):
        where = f"not local (loss excess {row['loss_excess_fraction']:.3g} of L_n(0))"
    else:
        where = "local"
    stats = f"R-hat {row['r_hat']:.3f}, ESS {row['ess_bulk']:.0f}/{row['ess_tail']:.0f}"
    converged = "converged" if row["converged"] else "not converged"
    return f"{row['llc_mean']:.2f} (MCSE {row['mcse']:.2g}): {where}, {converged} ({stats})"


def result_columns(settings: SamplerSettings) -> list[str]:
    """The columns of `LLCResult.summary` for estimates at these settings."""
    chains = [f"llc_chain_{i}" for i in range(settings.num_chains)]
    own = list(SAMPLERS[settings.sampler].statistics_names)
    stats = ["init_loss", "nbeta", "n_diverged", "loss_slope", "llc_drift", "noise", "init_loss_stderr"]
    honest = ["llc_full", "observed_every", *DIAGNOSTIC_COLUMNS, *MINIBATCH_COLUMNS, *LOCALITY_COLUMNS]
    honest += ["exact_llc", "exact_learning_coefficient"]
    return ["llc_mean", "llc_std", *chains, *stats, *honest, *own]


def chain_statistics(
    trace: np.ndarray,
    init_loss: float,
    nbeta: float,
    max_loss: float = 1e8,
    noise: str = "torch",
    init_loss_stderr: float = 0.0,
    observations: dict | None = None,
    centre: dict | None = None,
    observed_every: int = 0,
) -> LLCResult:
    """Per-chain estimates and diagnostics from a loss trace [C, draws] and the full-batch observations
    {name: [C, T]} with the centre's (none: only minibatch diagnostics); diverged chains excluded.
    `init_loss_stderr`: the standard error of L_init (0 where it is L_n itself)."""
    trace = np.asarray(trace, dtype=np.float64)
    diverged = ~np.isfinite(trace).all(axis=1) | (np.abs(trace) > max_loss).any(axis=1)
    if diverged.all():
        raise ComputationFailed(
            f"all {len(trace)} SGLD chains diverged (non-finite loss or |loss| > {max_loss:g}): "
            "lower the step size or raise the localization"
        )
    if diverged.any():
        warnings.warn(
            f"{int(diverged.sum())} of {len(trace)} SGLD chains diverged and are excluded from the estimate",
            RuntimeWarning,
            stacklevel=2,
        )
    per_chain = nbeta * (trace.mean(axis=1) - init_loss)
    per_chain[diverged] = np.nan
    kept = per_chain[~diverged]
    result = LLCResult(
        llc_mean=float(kept.mean()),
        llc_std=float(kept.std(ddof=1)) if len(kept) > 1 else float("nan"),
        llc_per_chain=per_chain,
        init_loss=float(init_loss),
        loss_trace=trace.astype(np.float32),
        nbeta=float(nbeta),
        diverged=diverged,
        loss_slope=half_chain_slopes(trace),
        noise=noise,
        init_loss_stderr=float(init_loss_stderr),
        observations=observations or {},
        centre=centre or {},
        observed_every=observed_every,
    )
    excess = nbeta * (trace[~diverged] - init_loss)
    result.minibatch_diagnostics = diagnose_minibatch(
        excess, init_loss_stderr, nbeta, result.llc_mean, result.llc_drift, int(diverged.sum())
    )
    result.diagnostics = UNKNOWN
    if observations:
        full_excess = nbeta * (observations["loss"][~diverged] - result.centre["loss"])
        distance_sq = observations["distance_sq"][~diverged]
        honest = diagnose_full_batch(full_excess, distance_sq, int(diverged.sum()))
        # llc_mean subtracts the estimated L_init: its error, shared by every chain, adds in quadrature
        result.diagnostics = dataclasses.replace(honest, mcse=math.hypot(honest.mcse, nbeta * init_loss_stderr))
    return result


def _loss_and_grad(loss_fn: LossFn, params: Params, idx: torch.Tensor) -> tuple[torch.Tensor, Params]:
    out = loss_fn(params, idx)
    if isinstance(out, tuple):
        return out
    with torch.enable_grad():
        leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        loss = loss_fn(leaves, idx)
        grads = torch.autograd.grad(loss.sum(), list(leaves.values()))
    return loss.detach(), dict(zip(leaves, grads, strict=True))


def epoch_batches(
    n: int, batch_size: int, chains: int, steps: int, generator: torch.Generator
) -> Iterator[torch.Tensor]:
    """The sample indices [chains, B_t] of `steps` minibatches, as devinterp's `cycle(DataLoader(shuffle=True))`
    yields them for each chain.

    Every chain walks through its own random permutation of the n samples in batches of B, the last
    batch of an epoch holding the n mod B left over, then starts a new permutation; all chains are at
    the same position of their epochs. Epochs are drawn EPOCH_DRAW numbers at a time and cut into
    contiguous batches at once, so that the sampling loop runs almost no tensor operation for them
    (the numbers are those of drawing epoch after epoch: the generator fills them in order).
    """
    batch_size = min(batch_size, n)
    starts = range(0, n, batch_size)
    epochs_per_draw = max(1, EPOCH_DRAW // (chains * n))
    remaining = steps
    while remaining > 0:
        epochs = min(epochs_per_draw, math.ceil(remaining / len(starts)))
        noise = torch.rand(epochs, chains, n, generator=generator, device=generator.device)
        permutations = noise.argsort(dim=-1)
        batches = [permutations[e, :, s : s + batch_size].contiguous() for e in range(epochs) for s in starts]
        yield from batches[:remaining]
        remaining -= len(batches[:remaining])


def initial_losses(
    loss_fn: LossFn, centers: Params, n: int, settings: SamplerSettings, batch_size: int, generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(L_init, its standard error) per row of `centers`: the mean loss of the first `num_chains`
    minibatches of one shuffled epoch, the last possibly short (devinterp 1.3.2's
    `get_init_loss_multi_batch`), with the spread of those losses over sqrt(count); or L_n, exact; or the
    minibatch losses' exact expectation (`expected`)."""
    rows = next(iter(centers.values())).shape[0]
    if settings.init_loss_mode in ("full", "expected"):
        idx = torch.arange(n, device=generator.device).expand(rows, n)
        kind = getattr(loss_fn, "loss_kind", "centred_mse")
        loss = _value(loss_fn(centers, idx)).clone() * settings.init_loss_factor(n, batch_size, kind)
        return loss, torch.zeros_like(loss)
    permutation = torch.randperm(n, generator=generator, device=generator.device)
    count = min(settings.num_chains, math.ceil(n / batch_size))
    batches = [permutation[i * batch_size : (i + 1) * batch_size] for i in range(count)]
    # each loss copied at once: the fused loss function returns one reused buffer
    losses = torch.stack([_value(loss_fn(centers, batch.expand(rows, -1))).clone() for batch in batches])
    if batch_size >= n:  # one batch holds every sample: L_init is L_n, exact
        stderr = torch.zeros(rows, dtype=torch.float64)
    elif count > 1:
        stderr = losses.double().std(dim=0) / math.sqrt(count)
    else:
        stderr = torch.full((rows,), float("nan"))
    return losses.mean(dim=0), stderr


def _value(out) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def run_chains(
    loss_fn: LossFn,
    centers: Params,
    n: int,
    settings: SamplerSettings,
    batch_size: int,
    generators: Sequence[torch.Generator],
    noise: Sequence[NormalStream] | None = None,
) -> tuple[torch.Tensor, dict]:
    """Chains around `centers` (each tensor [R, ...], one row per chain) by the settings' sampler; returns
    the loss trace [R, num_draws], the sampler's per-chain statistics, the full-batch observations
    ({name: [R, T]}, `grokslt.estimation.observables`) and their thinning. Rows are split evenly between
    `generators`, each drawing its rows' batches (and noise, unless `noise` gives each group a compiled
    stream), so a group's chains do not depend on which other groups share the computation."""
    chains = Chains({k: v.clone() for k, v in centers.items()}, centers, generators, noise)
    sampler = settings.make_sampler(batch_size)
    sampler.start(chains, loss_fn)
    device = next(iter(centers.values())).device
    trace = torch.empty(chains.rows, settings.num_draws, device=device)
    steps = settings.num_burnin + settings.num_draws
    if sampler.full_batch:
        everything = torch.arange(n, device=device).expand(chains.rows, n)
        batches = (everything for _ in range(steps))
    else:
        per_group = [
            epoch_batches(n, batch_size, g.stop - g.start, steps, gen)
            for g, gen in zip(chains.groups, generators, strict=True)
        ]
        batches = (torch.cat(parts) if len(parts) > 1 else parts[0] for parts in zip(*per_group, strict=True))
    every = checked_thinning(settings.observe_every, n, sampler_batch(sampler, n, batch_size), settings.num_draws)
    seen: dict[str, list[torch.Tensor]] = {}
    loss = grads = None
    for t, idx in enumerate(batches):
        if loss is None:
            loss, grads = _loss_and_grad(loss_fn, chains.params, idx)
        draw = t - settings.num_burnin
        if draw >= 0:
            trace[:, draw] = loss
            if draw % every == every - 1:
                for name, values in observe(loss_fn, chains.params, centers, n).items():
                    seen.setdefault(name, []).append(values.double().cpu())
                release_freed_memory()
        moved = sampler.step(chains, loss, grads, lambda params, idx=idx: _loss_and_grad(loss_fn, params, idx))
        loss, grads = moved if moved is not None else (None, None)
    observations = {name: torch.stack(values, dim=1).numpy() for name, values in seen.items()}
    return trace, sampler.statistics(), observations, every


def sampler_batch(sampler, n: int, batch_size: int) -> int:
    return n if sampler.full_batch else min(batch_size, n)


def estimate_llc(
    loss_fn: LossFn,
    params: Mapping[str, torch.Tensor],
    n: int,
    sampler: str | SamplerSettings,
    batch_size: int,
    seed: int,
    init_loss: float | None = None,
    device: str | torch.device = "cpu",
) -> LLCResult:
    """The LLC at w* = `params` (tensors without a chain dimension) for a model of n samples."""
    [result] = estimate_llc_stacked(loss_fn, [params], n, sampler, batch_size, [seed], [init_loss], device)
    return result


def estimate_llc_stacked(
    loss_fn: LossFn,
    params_list: Sequence[Mapping[str, torch.Tensor]],
    n: int,
    sampler: str | SamplerSettings,
    batch_size: int,
    seeds: Sequence[int],
    init_losses: Sequence[float | None] | None = None,
    device: str | torch.device = "cpu",
) -> list[LLCResult]:
    """Estimates at several points w* at once: their chains are stacked into one batched computation
    (the main win on a GPU), while each point's batches and noise come from its own seed, so a result
    does not depend on which other points share the computation."""
    settings = sampler_settings(sampler)
    chains = settings.num_chains
    generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
    centers = {
        name: torch.cat([p[name].detach().to(device).expand((chains,) + p[name].shape) for p in params_list])
        for name in params_list[0]
    }
    init_losses = list(init_losses or [None] * len(params_list))
    init_stderrs = [0.0] * len(params_list)  # a given L_init is taken as exact
    for i, generator in enumerate(generators):
        if init_losses[i] is None:
            rows = {k: v[i * chains : (i + 1) * chains] for k, v in centers.items()}
            loss, stderr = initial_losses(loss_fn, rows, n, settings, batch_size, generator)
            init_losses[i], init_stderrs[i] = loss[0].item(), stderr[0].item()
    noise = [NormalStream(seed) for seed in seeds] if cpu_kernels.applicable(*centers.values()) else None
    trace, statistics, observations, every = run_chains(loss_fn, centers, n, settings, batch_size, generators, noise)
    trace = trace.cpu().numpy()
    nbeta = settings.resolved_nbeta(batch_size)
    source = NormalStream.NAME if noise else "torch"
    results = []
    for i in range(len(params_list)):
        rows = slice(i * chains, (i + 1) * chains)
        centre = centre_observation(loss_fn, {k: v[rows] for k, v in centers.items()}, n)
        seen = {name: values[rows] for name, values in observations.items()}
        result = chain_statistics(trace[rows], init_losses[i], nbeta, noise=source, init_loss_stderr=init_stderrs[i],
                                  observations=seen, centre=centre, observed_every=every)  # fmt: skip
        result.sampler_statistics = {name: values[rows] for name, values in statistics.items()}
        results.append(result)
    return results


@dataclass
class BiasReducedLLC:
    intercept: float
    intercept_stderr: float
    slope: float
    nbetas: list[float]
    estimates: list[float]


def bias_reduced_llc(nbetas: Sequence[float], estimates: Sequence[float]) -> BiasReducedLLC:
    """Regress the estimates on 1/log(nbeta) (eq. 7: nbeta(E L - L*) ~ lambda - (m-1)/log(nbeta));
    the intercept is the bias-reduced LLC, with its ordinary-least-squares standard error."""
    nbetas, estimates = np.asarray(nbetas, float), np.asarray(estimates, float)
    if len(nbetas) < 3 or len(nbetas) != len(estimates):
        raise ValueError(f"nbetas: expected at least 3 values matching the estimates, got {len(nbetas)}")
    if (nbetas <= 1).any():
        raise ValueError(f"nbetas = {nbetas.tolist()}: expected values > 1 (log(nbeta) > 0)")
    x = 1.0 / np.log(nbetas)
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, estimates, rcond=None)
    dof = len(x) - 2
    sigma2 = float(((estimates - design @ coef) ** 2).sum() / dof) if dof > 0 else float("nan")
    covariance = sigma2 * np.linalg.inv(design.T @ design)
    return BiasReducedLLC(
        intercept=float(coef[0]),
        intercept_stderr=float(np.sqrt(covariance[0, 0])),
        slope=float(coef[1]),
        nbetas=nbetas.tolist(),
        estimates=estimates.tolist(),
    )

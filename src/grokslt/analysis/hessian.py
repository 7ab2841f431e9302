"""The trace of the Hessian of L_n (appendix I): Hutchinson's estimator for any model family and, for the
quadratic network with the centred loss, the exact value.

Hutchinson: Tr(H) = E[v^T H v] for Rademacher probes v; each v^T H v needs one Hessian-vector product,
computed reverse-over-reverse: the gradient once, kept differentiable, then one backward pass per chunk of
probes, batched over the chunk (`is_grads_batched`). (torch.func's `grad` would do as well, but its first call
imports torch._dynamo, 1.8 CPU-s, in every job that estimates a trace.)

Exact: for the quadratic network on one-hot inputs the loss is a polynomial in (W, V), and
differentiating 1/(2n) ||R||_F^2 with R = P_perp (Y - F V^T), F = h^2, h = W^T x twice gives

    n Tr(H) = p ||P_perp F||_F^2 + 4 sum_j ||v_j||^2 (2 ||h_j||^2 - ||X^T h_j||^2 / n),

since the second-derivative term <R, d^2 R> sums to 2 1^T R V = 0 (every x has two ones and R is
centred). X^T h_j sums h_j over the samples that contain each input symbol: a scatter-add.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

from grokslt.errors import BadInput
from grokslt.settings import as_columns, check_fields, setting
from grokslt.training.families import Network
from grokslt.training.loss import sample_loss
from grokslt.training.model import hidden_pre_activation


@dataclass(frozen=True)
class HessianSettings:
    num_probes: int = setting(2, "Rademacher probes of Hutchinson's estimator", minimum=1)


PRESETS = {"paper_code": HessianSettings(num_probes=2), "paper_text": HessianSettings(num_probes=100)}
log = logging.getLogger(__name__)


@dataclass
class TraceEstimate:
    mean: float
    stderr: float
    samples: torch.Tensor  # [num_probes] values of v^T H v


def hutchinson_trace(
    loss_fn: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    params: dict[str, torch.Tensor],
    num_probes: int,
    generator: torch.Generator,
    chunk_size: int = 16,
) -> TraceEstimate:
    """Hutchinson's estimate of Tr(d^2 loss_fn / d params^2) with Rademacher probes, in chunks of
    `chunk_size` probes so that memory stays bounded."""
    if num_probes < 1 or chunk_size < 1:
        raise ValueError(f"num_probes = {num_probes}, chunk_size = {chunk_size}: expected positive integers")
    leaves = [value.detach().requires_grad_(True) for value in params.values()]
    gradient = torch.autograd.grad(loss_fn(dict(zip(params, leaves, strict=True))), leaves, create_graph=True)
    samples = []
    for start in range(0, num_probes, chunk_size):
        size = min(chunk_size, num_probes - start)
        probes = [rademacher((size,) + leaf.shape, generator, leaf) for leaf in leaves]
        products = torch.autograd.grad(gradient, leaves, probes, retain_graph=True, is_grads_batched=True)
        samples.append(sum((v * hv).flatten(1).sum(1) for v, hv in zip(probes, products, strict=True)))
    values = torch.cat(samples).detach()
    stderr = values.std(unbiased=True).item() / num_probes**0.5 if num_probes > 1 else float("nan")
    return TraceEstimate(mean=values.mean().item(), stderr=stderr, samples=values)


def rademacher(shape, generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    bits = torch.randint(0, 2, shape, generator=generator, device=like.device)
    return bits.to(like.dtype).mul_(2).sub_(1)


def network_loss(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, network: Network):
    """L_n(params) of `network` on the samples (a, b) with targets c."""

    def loss_fn(params):
        return sample_loss(network.loss, network.forward(params, a, b), c)

    return loss_fn


def exact_trace(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """Tr(H) of the centred loss of the network on the samples (a, b), in closed form (module doc).
    Independent of the targets. Computed in float64."""
    W, V = W.double(), V.double()
    n, p = len(a), V.shape[0]
    h = hidden_pre_activation(W, a, b)  # [n, K]
    features = h.square()
    centred_features = features - features.mean(dim=0)
    per_symbol = torch.zeros(W.shape, dtype=W.dtype).index_add_(0, a, h).index_add_(0, b + p, h)  # X^T h
    neuron_terms = 2 * h.square().sum(dim=0) - per_symbol.square().sum(dim=0) / n
    total = p * centred_features.square().sum() + 4 * (V.square().sum(dim=0) * neuron_terms).sum()
    return (total / n).item()


def hessian_settings(preset: str, **overrides) -> HessianSettings:
    if preset not in PRESETS:
        raise BadInput(f"preset = {preset!r}: expected one of {sorted(PRESETS)}")
    settings = dataclasses.replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None})
    check_fields(settings)
    return settings


def hessian_rows(run, steps, settings: HessianSettings, preset: str, seed: int = 0) -> list[dict]:
    """Hutchinson and exact traces of L_n at the given checkpoints of a loaded run
    (`grokslt.training.runs.load_run`), one row each (`HESSIAN_COLUMNS`)."""
    from grokslt.training.runs import step_seed

    a, b, c = run.data.subset("train")
    loss_fn = network_loss(a, b, c, run.network)
    exact = run.network.paper_model  # the closed form is the quadratic network's under the centred loss
    rows = []
    for step in steps:
        params = run.load(step)
        estimate = hutchinson_trace(
            loss_fn, params, settings.num_probes, torch.Generator().manual_seed(step_seed(seed, step))
        )
        log.info("Tr(H) at step %d: %.4g +- %.2g", step, estimate.mean, estimate.stderr)
        rows.append(
            {
                "step": step,
                "trace_hutchinson": estimate.mean,
                "trace_stderr": estimate.stderr,
                "trace_exact": exact_trace(params["W"], params["V"], a, b) if exact else float("nan"),
                **as_columns(settings),
                "hessian_preset": preset,
            }
        )
    return rows


def hessian_columns(settings: HessianSettings) -> list[str]:
    return ["step", "trace_hutchinson", "trace_stderr", "trace_exact", *as_columns(settings), "hessian_preset"]


def write_hessian_table(
    run_dir, out, preset: str = "paper_code", overrides: dict | None = None, steps=None, chunk=None, seed: int = 0
) -> list[dict]:
    """Hutchinson and exact traces of L_n at the selected checkpoints of a run, one CSV row each."""
    from grokslt.artefacts import seal
    from grokslt.io import write_csv
    from grokslt.training.runs import load_run, select_run_steps

    settings = hessian_settings(preset, **(overrides or {}))
    run = load_run(run_dir)
    rows = hessian_rows(run, select_run_steps(run, steps, chunk), settings, preset, seed)
    seal(out, write_csv(out, rows, hessian_columns(settings)), "grokslt hessian", run.identity)
    return rows

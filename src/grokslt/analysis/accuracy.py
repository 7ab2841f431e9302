"""How accurate the LLC estimators are on small quadratic networks: each against an exact reference.

At a point w* (a trained minimum or the random initial point of a run) and a given (nbeta, gamma), the
estimand is E[nbeta (L_n(w) - L_n(w*))] under the localized tempered posterior
exp(-nbeta L_n(w) - gamma/2 ||w - w*||^2). The reference is long full-batch MALA chains in float64
(`grokslt.estimation.exact`: exact for that posterior whatever the step, tuned to an acceptance rate in [0.5, 0.9]),
checked by R-hat and ESS. Each method (a named set of sampler settings, run as the pipeline runs it) is
repeated over seeds: its bias against the reference, its spread and its cost. Over the nbeta grid, the
bias-reduced estimate (the intercept of the estimates against 1 / log nbeta) is compared with the
learning coefficient that theory gives at the point (`truth`, see docs/claims.md "Ground truth"):

- at an interpolating minimum (L_n(w*) ~ 0) the loss is 1/(2n) ||G(w)||^2 with G(w) = P_perp (F_w(X) - Y)
  vanishing at w*; where G has constant rank r near w* (minimally singular), lambda = r / 2, r the rank
  of the Jacobian of the centred outputs on the training inputs;
- at a non-interpolating critical point the quadratic part has the Hessian's rank r_H; lambda = r_H / 2
  where its null directions are flat (symmetry orbits), at most r_H / 2 otherwise: reported, not asserted;
- at a random point (not critical) no learning coefficient exists: only the reference is the truth.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from grokslt.analysis.theory import numerical_rank
from grokslt.estimation.exact import ReferenceSettings, reference_estimate
from grokslt.estimation.llc import bias_reduced_llc, estimate_llc, sampler_settings
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.estimation.samplers import SamplerSettings
from grokslt.training.loss import centred_residual
from grokslt.training.model import forward_pairs

INTERPOLATION_LOSS = 1e-5  # L_n(w*) below this is an interpolating minimum: nbeta L_n(w*) < 0.01 at nbeta 1000


def method_estimates(data, params, settings: SamplerSettings, batch_size: int, repeats: int) -> dict:
    """A method's estimates over `repeats` seeds: mean, spread, mean MCSE, share converged, seconds each."""
    loss_fn = QuadraticNetLoss.training_set(data)
    values, mcses, converged, seconds = [], [], [], []
    for seed in range(repeats):
        began = time.perf_counter()
        summary = estimate_llc(loss_fn, params, data.n_train, settings, batch_size, 1000 + seed).summary()
        seconds.append(time.perf_counter() - began)
        values.append(summary["llc_mean"])
        mcses.append(summary["mcse"])
        converged.append(summary["converged"])
    return {
        "estimate": float(np.mean(values)),
        "spread": float(np.std(values, ddof=1)) if repeats > 1 else float("nan"),
        "mcse": float(np.mean(mcses)),
        "converged_share": float(np.mean(converged)),
        "seconds": float(np.mean(seconds)),
    }


def ground_truth(data, params) -> dict:
    """The point's loss, the ranks that decide its learning coefficient, and which one applies."""
    W, V = params["W"].double(), params["V"].double()
    a, b, c = data.subset("train")
    target = torch.nn.functional.one_hot(c, data.p).double()

    def centred_outputs(W_, V_):
        return centred_residual(forward_pairs(W_, V_, a, b), target).reshape(-1)

    def loss(W_, V_):
        return 0.5 * centred_outputs(W_, V_).pow(2).sum() / len(a)

    jacobian = torch.func.jacrev(centred_outputs, argnums=(0, 1))(W, V)
    data_rank = numerical_rank(torch.cat([j.reshape(j.shape[0], -1) for j in jacobian], dim=1), rtol=1e-8)
    hessian = torch.func.hessian(lambda flat: loss(flat[: W.numel()].view_as(W), flat[W.numel() :].view_as(V)))(
        torch.cat([W.reshape(-1), V.reshape(-1)])
    )
    hessian_rank = numerical_rank(hessian, rtol=1e-8)
    gradient = torch.func.grad(lambda flat: loss(flat[: W.numel()].view_as(W), flat[W.numel() :].view_as(V)))(
        torch.cat([W.reshape(-1), V.reshape(-1)])
    )
    value = loss(W, V).item()
    if value < INTERPOLATION_LOSS:
        truth, rule = data_rank / 2, "interpolating minimum: rank of the centred data Jacobian / 2"
    elif gradient.norm().item() < 1e-4:
        truth, rule = hessian_rank / 2, "critical point: Hessian rank / 2 (an upper bound unless flat)"
    else:
        truth, rule = float("nan"), "not a critical point: no learning coefficient"
    return {"loss_at_point": value, "gradient_norm": gradient.norm().item(), "data_rank": data_rank,
            "hessian_rank": hessian_rank, "dimension": W.numel() + V.numel(), "truth": truth,
            "truth_rule": rule}  # fmt: skip


def accuracy_rows(point: str, data, params, nbetas, gamma, methods: dict[str, dict], batch_size: int,
                  repeats: int, reference: ReferenceSettings, seed: int = 0) -> list[dict]:  # fmt: skip
    """Every method at every nbeta against the reference, then the bias-reduced estimates against theory."""
    truth = ground_truth(data, params)
    rows, by_method = [], {}
    for nbeta in nbetas:
        exact = reference_estimate(data, params, nbeta, gamma, seed, reference)
        for name, spec in methods.items():
            settings = method_settings(spec, nbeta, gamma)
            measured = method_estimates(data, params, settings, batch_size, repeats)
            bias = measured["estimate"] - exact["reference"]
            rows.append({"point": point, "nbeta": nbeta, "localization": gamma, "method": name, **measured,
                         "bias": bias, "relative_bias": bias / exact["reference"], **exact, **truth})  # fmt: skip
            by_method.setdefault(name, []).append(measured["estimate"])
        by_method.setdefault("reference", []).append(exact["reference"])
    if len(nbetas) >= 3:
        for name, estimates in by_method.items():
            fit = bias_reduced_llc(nbetas, estimates)
            bias = fit.intercept - truth["truth"]
            relative = bias / truth["truth"] if truth["truth"] else float("nan")
            method = f"{name} (bias-reduced)"
            rows.append({"point": point, "nbeta": float("inf"), "localization": gamma, "method": method,
                         "estimate": fit.intercept, "spread": fit.intercept_stderr, "bias": bias,
                         "relative_bias": relative, **truth})  # fmt: skip
    return rows


def method_settings(spec: dict, nbeta: float, gamma: float) -> SamplerSettings:
    """A method's settings: its preset and overrides, at the point's nbeta and localization."""
    spec = dict(spec)
    preset = spec.pop("preset", "paper_code")
    return sampler_settings(preset, **spec, nbeta=float(nbeta), localization=float(gamma))


COLUMNS = [
    "point", "method", "nbeta", "localization", "estimate", "spread", "mcse", "converged_share", "seconds", "bias",
    "relative_bias", "reference", "reference_mcse", "reference_r_hat", "reference_ess", "reference_converged",
    "reference_step", "reference_accept", "reference_seconds", "truth", "truth_rule", "loss_at_point",
    "gradient_norm", "data_rank", "hessian_rank", "dimension",
]  # fmt: skip


def write_accuracy(run_dirs, out, nbetas, gamma, methods: dict, repeats: int, reference: ReferenceSettings) -> list:
    """accuracy.csv over the final checkpoint and the initial point of each run."""
    from pathlib import Path

    from grokslt.errors import BadInput
    from grokslt.io import write_csv
    from grokslt.training.runs import load_run

    if not methods:
        raise BadInput("--methods: give at least one method")
    for spec in methods.values():
        method_settings(spec, nbetas[0], gamma)  # every method's settings checked before any work
    runs = [load_run(run_dir) for run_dir in run_dirs]
    for run_dir, run in zip(run_dirs, runs, strict=True):
        if not run.network.paper_model:  # its exact references are the quadratic network's centred loss
            raise BadInput(f"--runs {run_dir}: model {run.config.model} with loss {run.config.loss}; the estimator "
                           "accuracy study needs the quadratic network with the centred MSE")  # fmt: skip
    rows = []
    for run_dir, run in zip(run_dirs, runs, strict=True):
        final = list(run.checkpoints)[-1]
        points = {f"{Path(run_dir).name}@{final}": run.load(final),
                  f"{Path(run_dir).name}@init": run.load_init()}  # fmt: skip
        for point, params in points.items():
            rows += accuracy_rows(point, run.data, params, nbetas, gamma, methods, run.batch_size, repeats,
                                  reference)  # fmt: skip
    write_csv(out, rows, COLUMNS)
    return rows

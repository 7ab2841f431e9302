"""The learning coefficient where it is known without a sampler, beside what each estimand measures.

At a checkpoint that interpolates the training set (L_n(w*) ~ 0) the zero-loss set is, near w*, a manifold of
codimension r = rank of the centred data Jacobian P J (n p x d) wherever that rank is constant nearby, so
lambda = r / 2: the loss is a non-degenerate quadratic in the r normal directions. The rank is that of the
Gauss-Newton matrix G = J^T P J / n, counted from its Lanczos quadrature (`grokslt.estimation.laplace`) as the
eigenvalues above RANK_THRESHOLD times the largest; the count must not move (beyond its probes' noise) when the
threshold moves GAP_DECADES decades either way, i.e. the threshold must sit in a spectral gap, or the rank is not
numerically defined and no r / 2 is given. r <= min(d, p (n - 1)): the centring leaves n - 1 directions per output.

Beside it, per checkpoint: lambda_Q at the local preset (nbeta = gamma = 1e4) and at the authors' sampler, tr(H) / 2,
the V block's coefficient and the share of it the local preset reaches, K_eff and the paper's closed form
K_eff (3p - 1) / 2 (Corollary 5.4, Remark 5.5), and the trivial null d / 2 = 3pK / 2.
"""

from __future__ import annotations

import math

import torch

from grokslt.analysis.hessian import exact_trace
from grokslt.analysis.theory import effective_atoms, generic_llc
from grokslt.estimation.laplace import SpectralQuadrature, gauss_newton_quadrature, significant
from grokslt.estimation.linear_v import v_only_estimand
from grokslt.estimation.llc import sampler_settings
from grokslt.training.loss import zero_output_loss

RANK_THRESHOLD = 1e-5  # eigenvalues of G above this fraction of the largest count towards the rank
GAP_DECADES = 1
INTERPOLATION_MAX = 1e-3  # L_n(w*) below this fraction of the zero function's loss: the checkpoint interpolates
LOCAL = (1e4, 1e4)  # the local preset's (nbeta, gamma)


def data_rank(quadrature: SpectralQuadrature) -> dict:
    """The rank of G by the threshold rule of the module doc: `data_rank` with its standard error, the threshold,
    and `rank_gap`: whether the count stays within 3 standard errors over GAP_DECADES decades each side."""
    largest = float(quadrature.gauss_nodes.max())
    threshold = RANK_THRESHOLD * largest
    count = quadrature.count_above(threshold)
    wider = [quadrature.count_above(threshold * 10.0**shift)["value"] for shift in (-GAP_DECADES, GAP_DECADES)]
    noise = 3 * max(count["stderr"], 1.0)
    return {
        "gn_largest": largest,
        "rank_threshold": threshold,
        "data_rank": count["value"],
        "data_rank_stderr": count["stderr"],
        "rank_gap": all(abs(value - count["value"]) <= noise for value in wider),
    }


def coefficient_row(run, step: int, probes: int, lanczos_steps: int, seed: int, mass: float = 0.99) -> dict:
    """The sampler-free truth and the estimands at one checkpoint of a quadratic-network run (module doc), each
    float to 10 significant digits (`laplace.significant`: the bytes do not depend on BLAS's last bits)."""
    params = run.load(step)
    W, V = params["W"].double(), params["V"].double()
    a, b, c = run.data.subset("train")
    p, hidden, n = run.config.p, run.config.hidden, len(a)
    quadrature = gauss_newton_quadrature(W, V, a, b, probes, lanczos_steps, seed)
    rank = data_rank(quadrature)
    loss = v_only_estimand(W, V, run.data, *LOCAL)
    zero_loss = zero_output_loss("centred_mse", c, p)
    interpolating = loss["init_loss"] <= INTERPOLATION_MAX * zero_loss
    applies = interpolating and rank["rank_gap"]
    authors = sampler_settings("paper_code")
    authors_nbeta = authors.resolved_nbeta(run.batch_size)
    local, at_authors = (quadrature.laplace_estimand(*LOCAL), quadrature.laplace_estimand(authors_nbeta,
                         authors.localization))  # fmt: skip
    atoms = effective_atoms(W, V, mass)
    row = {
        "step": step,
        "train_loss": loss["init_loss"],
        "loss_fraction": loss["init_loss"] / zero_loss,
        "interpolating": interpolating,
        **rank,
        "rank_bound": min(W.numel() + V.numel(), p * (n - 1)),
        "half_rank": rank["data_rank"] / 2 if applies else math.nan,
        "half_rank_stderr": rank["data_rank_stderr"] / 2 if applies else math.nan,
        "lambda_q_local": local["value"],
        "lambda_q_local_stderr": local["stderr"],
        "lambda_q_authors": at_authors["value"],
        "lambda_q_authors_stderr": at_authors["stderr"],
        "half_trace": exact_trace(W, V, a, b) / 2,
        "v_coefficient": loss["learning_coefficient"],
        "v_reach_local": loss["estimand"] / loss["learning_coefficient"],
        "K_eff": atoms,
        "keff_llc": generic_llc(2 * p, p, max(atoms, 1)).value,
        "half_d": 3 * p * hidden / 2,
        "probes": probes,
        "lanczos_steps": lanczos_steps,
    }
    return {name: significant(value) if isinstance(value, float) else value for name, value in row.items()}


def write_coefficient_table(run_dir, out, steps=None, chunk=None, every=None, probes: int = 4,
                            lanczos_steps: int = 100, seed: int = 0) -> list[dict]:  # fmt: skip
    """One `coefficient_row` per selected checkpoint of a run of the paper's model, sealed as the run's (read back by
    `artefacts.read_table(path, COEFFICIENT_TABLE)`)."""
    from grokslt.artefacts import seal
    from grokslt.errors import BadInput
    from grokslt.io import write_csv
    from grokslt.training.runs import load_run, select_run_steps, step_seed

    if probes < 2 or lanczos_steps < 1:
        raise BadInput(f"probes = {probes}, lanczos_steps = {lanczos_steps}: expected probes >= 2 (a standard error "
                       "needs two) and lanczos_steps >= 1")  # fmt: skip
    run = load_run(run_dir)
    if not run.network.paper_model:
        raise BadInput(f"{run_dir}: a {run.config.model} network with the {run.config.loss} loss; the data-rank "
                       "truth and lambda_Q here are the quadratic network's under the centred loss")  # fmt: skip
    with torch.no_grad():
        rows = [coefficient_row(run, step, probes, lanczos_steps, step_seed(seed, step))
                for step in select_run_steps(run, steps, chunk, every)]  # fmt: skip
    seal(out, write_csv(out, rows, list(rows[0]) if rows else ["step"]), "grokslt coefficient", run.identity)
    return rows

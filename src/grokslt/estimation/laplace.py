"""The quadratic (Laplace) estimand lambda_Q and the data rank, from the Gauss-Newton spectrum at w*.

Under the localized tempered posterior exp(-nbeta L_n(w) - gamma/2 ||w - w*||^2) with L_n replaced by its
quadratic model at a minimum, each eigendirection of curvature h contributes nbeta h / (nbeta h + gamma) / 2 to
nbeta E[L_n - L_n(w*)], so the estimand is

    lambda_Q(nbeta, gamma) = 1/2 tr f(G),   f(h) = nbeta h / (nbeta h + gamma),

G the Gauss-Newton matrix (1/n) J^T P J of the centred loss (J the Jacobian of the n x p outputs, P the
centring over the samples; G is the Hessian where the network interpolates). Where nbeta h << gamma for every h,
lambda_Q = nbeta tr(G) / (2 gamma); as gamma -> 0 it counts the directions the data resolve, rank(G) / 2.

The trace of f(G) is estimated matrix-free by stochastic Lanczos quadrature: for each Rademacher probe z, k
Lanczos steps on G from z give a tridiagonal T_k whose eigenvalues theta_i and squared first eigenvector
components w_i make z^T f(G) z ~ ||z||^2 sum_i w_i f(theta_i). Since 1 - f(h) = gamma / (nbeta h + gamma) is
completely monotone, Gauss quadrature over-estimates tr f(G) and Gauss-Radau with a node fixed at 0 (the bottom
of the spectrum: G is positive semi-definite and singular) under-estimates it (Golub and Meurant, "Matrices,
Moments and Quadrature"): both rules are kept, so every lambda_Q comes with a bracket of its quadrature error
beside its standard error over probes. One Lanczos run per checkpoint gives lambda_Q at every (nbeta, gamma).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from grokslt.estimation.linear_v import v_only_estimand
from grokslt.settings import as_columns, setting
from grokslt.training.model import hidden_pre_activation

Directions = tuple[torch.Tensor, torch.Tensor]  # (dW [m, 2p, K], dV [m, p, K])


def gauss_newton_product(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
    """v -> G v for the quadratic network at (W, V) on the samples (a, b), batched over m directions.

    With h = W^T x and z = h^2: J v = z dV^T + (2 h dh) V^T, dh = dW[a] + dW[p + b]; its centred rows u over
    n go back as J^T u: dV <- u^T z, dW <- the scatter of 2 h (u V) onto rows a and p + b. G v = J^T P J v / n.
    """
    p = V.shape[0]
    h = hidden_pre_activation(W, a, b)  # [n, K]
    z = h.square()
    n = len(a)
    rows_b = b + p

    def product(directions: Directions) -> Directions:
        dW, dV = directions
        dh = dW.index_select(-2, a) + dW.index_select(-2, rows_b)  # [m, n, K]
        outputs = z @ dV.transpose(-1, -2) + (2 * h * dh) @ V.T  # [m, n, p]
        u = (outputs - outputs.mean(dim=-2, keepdim=True)) / n
        grad_V = u.transpose(-1, -2) @ z
        grad_h = 2 * h * (u @ V)  # [m, n, K]
        grad_W = torch.zeros_like(dW).index_add_(-2, a, grad_h).index_add_(-2, rows_b, grad_h)
        return grad_W, grad_V

    return product


def flat_operator(product, shapes: tuple[torch.Size, torch.Size]) -> Callable[[torch.Tensor], torch.Tensor]:
    """The product on (dW, dV) as one on flat vectors [m, d], d = |W| + |V|."""
    size_W = math.prod(shapes[0])

    def matvec(x: torch.Tensor) -> torch.Tensor:
        m = x.shape[0]
        dW, dV = x[:, :size_W].reshape(m, *shapes[0]), x[:, size_W:].reshape(m, *shapes[1])
        gW, gV = product((dW, dV))
        return torch.cat([gW.reshape(m, -1), gV.reshape(m, -1)], dim=1)

    return matvec


def lanczos(
    matvec, probes: torch.Tensor, steps: int, generator: torch.Generator, until=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """`steps` Lanczos steps from each row of `probes` [m, d] at once, with full reorthogonalisation; fewer where
    `until(alpha, beta)` holds of the coefficients so far (`bracket_closed`).

    Returns (alpha [m, steps], beta [m, steps]): T's diagonal and its off-diagonal, beta[:, j] coupling step j to
    j + 1 (the last one is the coupling to the step not taken, which Gauss-Radau needs). Where a Krylov space is
    exhausted (beta ~ 0) the run goes on from a fresh random vector orthogonal to it with beta = 0: T is then
    block diagonal and the later block carries no weight of the probe.
    """
    m, d = probes.shape
    basis = torch.zeros(m, steps, d, dtype=probes.dtype)
    alpha = torch.zeros(m, steps, dtype=probes.dtype)
    beta = torch.zeros(m, steps, dtype=probes.dtype)
    q = probes / probes.norm(dim=1, keepdim=True)
    scale = 0.0
    for j in range(steps):
        basis[:, j] = q
        w = matvec(q)
        alpha[:, j] = (w * q).sum(dim=1)
        w = orthogonalised(w, basis[:, : j + 1])
        norm = w.norm(dim=1)
        scale = max(scale, float(alpha[:, j].abs().max()), float(norm.max()))
        beta[:, j] = norm
        exhausted = norm <= 1e-10 * scale
        if exhausted.any():
            beta[exhausted, j] = 0.0
            fresh = torch.randn(int(exhausted.sum()), d, generator=generator, dtype=probes.dtype)
            w[exhausted] = orthogonalised(fresh, basis[exhausted, : j + 1])
            norm = w.norm(dim=1)
        if until is not None and until(alpha[:, : j + 1], beta[:, : j + 1]):
            return alpha[:, : j + 1], beta[:, : j + 1]
        q = w / norm.unsqueeze(1)
    return alpha, beta


def orthogonalised(vectors: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """vectors [m, d] less their projections on the orthonormal rows of basis [m, j, d]; twice is enough
    (Giraud, Langou and Rozloznik 2005)."""
    for _ in range(2):
        vectors = vectors - torch.einsum("mj,mjd->md", torch.einsum("mjd,md->mj", basis, vectors), basis)
    return vectors


def tridiagonal(alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Each probe's T_k [m, k, k] from its Lanczos coefficients (beta's last entry, the coupling to the step not
    taken, left out)."""
    return torch.diag_embed(alpha) + torch.diag_embed(beta[:, :-1], 1) + torch.diag_embed(beta[:, :-1], -1)


def gauss_rule(alpha: torch.Tensor, beta: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights [m, k] of the Gauss rule of each probe's T_k."""
    T = tridiagonal(alpha, beta)
    nodes, vectors = torch.linalg.eigh(T)
    return nodes.numpy(), vectors[:, 0, :].square().numpy()


def radau_rule(alpha: torch.Tensor, beta: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights [m, k + 1] of the Gauss-Radau rule with a node fixed at 0: T_k extended by one row whose
    diagonal entry makes 0 an eigenvalue (alpha_{k+1} = delta_k where T_k delta = beta_k^2 e_k)."""
    m, k = alpha.shape
    T = tridiagonal(alpha, beta)
    rhs = torch.zeros(m, k, dtype=alpha.dtype)
    rhs[:, -1] = beta[:, -1].square()
    delta = torch.linalg.lstsq(T, rhs.unsqueeze(-1)).solution.squeeze(-1)
    extended = torch.zeros(m, k + 1, k + 1, dtype=alpha.dtype)
    extended[:, :k, :k] = T
    extended[:, k, k] = delta[:, -1]
    extended[:, k - 1, k] = extended[:, k, k - 1] = beta[:, -1]
    nodes, vectors = torch.linalg.eigh(extended)
    return nodes.numpy(), vectors[:, 0, :].square().numpy()


@dataclass(frozen=True)
class SpectralQuadrature:
    """Each probe's Gauss and Gauss-Radau rules for the spectrum of a d x d positive semi-definite matrix; the
    probes are Rademacher (||z||^2 = d). Every statistic is a mean over probes with its standard error."""

    dimension: int
    gauss_nodes: np.ndarray  # [m, k]
    gauss_weights: np.ndarray
    radau_nodes: np.ndarray  # [m, k + 1]
    radau_weights: np.ndarray

    @property
    def probes(self) -> int:
        return len(self.gauss_nodes)

    @property
    def lanczos_steps(self) -> int:
        """The Lanczos steps of the longest run (the rules of runs stopped earlier are padded to its width)."""
        return self.gauss_nodes.shape[1]

    def _per_probe(self, f, rule: str) -> np.ndarray:
        nodes, weights = (
            (self.gauss_nodes, self.gauss_weights) if rule == "gauss" else (self.radau_nodes, self.radau_weights)
        )
        return self.dimension * (weights * f(np.clip(nodes, 0.0, None))).sum(axis=1)

    def trace(self, f) -> dict[str, float]:
        """tr f(G) for a completely-monotone-complement f (as lambda_Q's): `value` the mid-point of the Gauss
        (`upper`) and Gauss-Radau (`lower`) estimates, `stderr` over probes, `upper` and `lower` their means."""
        upper, lower = self._per_probe(f, "gauss"), self._per_probe(f, "radau")
        mid = (upper + lower) / 2
        stderr = float(mid.std(ddof=1) / math.sqrt(len(mid))) if len(mid) > 1 else float("nan")
        means = {"value": mid.mean(), "upper": upper.mean(), "lower": lower.mean()}
        return {name: float(value) for name, value in means.items()} | {"stderr": stderr}

    def laplace_estimand(self, nbeta: float, gamma: float) -> dict[str, float]:
        """lambda_Q(nbeta, gamma) = 1/2 tr[nbeta G (nbeta G + gamma)^-1] (module doc)."""
        if nbeta <= 0 or gamma <= 0:
            raise ValueError(f"nbeta = {nbeta}, gamma = {gamma}: expected both positive")
        return {k: v / 2 for k, v in self.trace(lambda h: nbeta * h / (nbeta * h + gamma)).items()}

    def matrix_trace(self) -> dict[str, float]:
        """tr(G): Lanczos is exact for it (a degree-1 polynomial), so both rules agree."""
        return self.trace(lambda h: h)

    def count_above(self, threshold: float) -> dict[str, float]:
        """The number of eigenvalues above `threshold` (Gauss rule only: a step is not monotone-complement)."""
        values = self._per_probe(lambda h: (h > threshold).astype(float), "gauss")
        stderr = float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
        return {"value": float(values.mean()), "stderr": stderr}

    def as_arrays(self) -> dict[str, np.ndarray]:
        return {
            "dimension": np.array(self.dimension),
            "gauss_nodes": self.gauss_nodes,
            "gauss_weights": self.gauss_weights,
            "radau_nodes": self.radau_nodes,
            "radau_weights": self.radau_weights,
        }

    @classmethod
    def from_arrays(cls, arrays) -> SpectralQuadrature:
        return cls(int(arrays["dimension"]), *(np.asarray(arrays[k]) for k in list(cls.__dataclass_fields__)[1:]))


def bracket_closed(f, rtol: float):
    """A Lanczos stopping rule for tr f(G): the probes' mean Gauss and Gauss-Radau estimates agree to `rtol` of
    their mid-point. Where f is nearly a low-degree polynomial on G's spectrum (nbeta h_max / gamma small, the
    authors' and the local presets) a few steps close it, where f is a step (gamma / nbeta far below h_max) it
    stays open to the last step."""

    def until(alpha: torch.Tensor, beta: torch.Tensor) -> bool:
        bracket = SpectralQuadrature(1, *gauss_rule(alpha, beta), *radau_rule(alpha, beta)).trace(f)
        return bracket["upper"] - bracket["lower"] <= rtol * abs(bracket["value"])

    return until


def stochastic_lanczos_quadrature(
    matvec,
    dimension: int,
    probes: int,
    steps: int,
    generator: torch.Generator,
    dtype=torch.float64,
    chunk: int = 8,
    until=None,
) -> SpectralQuadrature:
    """Gauss and Gauss-Radau rules of `probes` Rademacher probes, `steps` Lanczos steps each (at most d; fewer
    where `until` holds, `bracket_closed`)."""
    if probes < 1 or steps < 1:
        raise ValueError(f"probes = {probes}, steps = {steps}: expected positive integers")
    steps = min(steps, dimension)
    rules = []
    for start in range(0, probes, chunk):
        size = min(chunk, probes - start)
        z = torch.randint(0, 2, (size, dimension), generator=generator).to(dtype).mul_(2).sub_(1)
        alpha, beta = lanczos(matvec, z, steps, generator, until)
        rules.append((*gauss_rule(alpha, beta), *radau_rule(alpha, beta)))
    return SpectralQuadrature(dimension, *(zero_padded(parts) for parts in zip(*rules, strict=True)))


def zero_padded(blocks) -> np.ndarray:
    """The rules of the probes' chunks as one array, those that stopped early padded with zero nodes and weights."""
    width = max(block.shape[1] for block in blocks)
    return np.concatenate([np.pad(block, ((0, 0), (0, width - block.shape[1]))) for block in blocks])


def v_block(product, shapes: tuple[torch.Size, torch.Size]) -> Callable[[torch.Tensor], torch.Tensor]:
    """The product restricted to V (W held at w*) on flat vectors [m, |V|]: G's V block."""

    def matvec(x: torch.Tensor) -> torch.Tensor:
        m = x.shape[0]
        _, gV = product((torch.zeros(m, *shapes[0], dtype=x.dtype), x.reshape(m, *shapes[1])))
        return gV.reshape(m, -1)

    return matvec


def gauss_newton_quadrature(
    W: torch.Tensor,
    V: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    probes: int,
    steps: int,
    seed: int,
    v_only: bool = False,
    until=None,
) -> SpectralQuadrature:
    """The Gauss-Newton spectrum's quadrature at (W, V) on the samples (a, b), in float64; of its V block alone
    with `v_only` (the V-only estimand's spectrum, `linear_v.v_only_estimand`); `until`: a stopping rule of its
    Lanczos runs (`bracket_closed`)."""
    W, V = W.detach().double(), V.detach().double()
    product, shapes = gauss_newton_product(W, V, a, b), (W.shape, V.shape)
    matvec = v_block(product, shapes) if v_only else flat_operator(product, shapes)
    dimension = V.numel() if v_only else W.numel() + V.numel()
    generator = torch.Generator().manual_seed(seed)
    return stochastic_lanczos_quadrature(matvec, dimension, probes, steps, generator, until=until)


# -- beside every LLC estimate -------------------------------------------------------------------------------

ESTIMATES = [
    "lambda_q",
    "lambda_q_stderr",
    "lambda_q_lower",
    "lambda_q_upper",
    "v_estimand",
    "v_coefficient",
    "v_reach",
    "llc_minus_lambda_q",
    "llc_minus_lambda_q_stderr",
]
COLUMNS = [*ESTIMATES, "lambda_q_lanczos_steps", "laplace_probes", "laplace_lanczos_steps", "laplace_bracket_rtol"]


@dataclass(frozen=True)
class LaplaceSettings:
    laplace_probes: int = setting(4, "Rademacher probes of the Lanczos quadrature of lambda_Q beside each LLC "
                                  "(0: none)", minimum=0)  # fmt: skip
    laplace_lanczos_steps: int = setting(30, "the most Lanczos steps per probe of lambda_Q (its Gauss/Gauss-Radau "
                                         "bracket narrows with them)", minimum=1)  # fmt: skip
    laplace_bracket_rtol: float = setting(1e-4, "Lanczos stops once lambda_Q's Gauss/Gauss-Radau bracket is "
                                          "this narrow relative to it (0: every step)", minimum=0)  # fmt: skip


def laplace_columns(params: dict, data, nbeta: float, gamma: float, settings: LaplaceSettings, seed: int,
                    llc: float, llc_mcse: float) -> dict:  # fmt: skip
    """lambda_Q at the estimate's own (nbeta, gamma) with its standard error and quadrature bracket; the V-only
    estimand (W held at w*, closed form), V's learning coefficient p rank / 2 and the fraction of it reached
    (CLAIMS.md's reach rule); and the estimate's excess over lambda_Q, what the singularities add beyond the
    Laplace approximation (its error: the LLC's MCSE and lambda_Q's standard error in quadrature), each to 10
    significant digits (`significant`)."""
    recorded = as_columns(settings)
    if settings.laplace_probes == 0 or gamma <= 0:
        return dict.fromkeys([*ESTIMATES, "lambda_q_lanczos_steps"], math.nan) | recorded
    a, b, _ = data.subset("train")
    W, V = params["W"], params["V"]
    quadrature = gauss_newton_quadrature(W, V, a, b, settings.laplace_probes, settings.laplace_lanczos_steps, seed,
                                         until=laplace_stop(nbeta, gamma, settings))  # fmt: skip
    laplace = quadrature.laplace_estimand(nbeta, gamma)
    v_only = v_only_estimand(W, V, data, nbeta, gamma)
    coefficient = v_only["learning_coefficient"]
    values = {
        "lambda_q": laplace["value"],
        "lambda_q_stderr": laplace["stderr"],
        "lambda_q_lower": laplace["lower"],
        "lambda_q_upper": laplace["upper"],
        "v_estimand": v_only["estimand"],
        "v_coefficient": coefficient,
        "v_reach": v_only["estimand"] / coefficient if coefficient > 0 else math.nan,
        "llc_minus_lambda_q": llc - laplace["value"],
        "llc_minus_lambda_q_stderr": math.hypot(llc_mcse, laplace["stderr"]),
    }
    steps = {"lambda_q_lanczos_steps": quadrature.lanczos_steps}
    return {name: significant(value) for name, value in values.items()} | steps | recorded


def laplace_stop(nbeta: float, gamma: float, settings: LaplaceSettings):
    """The Lanczos stopping rule of lambda_Q at (nbeta, gamma): its bracket within `laplace_bracket_rtol`."""
    if settings.laplace_bracket_rtol == 0:
        return None
    return bracket_closed(lambda h: nbeta * h / (nbeta * h + gamma), settings.laplace_bracket_rtol)


def significant(value: float, digits: int = 10) -> float:
    """`value` to `digits` significant digits: far below lambda_Q's own error, and enough to make the table's bytes
    independent of the last bits of BLAS results, which depend on how the arrays happen to be aligned in memory."""
    return float(f"{value:.{digits - 1}e}") if math.isfinite(value) else value

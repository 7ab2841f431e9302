"""The paper's closed-form learning coefficients (sections 4-5, appendix G) and their numerical checks.

Each formula is a small function named after its result. The checks compute ranks of Jacobians:
of the parameter map Phi_p(theta) = sum_j v_j (x) w_j w_j^T (Theorem 4.1: lambda is half the dimension
of its image), of theta -> f_theta(X) on the data (what the data can see), and of the centred lazy
features sigma(XW) (Theorem 5.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from grokslt.errors import BadInput
from grokslt.training.data import PAPER_TASK
from grokslt.training.model import atom_norms, forward_pairs, hidden_pre_activation, top_atoms

SUBABUNDANT, SUPERABUNDANT = "subabundant", "superabundant"
PAPER_SETTING = "modular addition"  # closed_forms_label's value where the paper's closed forms apply


def _positive(**sizes) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} = {value!r}: expected a positive integer")


@dataclass(frozen=True)
class GenericLLC:
    value: float
    regime: str
    expected_rank: int  # r_exp = min(K (d + p - 1), p d (d + 1) / 2)
    ambient_dim: int  # p d (d + 1) / 2


def generic_llc(d: int, p: int, K: int) -> GenericLLC:
    """Corollary 4.2: lambda = K (d + p - 1) / 2 if K (d + p - 1) < p d (d + 1) / 2 (subabundant),
    else p d (d + 1) / 4 (superabundant), for a non-defective architecture (d, p, K)."""
    _positive(d=d, p=p, K=K)
    per_atom = K * (d + p - 1)
    ambient = p * d * (d + 1) // 2
    if per_atom < ambient:
        return GenericLLC(per_atom / 2, SUBABUNDANT, per_atom, ambient)
    return GenericLLC(ambient / 2, SUPERABUNDANT, ambient, ambient)


def ntk_llc(rank: int) -> float:
    """Theorem 5.1: the LLC of the NTK-linearised model is half the rank of its feature Gram matrix."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0:
        raise ValueError(f"rank = {rank!r}: expected a non-negative integer")
    return rank / 2


def lazy_llc(p: int, K: int, l: int) -> float:
    """Theorem 5.2: lambda = p min(l, K) / 2 at the ridge memorisation solution, l the dimension of
    the span of the random feature columns."""
    _positive(p=p, K=K, l=l)
    return p * min(l, K) / 2


def lazy_bounds(p: int, K: int) -> tuple[float, float]:
    """Corollary 5.3: p (2p - 1) / 2 <= lambda <= p K / 2 for quadratic activation, 2p - 1 < K << p^2."""
    _positive(p=p, K=K)
    if not 2 * p - 1 < K:
        raise ValueError(f"K = {K}: Corollary 5.3 needs K > 2p - 1 = {2 * p - 1}")
    return p * (2 * p - 1) / 2, p * K / 2


def stage2_llc(p: int, K: int, K_eff: int | None = None) -> float:
    """Corollary 5.4 (and Remark 5.5 with K_eff atoms): lambda = K (3p - 1) / 2 for modular addition
    (d = 2p) in the subabundant, non-defective regime."""
    atoms = K if K_eff is None else K_eff
    _positive(p=p, K=K, K_eff=atoms)
    if atoms > K:
        raise ValueError(f"K_eff = {atoms}: expected at most K = {K}")
    generic = generic_llc(2 * p, p, atoms)
    if generic.regime != SUBABUNDANT:
        raise ValueError(f"K = {atoms}, p = {p}: superabundant, where Corollary 5.4 does not apply")
    return generic.value


def single_output_llc(d: int, K: int) -> float:
    """Single-output quadratic network with biases: Theorem G.1 ((d + 1)(d + 2) / 4 for K >= d) and
    Theorem G.2 ((K (2d - K + 1) / 2 + K + 1) / 2 for K < d)."""
    _positive(d=d, K=K)
    if d <= K:
        return (d + 1) * (d + 2) / 4
    return (K * (2 * d - K + 1) / 2 + K + 1) / 2


# -- numerical checks ----------------------------------------------------------------------------------


def numerical_rank(matrix: torch.Tensor, rtol: float | None = None) -> int:
    """Rank by SVD: singular values above rtol x the largest (default: max(shape) x float64 eps)."""
    matrix = matrix.double()
    singular = torch.linalg.svdvals(matrix)
    if singular.numel() == 0 or singular[0] == 0:
        return 0
    tolerance = (max(matrix.shape) * torch.finfo(torch.float64).eps if rtol is None else rtol) * singular[0]
    return int((singular > tolerance).sum())


def parameter_map(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """Phi_p(theta) in coordinates: the upper triangles of Q_1..Q_p, Q_k = sum_j V[k, j] w_j w_j^T."""
    Q = torch.einsum("kj,aj,bj->kab", V, W, W)
    rows, cols = torch.triu_indices(W.shape[0], W.shape[0])
    return Q[:, rows, cols].reshape(-1)


def parameter_map_rank(W: torch.Tensor, V: torch.Tensor) -> int:
    """Rank of the Jacobian of Phi_p at (W, V) (Theorem 4.1: lambda = rank / 2 at a generic point)."""
    jac = torch.func.jacrev(parameter_map, argnums=(0, 1))(W.double(), V.double())
    return numerical_rank(torch.cat([j.reshape(j.shape[0], -1) for j in jac], dim=1))


def data_jacobian_rank(W: torch.Tensor, V: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> int:
    """Rank of the Jacobian of theta -> f_theta(X) on the inputs (a, b): the directions the data sees."""

    def outputs(W_, V_):
        return forward_pairs(W_, V_, a, b).reshape(-1)

    jac = torch.func.jacrev(outputs, argnums=(0, 1))(W.double(), V.double())
    return numerical_rank(torch.cat([j.reshape(j.shape[0], -1) for j in jac], dim=1))


def lazy_feature_rank(W: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> int:
    """Rank of the centred features P_perp sigma(X W) on the inputs (a, b): l of Theorem 5.2 once K is
    large enough for the columns to span their support."""
    features = hidden_pre_activation(W.double(), a, b).square()
    return numerical_rank(features - features.mean(dim=0))


def random_parameters(p: int, K: int, generator: torch.Generator, d: int | None = None):
    """Generic (W, V): independent standard normal entries, W [d, K] (d = 2p unless given), V [p, K]."""
    d = 2 * p if d is None else d
    return (
        torch.randn(d, K, generator=generator, dtype=torch.float64),
        torch.randn(p, K, generator=generator, dtype=torch.float64),
    )


def effective_atoms(W: torch.Tensor, V: torch.Tensor, mass: float = 0.99) -> int:
    """K_eff: the fewest atoms v_j (x) w_j w_j^T whose norms ||v_j|| ||w_j||^2 hold `mass` of the total
    (`grokslt.training.model.top_atoms`)."""
    return len(top_atoms(W, V, mass))


def active_atom_rank(W: torch.Tensor, V: torch.Tensor, mass: float = 0.99, max_atoms: int = 96) -> tuple[int, int]:
    """(K_eff, rank of the Jacobian of Phi_p restricted to the K_eff largest atoms).

    The Jacobian has p d (d + 1) / 2 rows (300,563 for p = 53), too many to form, so the rank is taken
    from its Gram matrix, whose entries have closed forms in S = W^T W and T = V^T V:
      <dPhi/dV[k,j], dPhi/dV[l,m]> = [k = l] S_jm^2,
      <dPhi/dV[k,j], dPhi/dW[i,m]> = 2 V[k,m] W[i,j] S_jm,
      <dPhi/dW[i,j], dPhi/dW[i',m]> = 2 T_jm ([i = i'] S_jm + W[i',j] W[i,m]),
    with the Frobenius inner product on the symmetric matrices Q_k. The generic value is
    K_eff (d + p - 1) (one scaling symmetry per atom)."""
    W, V = W.double(), V.double()
    count = effective_atoms(W, V, mass)
    if count > max_atoms:
        raise ValueError(f"K_eff = {count} atoms: above max_atoms = {max_atoms}; the Gram matrix would be too large")
    keep = atom_norms(W, V).argsort(descending=True)[:count]
    W, V = W[:, keep], V[:, keep]
    d, p, k = W.shape[0], V.shape[0], count
    S, T = W.T @ W, V.T @ V
    vv = torch.kron(torch.eye(p, dtype=W.dtype), S.square())
    vw = 2 * torch.einsum("km,ij,jm->kjmi", V, W, S).reshape(p * k, k * d)
    eye = torch.eye(d, dtype=W.dtype)
    ww = 2 * T[:, None, :, None] * (eye[None, :, None, :] * S[:, None, :, None] + torch.einsum("bj,am->jamb", W, W))
    gram = torch.cat([torch.cat([vv, vw], 1), torch.cat([vw.T, ww.reshape(k * d, k * d)], 1)], 0)
    eigenvalues = torch.linalg.eigvalsh(gram)
    tolerance = eigenvalues[-1] * gram.shape[0] * torch.finfo(torch.float64).eps
    return count, int((eigenvalues > tolerance).sum())


def single_output_map(W: torch.Tensor, v: torch.Tensor, bias: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """(Q, r, s) of f(x) = sum_j v_j (w_j^T x + b_j)^2 + c = x^T Q x + 2 r^T x + s (appendix G.1)."""
    Q = torch.einsum("j,aj,bj->ab", v, W, W)
    rows, cols = torch.triu_indices(W.shape[0], W.shape[0])
    r = W @ (v * bias)
    s = (v * bias.square()).sum() + c
    return torch.cat([Q[rows, cols], r, s.reshape(1)])


def single_output_rank(d: int, K: int, generator: torch.Generator) -> int:
    """Rank of the Jacobian of the single-output map at generic parameters (Theorems G.1, G.2)."""
    _positive(d=d, K=K)
    args = (
        torch.randn(d, K, generator=generator, dtype=torch.float64),
        torch.randn(K, generator=generator, dtype=torch.float64),
        torch.randn(K, generator=generator, dtype=torch.float64),
        torch.randn((), generator=generator, dtype=torch.float64),
    )
    jac = torch.func.jacrev(single_output_map, argnums=(0, 1, 2, 3))(*args)
    return numerical_rank(torch.cat([j.reshape(j.shape[0], -1) for j in jac], dim=1))


def closed_form_row(p: int, K: int) -> dict:
    """Every closed-form LLC of the paper for modular addition mod p with width K (d = 2p)."""
    generic = generic_llc(2 * p, p, K)
    row = {"p": p, "K": K, "d": 2 * p, "regime": generic.regime, "generic_llc": generic.value}
    row["stage2_llc"] = generic.value if generic.regime == SUBABUNDANT else float("nan")
    lower, upper = lazy_bounds(p, K) if 2 * p - 1 < K else (float("nan"), float("nan"))
    row.update(lazy_lower=lower, lazy_upper=upper, lazy_llc_all_pairs=lazy_llc(p, K, p * p - 1))
    return row


def rank_check_row(p: int, K: int, generator: torch.Generator) -> dict:
    """Closed forms beside the numerical ranks at generic parameters, on all p^2 inputs."""
    W, V = random_parameters(p, K, generator)
    a, b = torch.arange(p).repeat_interleave(p), torch.arange(p).repeat(p)
    generic = generic_llc(2 * p, p, K)
    param_rank = parameter_map_rank(W, V)
    data_rank = data_jacobian_rank(W, V, a, b)
    lazy_l = lazy_feature_rank(W, a, b)
    return {
        "p": p,
        "K": K,
        "regime": generic.regime,
        "expected_rank": generic.expected_rank,
        "generic_llc": generic.value,
        "parameter_map_rank": param_rank,
        "parameter_map_llc": param_rank / 2,
        "defective": param_rank < generic.expected_rank,
        "data_jacobian_rank": data_rank,
        "data_llc": data_rank / 2,  # also the NTK LLC (Theorem 5.1) at these generic parameters
        "lazy_feature_rank": lazy_l,
        "lazy_llc": lazy_llc(p, K, lazy_l) if lazy_l > 0 else 0.0,
    }


def single_output_row(d: int, K: int, generator: torch.Generator) -> dict:
    rank = single_output_rank(d, K, generator)
    theorem = "G.1" if d <= K else "G.2"
    return {"d": d, "K": K, "theorem": theorem, "llc": single_output_llc(d, K), "numerical_llc": rank / 2}


def checkpoint_row(step: int, params: dict[str, torch.Tensor], p: int, mass: float, atom_rank_max: int) -> dict:
    """Theory at a trained checkpoint of a quadratic network on modular addition under the centred loss: K_eff,
    the stage-II value with K_eff atoms (Remark 5.5) and, where K_eff <= atom_rank_max, the rank of Phi_p's
    Jacobian on those atoms (halved)."""
    W, V = params["W"], params["V"]
    K = W.shape[1]
    count = effective_atoms(W, V, mass)
    generic_keff = generic_llc(2 * p, p, max(count, 1))
    row = {
        "step": step,
        "K": K,
        "K_eff": count,
        "K_eff_mass": mass,
        "generic_llc": generic_llc(2 * p, p, K).value,
        "keff_llc": generic_keff.value,
        "atom_rank_llc": float("nan"),
    }
    if 0 < count <= atom_rank_max:
        row["atom_rank_llc"] = active_atom_rank(W, V, mass, atom_rank_max)[1] / 2
    return row


def write_theory_tables(out_dir, sizes, grid_p, grid_K, single_d, single_K, seed: int = 0) -> None:
    """formulas.csv (closed forms at the experiments' sizes), rank_checks.csv (numerical ranks on a
    grid of small sizes), single_output.csv (Theorems G.1, G.2 against numerical ranks)."""
    from pathlib import Path

    from grokslt.io import write_csv

    for name, values in {"grid_p": grid_p, "grid_K": grid_K, "single_d": single_d, "single_K": single_K}.items():
        for value in values:
            _positive(**{name: value})
    generator = torch.Generator().manual_seed(seed)
    out = Path(out_dir)
    formulas = [closed_form_row(p, K) for p, K in sorted(set(sizes))]
    write_csv(out / "formulas.csv", formulas, list(formulas[0]) if formulas else ["p", "K"])
    checks = [rank_check_row(p, K, generator) for p in grid_p for K in grid_K]
    write_csv(out / "rank_checks.csv", checks, list(checks[0]) if checks else ["p", "K"])
    single = [single_output_row(d, K, generator) for d in single_d for K in single_K]
    write_csv(out / "single_output.csv", single, list(single[0]) if single else ["d", "K"])


THEORY_COLUMNS = ["step", "K", "K_eff", "K_eff_mass", "generic_llc", "keff_llc", "atom_rank_llc"]


def checkpoint_theory(run, steps, mass: float = 0.99, atom_rank_max: int = 0) -> list[dict]:
    """`checkpoint_row` at the given checkpoints of a loaded run (`grokslt.training.runs.load_run`)."""
    if not closed_forms_apply(run.config):  # a table of blanks would read as theory computed and found empty
        reason = closed_forms_label(run.config).removeprefix("not applied: ")
        raise BadInput(f"{run.path}: the paper's closed forms do not apply to this run ({reason}); nothing written")
    return [checkpoint_row(step, run.load(step), run.config.p, mass, atom_rank_max) for step in steps]


def write_checkpoint_theory(run_dir, out, steps=None, chunk=None, mass: float = 0.99, atom_rank_max: int = 0):
    from grokslt.artefacts import seal
    from grokslt.io import write_csv
    from grokslt.training.runs import load_run, select_run_steps

    run = load_run(run_dir)
    rows = checkpoint_theory(run, select_run_steps(run, steps, chunk), mass, atom_rank_max)
    seal(out, write_csv(out, rows, THEORY_COLUMNS), "grokslt theory --run", run.identity)
    return rows


def closed_forms_apply(config) -> bool:
    """Whether the paper's closed forms describe a run: the quadratic network, the centred MSE, modular addition."""
    return closed_forms_label(config) == PAPER_SETTING


def closed_forms_label(config) -> str:
    """'modular addition' where the closed forms apply, else 'not applied: ...' with the reason."""
    if config.model != "quadratic":
        return f"not applied: proven for the quadratic network, not model {config.model}"
    if config.loss != "centred_mse":
        return f"not applied: proven for the centred MSE, not loss {config.loss}"
    if config.task != PAPER_TASK:
        return f"not applied: proven for addition, not {config.task}"
    return PAPER_SETTING

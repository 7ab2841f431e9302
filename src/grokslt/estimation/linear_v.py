"""The LLC's estimand in closed form when only V moves: the network is then linear in V.

With W held at W*, Phi = (W*^T x)^2 [n, K] over the training pairs, Phi_c = P Phi and Y_c = P Y centred
over the n samples: L_n(V) = 1/(2n) ||Y_c - Phi_c V^T||^2, a quadratic with the same Hessian
H = Phi_c^T Phi_c / n for each of the p rows v_j of V, and gradient g_j = H v*_j - Phi_c^T y_cj / n at V*
(non-zero off a minimum). With u_j = v_j - v*_j, L - L* = sum_j g_j.u_j + u_j^T H u_j / 2, so the tempered
localized posterior exp(-nbeta L - gamma/2 ||u||^2) is Gaussian: precision A = nbeta H + gamma I, mean
m_j = -nbeta A^{-1} g_j. Then E[u_j^T H u_j] = m_j^T H m_j + tr(H A^{-1}), and
    nbeta E[L - L*] = nbeta sum_j (g_j.m_j + m_j^T H m_j / 2)   (the shift part, <= 0)
                    + (p/2) sum_k nbeta h_k / (nbeta h_k + gamma)  (the trace part),
h_k the eigenvalues of H. As gamma -> 0 and nbeta -> inf at a minimum (g = 0) this tends to the learning
coefficient p rank(Phi_c) / 2; off a minimum the shift part tends to -nbeta sum_j g_j^T H^+ g_j / 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from grokslt.errors import BadInput
from grokslt.estimation.observables import fit_on_training_set
from grokslt.estimation.preconditioner import feature_block
from grokslt.training.data import ModularArithmetic
from grokslt.training.loss import centred_residual
from grokslt.training.model import hidden_pre_activation


def v_only_estimand(
    W: torch.Tensor, V: torch.Tensor, data: ModularArithmetic, nbeta: float, gamma: float, subset: str = "train"
) -> dict:
    """The closed form above at w* = (W, V) ([2p, K], [p, K]) on `subset` of `data`'s pairs (its training set
    by default; n is the subset's size), in float64.

    H's eigendecomposition comes from the SVD of Phi_c (h_k = s_k^2 / n: no squared condition number).
    Singular values s_k <= max(n, K) eps s_max (numpy's `matrix_rank` tolerance, eps the float64 machine
    epsilon) count as exact zeros: they set the rank, and their h_k and gradient components are taken as 0
    (g_j lies in the row space of Phi_c). With gamma = 0 such directions add nothing to the loss but are
    not localized: the expected squared distance is then infinite.

    Returns floats: `estimand` = nbeta E[L - L*] = `trace_part` + `shift_part`; `expected_loss_excess`
    = E[L - L*]; `rank` of Phi_c; `learning_coefficient` = p rank / 2; `init_loss` = L_n(w*);
    `expected_sq_distance` = E||V - V*||^2 = sum_j |m_j|^2 + p tr A^{-1}; `grad_norm` = ||grad_V L_n(w*)||_F.
    """
    if nbeta <= 0 or gamma < 0:
        raise ValueError(f"nbeta = {nbeta}, gamma = {gamma}: expected nbeta > 0 and gamma >= 0")
    a, b, c = data.subset(subset)
    W, V = W.detach().double().cpu(), V.detach().double().cpu()
    p, hidden = V.shape
    n = len(a)
    phi = hidden_pre_activation(W, a, b).square()
    phi_c = phi - phi.mean(dim=0, keepdim=True)
    target = torch.nn.functional.one_hot(c, p).double()
    residual = centred_residual(phi @ V.T, target)  # Y_c - Phi_c V^T
    init_loss = 0.5 * residual.pow(2).sum().item() / n
    grad = -(residual.T @ phi_c) / n  # rows g_j, [p, K]

    _, s, vh = torch.linalg.svd(phi_c, full_matrices=True)
    tolerance = max(n, hidden) * torch.finfo(torch.float64).eps * (s.max().item() if len(s) else 0.0)
    nonzero = s > tolerance
    rank = int(nonzero.sum())
    h = torch.zeros(hidden, dtype=torch.float64)
    h[: len(s)] = torch.where(nonzero, s.square() / n, 0.0)
    kept = h > 0
    precision = nbeta * h + gamma  # eigenvalues of A
    g_eig = torch.where(kept, grad @ vh.T, 0.0)  # g_j in H's eigenbasis, [p, K]
    safe = torch.where(precision > 0, precision, 1.0)
    m_eig = torch.where(precision > 0, -nbeta * g_eig / safe, 0.0)
    shift = nbeta * (g_eig * m_eig + 0.5 * h * m_eig.square()).sum().item()
    trace = 0.5 * p * torch.where(kept, nbeta * h / safe, 0.0).sum().item()
    if bool((precision > 0).all()):
        sq_distance = m_eig.square().sum().item() + p * (1.0 / precision).sum().item()
    else:
        sq_distance = float("inf")
    estimand = trace + shift
    return {
        "estimand": estimand,
        "trace_part": trace,
        "shift_part": shift,
        "expected_loss_excess": estimand / nbeta,
        "rank": rank,
        "learning_coefficient": p * rank / 2,
        "init_loss": init_loss,
        "expected_sq_distance": sq_distance,
        "grad_norm": grad.norm().item(),
        "nbeta": float(nbeta),
        "gamma": float(gamma),
    }


@dataclass
class LinearInVLoss:
    """loss_fn for `grokslt.estimation.llc` with W fixed: params {"V": [R, p, K]}, idx [R, B] ->
    (loss [R], {"V": grad [R, p, K]}), the loss centred over the B samples of the batch as
    `QuadraticNetLoss` centres it. `phi` [R or 1, n, K] holds Phi = (W*^T x)^2 of the n training pairs,
    one row per chain or one row shared by every chain; `c` [n] the targets. One row per chain needs every
    call to pass all R chains, as `run_chains` does; `estimate_llc` also evaluates single chains (L_init,
    the centre's observation), so give it one shared W* (one loss per point for several points)."""

    phi: torch.Tensor
    c: torch.Tensor
    p: int
    _cast: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if self.phi.dim() == 2:
            self.phi = self.phi.unsqueeze(0)
        self.phi, self.c = self.phi.contiguous(), self.c.contiguous()

    @classmethod
    def training_set(cls, data: ModularArithmetic, W: torch.Tensor, device="cpu", subset="train") -> LinearInVLoss:
        """From W* [2p, K] (shared by every chain) or [R, 2p, K] (one per chain), on `subset` of the pairs."""
        a, b, c = (t.to(device) for t in data.subset(subset))
        W = W.detach().to(device)
        if W.dim() == 2:
            W = W.unsqueeze(0)
        return cls(hidden_pre_activation(W, a, b).square(), c, data.p)

    def features(self, dtype: torch.dtype) -> torch.Tensor:
        """Phi in `dtype`, converted once."""
        if self.phi.dtype == dtype:
            return self.phi
        if dtype not in self._cast:
            self._cast[dtype] = self.phi.to(dtype)
        return self._cast[dtype]

    def curvature_blocks(self, centre) -> dict:
        """V's Gauss-Newton (and Hessian) block Phi_c^T Phi_c / n, for the preconditioned sampler; one W* only."""
        if self.phi.shape[0] != 1:
            raise BadInput(f"sampler = pmala: the features hold {self.phi.shape[0]} W*; its preconditioner needs one")
        return {"V": feature_block(self.phi[0])}

    def observe(self, params) -> dict[str, torch.Tensor]:
        """Each chain's full training-set loss and accuracy (`observables.fit_on_training_set`), [R] each."""
        V = params["V"]
        return fit_on_training_set(self.features(V.dtype) @ V.transpose(1, 2), self.c)

    def __call__(self, params, idx):
        V = params["V"]
        phi = self.features(V.dtype)
        rows, n, hidden = phi.shape
        chains, batch = idx.shape
        if rows == 1:
            z = phi[0].index_select(0, idx.reshape(-1))
        elif rows == chains:
            offsets = torch.arange(chains, device=idx.device).unsqueeze(1) * n
            z = phi.reshape(-1, hidden).index_select(0, (idx + offsets).reshape(-1))
        else:
            raise ValueError(f"idx has {chains} chains; the features have {rows} rows (expected 1 or {chains})")
        z = z.view(chains, batch, hidden)
        pred = torch.bmm(z, V.transpose(1, 2))
        target = torch.zeros_like(pred).scatter_(-1, self.c[idx].unsqueeze(-1), 1.0)
        residual = centred_residual(pred, target)
        loss = 0.5 * residual.pow(2).sum(dim=(1, 2)) / batch
        grad = torch.bmm(residual.transpose(1, 2), z).mul_(-1.0 / batch)
        return loss, {"V": grad}

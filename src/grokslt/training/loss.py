"""The centred squared loss of section 3.2.

L(Y, Yhat) = 1/(2n) ||(Y - Yhat) P_perp||_F^2 with P_perp = I_n - 11^T/n centring over the n samples
of the batch: a per-sample mean, summed over the p outputs. On the full training set this is the
empirical loss L_n that the LLC and the Hessian trace use. All functions accept leading batch
dimensions (chains, checkpoints) before the [n, p] sample and output dimensions.
"""

from __future__ import annotations

import torch


def centred_residual(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(Y - Yhat) with its mean over the samples (dimension -2) removed."""
    error = target - pred
    return error - error.mean(dim=-2, keepdim=True)


def centred_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """0.5 * ||P_perp (Y - Yhat)||_F^2 / n over the last two dimensions [n, p]."""
    residual = centred_residual(pred, target)
    return 0.5 * residual.pow(2).sum(dim=(-2, -1)) / pred.shape[-2]


def authors_logged_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The loss the authors' logs report as train_loss / val_loss.

    Their evaluation feeds one example at a time to the same centred loss, so each [p] output is
    centred over its own p entries and divided by p; the logged value is the mean over examples.
    Kept only to compare with their `loss_data.csv` (its initial value is 0.5 (1 - 1/p) / p).
    """
    error = target - pred
    error = error - error.mean(dim=-1, keepdim=True)
    return (0.5 * error.pow(2).sum(dim=-1) / pred.shape[-1]).mean(dim=-1)


def batch_centring_factor(n: int, batch_size: int) -> float:
    """E[L_B] / L_n for a batch of B of the n samples drawn without replacement: (B - 1) n / (B (n - 1)),
    exactly (the batch mean's variance is the finite-population one). Centring over the batch shrinks the
    minibatch loss by this factor (1 for B = n, 0 for one sample), so minibatch samplers see nbeta times it,
    roughly, instead of nbeta."""
    batch_size = min(batch_size, n)
    return (batch_size - 1) * n / (batch_size * (n - 1)) if n > 1 else 1.0


def epoch_centring_factor(n: int, batch_size: int) -> float:
    """The mean of `batch_centring_factor` over the batches of one epoch (devinterp's DataLoader: full batches
    of B, then one of the n mod B left over): E[mean of L_B over an epoch] / L_n."""
    batch_size = min(batch_size, n)
    full, rest = divmod(n, batch_size)
    sizes = [batch_size] * full + ([rest] if rest else [])
    return sum(batch_centring_factor(n, size) for size in sizes) / len(sizes)


# -- the loss a run trains with ------------------------------------------------------------------------------

LOSSES = ("centred_mse", "cross_entropy")


def pair_losses(kind: str, pred: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Each sample's share of the loss `kind`, [..., n] from outputs pred [..., n, p] and classes c [n] (or
    [..., n]): the mean of the shares is the loss of the n samples. For `centred_mse` a share is
    ||row i of (Y - Yhat) P_perp||^2 / 2, the residual centred over these n samples; for `cross_entropy` it is
    -log softmax(pred_i)[c_i]."""
    if kind == "cross_entropy":
        return -pred.log_softmax(dim=-1).gather(-1, c.expand(pred.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    return 0.5 * centred_residual(pred, one_hot_like(pred, c)).pow(2).sum(dim=-1)


def sample_loss(kind: str, pred: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The loss `kind` of outputs pred [..., n, p] on classes c: the paper's centred MSE (`centred_loss`) or
    the mean cross-entropy of the logits, [...]."""
    if kind not in LOSSES:
        raise ValueError(f"loss = {kind!r}: expected one of {list(LOSSES)}")
    if kind == "centred_mse":  # summed as training always summed it (the same bits)
        return centred_loss(pred, one_hot_like(pred, c))
    return pair_losses(kind, pred, c).mean(dim=-1)


def one_hot_like(pred: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The one-hot targets of classes c in the shape and dtype of pred (by comparison: `torch.func.vmap` refuses
    `one_hot`, which reads the classes' maximum)."""
    classes = torch.arange(pred.shape[-1], device=pred.device)
    return (c.expand(pred.shape[:-1]).unsqueeze(-1) == classes).to(pred.dtype)


def zero_output_loss(kind: str, c: torch.Tensor, p: int) -> float:
    """The loss of the function that outputs zero, on the samples of classes c: the scale of divergence and of
    locality (for the centred MSE about 0.5 (1 - 1/p); ln p for the cross-entropy, uniform logits)."""
    return float(sample_loss(kind, torch.zeros(len(c), p, dtype=torch.float64), c))

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

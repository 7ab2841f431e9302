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

"""Accuracy, the grokking severity measure (appendix H.3), and the steps at which a run memorises
and generalises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

MEMORISATION_THRESHOLD = 0.99
GROKKING_THRESHOLDS = (0.5, 0.95)
GSM_THRESHOLD = 0.95
SATURATION_THRESHOLD = 0.99


def accuracy(pred: torch.Tensor, c: torch.Tensor) -> float:
    """Fraction of samples whose arg-max output is the target class."""
    return (pred.argmax(dim=-1) == c).double().mean().item()


def offset_corrected_accuracy(pred: torch.Tensor, c: torch.Tensor, offset: torch.Tensor) -> float:
    """Accuracy after subtracting a per-class offset (each output's mean over the training set).

    The centred loss leaves a constant per-class shift of the outputs unpenalised, so a net can fit
    the centred targets yet have its raw arg-max dominated by one class.
    """
    return accuracy(pred - offset, c)


def grokking_severity(train_acc: Sequence[float], val_acc: Sequence[float]) -> float:
    """GSM = 1{a_V(T) >= 0.95} / T * sum_x |a_T(x) - a_V(x)| over the T logged evaluations."""
    train_acc, val_acc = np.asarray(train_acc, float), np.asarray(val_acc, float)
    if train_acc.shape != val_acc.shape or train_acc.size == 0:
        raise ValueError(
            f"train_acc and val_acc: expected two equal-length non-empty series, got "
            f"{train_acc.size} and {val_acc.size} values"
        )
    if val_acc[-1] < GSM_THRESHOLD:
        return 0.0
    return float(np.abs(train_acc - val_acc).mean())


def first_step_reaching(steps: Sequence[int], values: Sequence[float], threshold: float):
    """The first logged step whose value is >= threshold, or None if none is."""
    for step, value in zip(steps, values, strict=True):
        if value >= threshold:
            return int(step)
    return None


def saturation_step(steps: Sequence[int], val_acc: Sequence[float], threshold: float = SATURATION_THRESHOLD):
    """The first logged step from which validation accuracy stays >= threshold to the end, or None."""
    reached = None
    for step, value in zip(steps, val_acc, strict=True):
        if value < threshold:
            reached = None
        elif reached is None:
            reached = int(step)
    return reached


def transition_steps(steps, train_acc, val_acc) -> dict[str, int | None]:
    """Memorisation (train acc >= 0.99), grokking (val acc >= 0.5, >= 0.95) and saturation (val acc
    >= 0.99 from then on) steps."""
    low, high = GROKKING_THRESHOLDS
    return {
        "memorisation_step": first_step_reaching(steps, train_acc, MEMORISATION_THRESHOLD),
        "grok_step_50": first_step_reaching(steps, val_acc, low),
        "grok_step_95": first_step_reaching(steps, val_acc, high),
        "saturation_step": saturation_step(steps, val_acc),
    }

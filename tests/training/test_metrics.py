import pytest
import torch

from grokslt.training.metrics import (
    accuracy,
    grokking_severity,
    offset_corrected_accuracy,
    transition_steps,
)


def test_accuracy_and_offset_correction():
    pred = torch.tensor([[5.0, 1.0], [5.0, 2.0]])
    c = torch.tensor([0, 1])
    assert accuracy(pred, c) == 0.5
    assert offset_corrected_accuracy(pred, c, pred.mean(dim=0)) == 1.0


def test_gsm_is_mean_gap_when_generalised():
    train = [0.5, 1.0, 1.0, 1.0]
    val = [0.0, 0.2, 0.6, 0.96]
    assert grokking_severity(train, val) == pytest.approx((0.5 + 0.8 + 0.4 + 0.04) / 4)


def test_gsm_vanishes_without_generalisation():
    assert grokking_severity([1.0, 1.0], [0.1, 0.94]) == 0.0


def test_gsm_rejects_mismatched_series():
    with pytest.raises(ValueError, match="equal-length"):
        grokking_severity([1.0], [1.0, 1.0])


def test_transition_steps():
    steps = [100, 200, 300, 400]
    out = transition_steps(steps, [0.5, 0.995, 1.0, 1.0], [0.0, 0.3, 0.7, 0.97])
    assert out == {"memorisation_step": 200, "grok_step_50": 300, "grok_step_95": 400, "saturation_step": None}
    later = transition_steps([1, 2, 3, 4], [1.0] * 4, [0.995, 0.5, 0.99, 1.0])
    assert later["saturation_step"] == 3  # the first step from which validation accuracy stays >= 0.99
    assert transition_steps(steps, [0] * 4, [0] * 4)["grok_step_95"] is None

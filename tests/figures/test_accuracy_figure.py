"""estimator_accuracy's bias panel: relative only where the exact estimand is bounded away from zero."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

from grokslt.figures import style
from grokslt.figures.accuracy import estimator_accuracy, relative_scale


def accuracy_rows(point: str, references: list[float], truth: float = np.nan) -> list[dict]:
    return [{"point": point, "method": "sgld", "nbeta": nbeta, "estimate": reference + 3.7, "spread": 0.5,
             "bias": 3.7, "reference": reference, "reference_mcse": 0.05, "truth": truth, "truth_rule": "none"}
            for nbeta, reference in zip((10.0, 30.0, 100.0), references, strict=True)]  # fmt: skip


def test_a_reference_that_crosses_zero_gets_the_absolute_bias():
    """The random point's estimand is -0.8 at nbeta 100: its "relative bias" read -4.6."""
    table = pd.DataFrame(accuracy_rows("a@init", [1.2, 0.3, -0.8]) + accuracy_rows("a@3050", [40.0, 45.0, 47.0], 47.5))
    style.apply()
    fig = estimator_accuracy(SimpleNamespace(csv=lambda kind: table))
    random_ax, minimum_ax = fig.axes[0], fig.axes[1]
    assert random_ax.get_ylabel() == "estimate - exact" and "absolute bias" in random_ax.get_title()
    assert np.allclose(random_ax.get_lines()[0].get_ydata(), 3.7)
    assert minimum_ax.get_ylabel() == "(estimate - exact) / exact"
    assert np.allclose(minimum_ax.get_lines()[0].get_ydata(), [3.7 / 40, 3.7 / 45, 3.7 / 47])


def test_relative_needs_one_sign_and_three_standard_errors_from_zero():
    assert relative_scale([40.0, 45.0], [0.1, 0.1])
    assert not relative_scale([1.2, -0.8], [0.05, 0.05])
    assert not relative_scale([0.2, 5.0], [0.1, 0.1])  # 0.2 is 2 MCSE from zero

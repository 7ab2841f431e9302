"""Whether an estimate is local: do its chains sample networks near the trained one?

The localized tempered posterior exp(-nbeta L_n(w) - gamma/2 ||w - w*||^2) is dominated by its Gaussian
factor when nbeta is small against gamma over the loss's curvature: the chains then wander far from w*,
to networks that fit the training data worse than the zero function, and the "LLC" they give measures
the Gaussian (it grows with the parameter count whatever the basin), not the basin of w*. Measured on the
full-batch observations (`grokslt.estimation.observables`):

- `loss_excess`: the mean over draws and chains of L_n(w_t) - L_n(w*), and `loss_excess_fraction`, the same
  over the zero function's loss L_n(0) (predicting nothing: 0.49 for the baseline);
- `sampled_train_acc`: the mean training accuracy of the sampled networks, beside `centre_train_acc` of
  w* (both after removing each output's mean over the training set, which the centred loss leaves free);
- `relative_distance`: the mean of ||w_t - w*|| / ||w*||.

An estimate is `local` when loss_excess <= LOCAL_MAX_FRACTION (10%) of L_n(0): the sampled networks fit
the training data almost as well as w* does, measured on the only scale the task gives (the estimand
nbeta E[L_n - L_n(w*)] is then at most a tenth of nbeta L_n(0)), and the chains do not descend: at a minimum
w* the tempered posterior's mean loss lies above L_n(w*), so a mean loss below it by more than
DESCENT_STDERRS standard errors (over the chains' means) says that w* is no minimum and the chains left its
basin downhill (`descends`; their "LLC" is negative, and no estimate of w*'s basin).
"""

from __future__ import annotations

import math

import numpy as np

LOCAL_MAX_FRACTION = 0.1
DESCENT_STDERRS = 2.0
COLUMNS = [
    "loss_excess",
    "loss_excess_fraction",
    "zero_loss",
    "sampled_train_acc",
    "centre_train_acc",
    "relative_distance",
    "descends",
    "local",
]


def locality(observations: dict[str, np.ndarray], centre: dict[str, float]) -> dict:
    """The locality columns from observations {name: [chains, T]} (diverged chains removed) and the
    centre's own observation (`observables.centre_observation`)."""
    if not observations or observations["loss"].size == 0:
        return dict.fromkeys(COLUMNS[:-2], math.nan) | {"descends": False, "local": False}
    excess = float(np.mean(observations["loss"]) - centre["loss"])
    descends = excess < -DESCENT_STDERRS * mean_stderr(observations["loss"])
    fraction = excess / centre["zero_loss"] if centre["zero_loss"] > 0 else math.nan
    accuracy = observations.get("accuracy")
    norm = centre["norm"]
    distance = float(np.mean(np.sqrt(observations["distance_sq"]))) / norm if norm > 0 else math.nan
    return {
        "loss_excess": excess,
        "loss_excess_fraction": fraction,
        "zero_loss": centre["zero_loss"],
        "sampled_train_acc": float(np.mean(accuracy)) if accuracy is not None else math.nan,
        "centre_train_acc": centre["accuracy"],
        "relative_distance": distance,
        "descends": bool(descends),
        "local": bool(fraction <= LOCAL_MAX_FRACTION and not descends),
    }


def mean_stderr(loss: np.ndarray) -> float:
    """The standard error of the mean of loss [chains, T]: from the chains' means where there are several
    (their draws are correlated within a chain, independent between chains), else from one chain's draws."""
    chains, draws = loss.shape
    if chains >= 2:
        return float(np.std(loss.mean(axis=1), ddof=1) / math.sqrt(chains))
    return float(np.std(loss, ddof=1) / math.sqrt(draws)) if draws >= 2 else 0.0

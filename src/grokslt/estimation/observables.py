"""Full-batch observables of the sampled networks, recorded at thinned draws.

Convergence and locality are judged on what the chains' positions are, not on the minibatch losses
the sampler sees: those carry white batch noise, which inflates the effective sample size and pulls
R-hat towards 1 while the parameters themselves mix slowly. Every `observe_every` draws each chain's
network is evaluated on the whole training set:

- `loss`: L_n(w_t), the empirical loss the LLC is defined by;
- `distance_sq`: ||w_t - w*||^2, the direction in which a chain that has not mixed shows it first;
- `accuracy`: the training accuracy of the sampled network (where the loss function can give it);
- `pairs_<set>`: where the loss function keeps per-pair traces, each pair's loss l_i(w_t) on that set of
  pairs (`grokslt.training.loss.pair_losses`), [R, m]: the material of WAIC and of the Bayesian influence functions.

One observation is a forward pass over the n samples; a minibatch step is a forward and a backward
pass over B samples, about three forward passes of B. The default thinning keeps the observations'
cost within OVERHEAD of the sampling's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch

from grokslt.errors import BadInput
from grokslt.training.loss import sample_loss

OVERHEAD = 0.25
MIN_OBSERVATIONS = 4  # per chain: fewer leave R-hat and ESS undefined

Params = Mapping[str, torch.Tensor]


def default_thinning(n: int, batch_size: int) -> int:
    """Draws between two observations so that they cost at most OVERHEAD of the sampling."""
    relative_cost = n / (3 * min(batch_size, n))
    return max(1, math.ceil(relative_cost / OVERHEAD))


def checked_thinning(observe_every: int | None, n: int, batch_size: int, num_draws: int) -> int:
    """The thinning to use: the given one or the default, refused when it leaves too few observations."""
    every = observe_every or default_thinning(n, batch_size)
    if num_draws // every < MIN_OBSERVATIONS:
        raise BadInput(
            f"observe_every = {every}: leaves {num_draws // every} full-batch observations of {num_draws} draws "
            f"per chain; expected at least {MIN_OBSERVATIONS} (lower observe_every or raise num_draws)"
        )
    return every


def fit_on_training_set(pred: torch.Tensor, c: torch.Tensor, loss: str = "centred_mse") -> dict[str, torch.Tensor]:
    """From each chain's outputs on the n training pairs, pred [R, n, p], and their classes c [n]: the loss L_n
    (`loss`, the run's) and the training accuracy, [R] each; for the centred MSE the arg-max after removing each
    output's mean over the training set (the centred loss leaves that offset free). The `observe` of a loss
    function whose model gives outputs."""
    centred = pred - pred.mean(dim=-2, keepdim=True) if loss == "centred_mse" else pred
    accuracy = (centred.argmax(dim=-1) == c).double().mean(dim=-1)
    return {"loss": sample_loss(loss, pred, c), "accuracy": accuracy}


def observe(loss_fn: Callable, params: Params, centers: Params, n: int) -> dict[str, torch.Tensor]:
    """Each chain's full-batch loss, squared distance to its centre and (if the loss function gives it)
    training accuracy: tensors [R]."""
    if hasattr(loss_fn, "observe"):
        seen = dict(loss_fn.observe(params))
    else:
        rows = next(iter(params.values())).shape[0]
        device = next(iter(params.values())).device
        out = loss_fn(params, torch.arange(n, device=device).expand(rows, n))
        seen = {"loss": (out[0] if isinstance(out, tuple) else out).detach().clone()}
    seen["distance_sq"] = sum((params[k] - centers[k]).double().pow(2).flatten(1).sum(dim=1) for k in params)
    return seen


def centre_observation(loss_fn: Callable, centers: Params, n: int) -> dict[str, float]:
    """At the centre of the first chain: L_n(w*), its accuracy, ||w*||, and the loss of the zero
    function (all parameters zero), the scale that says how far from the trained fit a chain went. A loss
    function of part of the network or of a subset of the data gives that scale itself (`zero_function_loss`):
    zeroing only its group, or scoring a subset whose targets the centring removes, would not be the network's."""
    first = {k: v[:1] for k, v in centers.items()}
    at_centre = observe(loss_fn, first, first, n)
    at_zero = observe(loss_fn, {k: torch.zeros_like(v) for k, v in first.items()}, first, n)
    return {
        "loss": float(at_centre["loss"][0]),
        "accuracy": float(at_centre["accuracy"][0]) if "accuracy" in at_centre else math.nan,
        "norm": math.sqrt(float(at_zero["distance_sq"][0])),
        "zero_loss": getattr(loss_fn, "zero_function_loss", None) or float(at_zero["loss"][0]),
    }

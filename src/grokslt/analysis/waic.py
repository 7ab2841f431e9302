"""Watanabe's widely applicable information criterion (WAIC) for a tempered posterior.

The posterior is proportional to prior(w) * prod_i p(y_i | x_i, w)^beta: the likelihood at inverse
temperature beta (beta = nbeta / n for the sampler's n*beta). From draws w_1..w_S of it and the per-pair
log-likelihoods ll_i(w) = log p(y_i | x_i, w) (here minus the per-pair loss, a Gaussian log-likelihood up to
a constant that every w shares),

- the Bayes training loss       T_n = -(1/n) sum_i log E_w[p(y_i | x_i, w)],
- the functional variance       V_n = sum_i Var_w[log p(y_i | x_i, w)],
- WAIC                          W_n = T_n + (beta / n) V_n,
- the Bayes generalisation loss G_n = -E_(x, y) log E_w[p(y | x, w)], measured on held-out pairs.

Watanabe (2010, JMLR 11:3571, "Asymptotic equivalence of Bayes cross validation and widely applicable
information criterion in singular learning theory") shows E[G_n] = E[W_n] + o(1/n) for any beta, regular
or singular model: the temperature enters only through the factor beta on the variance (at beta = 1 this is
the usual WAIC, asymptotically equal to leave-one-out cross-validation). Expectations over w are over all
chains' draws pooled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass(frozen=True)
class WAIC:
    training_loss: float  # T_n
    functional_variance: float  # V_n
    waic: float  # T_n + (beta / n) V_n
    stderr: float  # of waic, over pairs
    effective_parameters: float  # beta V_n: n (W_n - T_n), which tends to d for a regular model of d parameters
    n: int


def pooled_draws(ll: np.ndarray) -> np.ndarray:
    """[C, D, N] per-draw log-likelihoods as one float64 [C * D, N] sample of the posterior."""
    ll = np.asarray(ll, dtype=np.float64)
    if ll.ndim != 3:
        raise ValueError(f"log-likelihoods must be [chain, draw, pair], got shape {ll.shape}")
    return ll.reshape(-1, ll.shape[-1])


def bayes_losses(ll: np.ndarray) -> np.ndarray:
    """Per pair, -log E_w[p(y_i | x_i, w)] = -(logsumexp_s ll_i(w_s) - log S) over the S pooled draws."""
    draws = pooled_draws(ll)
    return np.log(draws.shape[0]) - logsumexp(draws, axis=0)


def waic(train_ll: np.ndarray, beta: float) -> WAIC:
    """WAIC of the posterior at inverse temperature `beta` from its training pairs' log-likelihoods [C, D, N].

    W_n = mean_i (t_i + beta v_i), with t_i = -log E_w p(y_i | x_i, w) and v_i = Var_w log p(y_i | x_i, w)
    (the unbiased variance over the pooled draws, ddof = 1), so V_n = sum_i v_i and the standard error over
    pairs is SD_i(t_i + beta v_i) / sqrt(n) (ddof = 1).
    """
    t = bayes_losses(train_ll)
    v = pooled_draws(train_ll).var(axis=0, ddof=1)
    pointwise = t + beta * v
    n = t.size
    return WAIC(
        training_loss=float(t.mean()),
        functional_variance=float(v.sum()),
        waic=float(pointwise.mean()),
        stderr=float(pointwise.std(ddof=1) / np.sqrt(n)),
        effective_parameters=float(beta * v.sum()),
        n=n,
    )


def bayes_generalisation_loss(val_ll: np.ndarray) -> tuple[float, float]:
    """G_n estimated on M held-out pairs, -(1/M) sum_j log E_w exp(ll_j(w)), and its standard error over pairs
    (SD_j / sqrt(M), ddof = 1): the measurement that WAIC predicts from the training pairs alone."""
    g = bayes_losses(val_ll)
    return float(g.mean()), float(g.std(ddof=1) / np.sqrt(g.size))


def waic_row(tree) -> dict:
    """One checkpoint's WAIC against its held-out measurement, from its per-pair traces
    (`grokslt.estimation.pair_traces`). Losses are per pair, without the Gaussian constant (p/2) log 2 pi,
    so `bayes_train_loss`, `waic` and `bayes_val_loss` compare directly; so do the centre's losses."""
    from grokslt.estimation.pair_traces import pair_log_likelihoods

    train_ll, val_ll = pair_log_likelihoods(tree)
    beta = float(tree.attrs["beta"])
    criterion = waic(train_ll, beta)
    measured, measured_stderr = bayes_generalisation_loss(val_ll)
    constant = tree["constant_data"]
    return {
        "step": int(tree.attrs["step"]),
        "nbeta": float(tree.attrs["nbeta"]),
        "beta": beta,
        "draws": int(train_ll.shape[0] * train_ll.shape[1]),
        "bayes_train_loss": criterion.training_loss,
        "functional_variance": criterion.functional_variance,
        "effective_parameters": criterion.effective_parameters,
        "waic": criterion.waic,
        "waic_stderr": criterion.stderr,
        "bayes_val_loss": measured,
        "bayes_val_loss_stderr": measured_stderr,
        "predicted_gap": criterion.waic - criterion.training_loss,
        "measured_gap": measured - criterion.training_loss,
        "train_loss_at_centre": float(constant["train_loss_at_centre"].values.mean()),
        "val_loss_at_centre": float(constant["val_loss_at_centre"].values.mean()),
    }


def write_waic_table(traces_dir, out) -> list[dict]:
    """waic.csv: `waic_row` for every step<STEP:06d>.nc of a traces directory, by step."""
    from pathlib import Path

    from grokslt.errors import BadInput
    from grokslt.estimation.pair_traces import load_pair_traces, trace_step
    from grokslt.io import write_csv

    paths = sorted(Path(traces_dir).glob("step*.nc"), key=trace_step)
    if not paths:
        raise BadInput(f"--traces {traces_dir}: no step<STEP>.nc files (written by grokslt llc --pair-traces)")
    rows = []
    for path in paths:
        with load_pair_traces(path) as tree:
            rows.append(waic_row(tree))
    write_csv(out, rows, list(rows[0]))
    return rows

"""The statistics the claims share: least squares, Wilson's interval, trends and correlations of
autocorrelated series, Spearman's test exact for few points, and the halfway fall of a curve."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

EXACT_UP_TO = 8  # points; beyond, scipy's t approximation of Spearman's p


def ols(x, y, degree: int = 1) -> tuple[np.ndarray, np.ndarray, float]:
    """(coefficients highest power first, their standard errors, R^2) of a least-squares polynomial."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    design = np.vander(x, degree + 1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    dof = len(x) - degree - 1
    sigma2 = residual @ residual / dof if dof > 0 else math.nan
    covariance = sigma2 * np.linalg.pinv(design.T @ design)
    total = ((y - y.mean()) ** 2).sum()
    return coef, np.sqrt(np.diag(covariance)), 1 - (residual @ residual) / total if total > 0 else math.nan


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)  # 0 and 1 exactly at k = 0 and k = n (rounding)


def trend_slope(x, y) -> tuple[float, float]:
    """The least-squares slope of y on x and its standard error corrected for autocorrelated residuals: a
    trend's slope has variance inflated by (1 + r) / (1 - r) for residuals of lag-1 autocorrelation r > 0 (an
    AR(1) correction; at r = 0.8 it keeps a 5% test near 7% where the plain error gives about 50%, and where
    Newey-West with its usual lags still gives about 28%)."""
    (slope, intercept), (se, _), _ = ols(x, y)
    residual = np.asarray(y, float) - (slope * np.asarray(x, float) + intercept)
    r = max(0.0, float(np.corrcoef(residual[:-1], residual[1:])[0, 1])) if residual.std() > 0 else 0.0
    return float(slope), float(se) * math.sqrt((1 + r) / max(1 - r, 1e-12))


def effective_pairs(x, y) -> float:
    """Pairs of two autocorrelated series worth as much as independent ones for their correlation:
    n (1 - r_x r_y) / (1 + r_x r_y) with the lag-1 autocorrelations r_x, r_y (Bretherton et al. 1999)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    lag1 = [np.corrcoef(z[:-1], z[1:])[0, 1] for z in (x, y)]
    product = max(0.0, lag1[0] * lag1[1])
    return len(x) * (1 - product) / (1 + product)


def spearman(x, y) -> tuple[float, float, float]:
    """Spearman's rho and its one-sided p-values (rho < 0, rho > 0), exact over every ordering of y up to
    EXACT_UP_TO points (the t approximation gives p = 0 to any perfectly ordered set, however small)."""
    rank_x, rank_y = stats.rankdata(x), stats.rankdata(y)
    rho = float(np.corrcoef(rank_x, rank_y)[0, 1]) if np.std(rank_y) > 0 else math.nan
    if len(rank_x) > EXACT_UP_TO:
        return rho, stats.spearmanr(x, y, alternative="less")[1], stats.spearmanr(x, y, alternative="greater")[1]
    orderings = np.array(list(itertools.permutations(rank_y)))
    centred = orderings - orderings.mean(axis=1, keepdims=True)
    null = (
        centred @ (rank_x - rank_x.mean()) / (np.linalg.norm(centred, axis=1) * np.linalg.norm(rank_x - rank_x.mean()))
    )
    return rho, float(np.mean(null <= rho + 1e-12)), float(np.mean(null >= rho - 1e-12))


def half_fall_step(steps: np.ndarray, values: np.ndarray) -> float:
    """The first step at which `values` fall halfway from their largest value to their last one."""
    top = int(np.argmax(values))
    level = (values[top] + values[-1]) / 2
    for i in range(top, len(values) - 1):
        if values[i] >= level >= values[i + 1] and values[i] > values[i + 1]:
            return float(steps[i] + (values[i] - level) / (values[i] - values[i + 1]) * (steps[i + 1] - steps[i]))
    return math.nan

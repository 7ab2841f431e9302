"""A run's LLC series as the claims, the figures and the scripts read it: its estimates, which of them are
trusted (local and honestly converged), and its smoothed peak."""

from __future__ import annotations

import pandas as pd

SMOOTH = 5  # estimates in the centred rolling mean whose maximum is a trajectory's peak


LAPLACE = ["lambda_q", "lambda_q_stderr", "v_reach"]  # beside each estimate (`grokslt.estimation.laplace`)


def llc_series(table: pd.DataFrame) -> pd.DataFrame:
    """step, llc, mcse, converged, local of an LLC table (a run's loss_data or certified.csv), and the Laplace
    estimand and V's reach beside each estimate (blank in tables written before them)."""
    llc = table.rename(columns={"llc_mean": "llc"})
    llc = llc[llc["llc"].notna()].reindex(columns=["step", "llc", "mcse", "converged", "local", *LAPLACE])
    return llc.reset_index(drop=True).astype({"converged": bool, "local": bool, **dict.fromkeys(LAPLACE, float)})


def smoothed_llc(series: pd.DataFrame) -> pd.Series:
    """The LLC's centred rolling mean over SMOOTH estimates: where a noisy trajectory's peak is read."""
    return series["llc"].rolling(SMOOTH, center=True, min_periods=1).mean()


def smoothed_peak(series: pd.DataFrame) -> tuple[float, bool]:
    """The largest value of the smoothed LLC, and whether it sits at the first estimate (censored)."""
    smooth = smoothed_llc(series).reset_index(drop=True)
    return float(smooth.max()), int(smooth.idxmax()) == 0


def is_trusted(table: pd.DataFrame) -> pd.Series:
    return table["local"].astype(bool) & table["converged"].astype(bool)

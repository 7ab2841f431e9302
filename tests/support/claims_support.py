"""Synthetic summaries and LLC series for the claims' tests (tests/analysis)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from grokslt.analysis.claims.evidence import Evidence


def summary_row(run, experiment, **values):
    base = dict(run=run, experiments=experiment, status="early_stop", llc_preset="paper_code", p=53, hidden=1024,
                lr=1e-4, weight_decay=1e-5, batch_size=128, memorisation_step=100, grok_step_50=500,
                grok_step_95=700, saturation_step=800, gsm=0.5, final_keff_llc=100.0,
                regime="subabundant")  # fmt: skip
    return base | values


def series(steps, llc, mcse=1.0, v_reach=1.0):
    """An LLC series whose estimator reaches V's coefficient (v_reach 1): the reach rule lets it decide."""
    return pd.DataFrame({"step": steps, "llc": llc, "mcse": mcse, "converged": True, "local": True,
                         "v_reach": v_reach})  # fmt: skip


def linear_evidence(noise: float, curve: float = 0.0) -> Evidence:
    rng = np.random.default_rng(0)
    rows, llc = [], {}
    for p in (53, 59, 61, 67, 71):
        run = f"p{p}"
        rows.append(summary_row(run, "vary_p", p=p))
        value = 10 * p + curve * (p - 60) ** 2 + noise * rng.standard_normal()
        llc[run] = series([100, 200], [value / 2, value])
    return Evidence(pd.DataFrame(rows), {}, llc, None)

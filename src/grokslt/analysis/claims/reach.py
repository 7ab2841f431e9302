"""The quadratic null and the reach rule (`shared/CLAIMS.md`): what each verdict is about.

The quadratic null: every claim is asked twice of one preset's estimates, of the sampler's estimates (estimator
`llc`) and of lambda_Q, the Laplace approximation's estimand at the same (nbeta, gamma) beside each of them
(estimator `lambda_Q`; `grokslt.estimation.laplace`). lambda_Q has no chains: it is local and converged by
construction. Where the two give the same verdict, the claim is about curvature (at the local preset lambda_Q is
tr(H) / 2), and the estimate's row says so.

The reach rule: a value or scaling claim (`Claim.value`) is decided by an estimator only where its estimand reaches
a coefficient known exactly on the same model, V's p rank / 2 with W held at w* (`v_reach`, the V-only estimand
over it at the same settings): at least REACH_MIN at every final the row reads. Otherwise the row is inconclusive,
its statistic, its own verdict and the reached share kept in the note.
"""

from __future__ import annotations

import math

import pandas as pd

from grokslt.analysis.claims.evidence import INCONCLUSIVE, Evidence, ReadRecord, final_estimates

REACH_MIN = 0.9
ESTIMATORS = ("llc", "lambda_Q")


def as_estimator(evidence: Evidence, estimator: str) -> Evidence:
    """The evidence with each series' llc replaced by lambda_Q (and its standard error as the MCSE) for
    `lambda_Q`; as it is for `llc`."""
    if estimator == "llc":
        return evidence
    import dataclasses

    swapped = {run: laplace_series(series) for run, series in evidence.llc.items()}
    return dataclasses.replace(evidence, llc=ReadRecord(swapped))


def laplace_series(series: pd.DataFrame) -> pd.DataFrame:
    laplace = series.assign(llc=series["lambda_q"], mcse=series["lambda_q_stderr"], local=True, converged=True)
    return laplace[laplace["llc"].notna()].reset_index(drop=True)


def has_laplace(evidence: Evidence) -> bool:
    return any(series["lambda_q"].notna().any() for series in dict.values(evidence.llc))


def reached(evidence: Evidence, row: dict, runs) -> dict:
    """A value or scaling claim's row by the reach rule, on the finals of `runs` (the row's or the claim's)."""
    runs = list(runs)
    if not runs or row["verdict"] == INCONCLUSIVE:
        return row
    reach = final_estimates(evidence, runs)["v_reach"]
    if reach.isna().any():
        why = "the reach of V's known coefficient was not measured at these settings (no v_reach)"
    elif reach.min() >= REACH_MIN:
        return row | {"note": f"the estimand reaches {reach.min():.0%} or more of V's coefficient; {row['note']}"}
    else:
        why = (f"the estimand reaches only {reach.median():.2%} of V's known coefficient p rank / 2 (median over "
               f"{len(reach)} finals; least {reach.min():.2%}), below the {REACH_MIN:.0%} a value or scaling claim "
               "needs (CLAIMS.md's reach rule)")  # fmt: skip
    note = f"{why} (the statistic's own verdict: {row['verdict']}); {row['note']}"
    return row | {"verdict": INCONCLUSIVE, "note": note.strip("; ")}


def about_curvature(estimate_rows: list[dict], laplace_rows: list[dict]) -> list[dict]:
    """The estimate's rows, each saying whether lambda_Q's row with the same statistic has the same verdict."""
    laplace = {r["statistic"]: r for r in laplace_rows}
    out = []
    for r in estimate_rows:
        twin = laplace.get(r["statistic"])
        if twin is None or math.isnan(float(twin["value"])):
            out.append(r)
            continue
        same = twin["verdict"] == r["verdict"]
        said = ("lambda_Q at the same settings gives the same verdict: the claim is about curvature, not the "
                "singular part" if same else f"lambda_Q at the same settings: {twin['verdict']}")  # fmt: skip
        out.append(r | {"note": f"{said} (statistic {float(twin['value']):.4g}); {r['note']}".strip("; ")})
    return out

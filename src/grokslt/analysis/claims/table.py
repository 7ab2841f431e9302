"""claims.csv: every claim of the registry, for every preset, from the workflow's tables."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from grokslt.analysis.claims import CLAIMS, Claim
from grokslt.analysis.claims.data_rank import ESTIMATOR, data_rank_rows
from grokslt.analysis.claims.evidence import COLUMNS, Evidence, ReadRecord, models
from grokslt.analysis.claims.reach import about_curvature, as_estimator, has_laplace, reached
from grokslt.analysis.claims.trust import decided
from grokslt.analysis.llc_series import llc_series
from grokslt.artefacts import COEFFICIENT_TABLE, LLC_TABLE, LOSS_DATA, read_table
from grokslt.io import write_csv


def evaluate(summary: pd.DataFrame, loss: Mapping[str, pd.DataFrame], llc_by_preset: Mapping[str, Mapping],
             sensitivity: pd.DataFrame | None, waic: Mapping | None = None, traced: Mapping | None = None,
             coefficient: Mapping[str, pd.DataFrame] | None = None) -> list[dict]:  # fmt: skip
    """Every claim of CLAIMS: those asked per preset for every preset, for the quadratic network and, the family
    claims, for every other model family too (`model` column), with r / 2's rows once, beside the runs' own
    estimates (`coefficient`: {run: runs/RUN/coefficient.csv}); then those asked once, of their own estimates."""
    rows = []
    others = sorted(set(models(summary)) - {"quadratic"})
    for preset, llc in llc_by_preset.items():
        tests = [("quadratic", claim) for claim in CLAIMS.values() if claim.per_preset]
        tests += [(model, claim) for model in others for claim in CLAIMS.values() if claim.families]
        for model, claim in tests:
            series = ReadRecord({run: llc_series(table) for run, table in llc.items()})
            evidence = Evidence(summary, loss, series, sensitivity, model)
            rows.extend(r | {"model": model} for r in per_estimator(claim, evidence, preset))
            if coefficient and claim.data_rank and model == "quadratic" and preset == "paper_code":
                truth = data_rank_rows(claim, evidence, coefficient, asked)
                rows.extend(r | {"model": model, "estimator": ESTIMATOR} for r in truth)
    for claim in CLAIMS.values():
        if not claim.per_preset:
            series = ReadRecord({run: llc_series(table) for run, table in (traced or {}).items()})
            evidence = Evidence(summary, loss, series, sensitivity, waic=waic, traced=traced)
            rows.extend(r | {"estimator": "llc"} for r in asked(claim, evidence, ""))
    return rows


def per_estimator(claim: Claim, evidence: Evidence, preset: str) -> list[dict]:
    """The claim's rows for the estimates and, where the tables have it, for lambda_Q beside them (`reach`)."""
    estimate = asked(claim, evidence, preset)
    if not has_laplace(evidence):
        return [r | {"estimator": "llc"} for r in estimate]
    laplace = asked(claim, as_estimator(evidence, "lambda_Q"), preset)
    return [r | {"estimator": "llc"} for r in about_curvature(estimate, laplace)] + [
        r | {"estimator": "lambda_Q"} for r in laplace
    ]


def asked(claim: Claim, evidence: Evidence, preset: str, reach: bool = True) -> list[dict]:
    """The claim's rows on `evidence`, decided by the trust rule and, for a value or scaling claim, the reach rule
    on the finals each row read (all the claim read where a row names none) unless the estimand is the coefficient
    itself (`reach` false: r / 2)."""

    def test(evidence: Evidence) -> list[dict]:
        return claim.function()(evidence, preset)

    rows = test(evidence)
    reads = [r.get("reads") or tuple(sorted(evidence.llc.read)) for r in rows]
    rows = decided(evidence, rows, test if claim.recomputed else None, preset)
    if reach and claim.value and len(rows) == len(reads):
        rows = [reached(evidence, r, runs) for r, runs in zip(rows, reads, strict=True)]
    return rows


SMOKE_TEST = "smoke test: a configuration shrunk to test the pipeline, no evidence for or against the paper"


def write_claims(summary_csv, loss_csvs, certified_csvs, sensitivity_csv, out, smoke_test: bool = False,
                 waic_csvs=(), traced_csvs=(), coefficient_csvs=()) -> list[dict]:  # fmt: skip
    """claims.csv; `waic_csvs` (runs/RUN/waic.csv) with the estimates behind them (`traced_csvs`,
    runs/RUN/refined/traced.csv) add the WAIC claim, `coefficient_csvs` (runs/RUN/coefficient.csv) r / 2's rows."""
    summary = pd.read_csv(summary_csv)
    loss = {Path(path).parent.name: read_table(path, LOSS_DATA) for path in loss_csvs}
    loss = {run: table[~table["diverged"]] for run, table in loss.items()}
    presets = {"paper_code": loss}
    certified = {Path(path).parent.name: read_table(path, LLC_TABLE) for path in certified_csvs or []}
    if certified:  # empty tables where the calibration chose no settings
        presets["certified"] = {run: table for run, table in certified.items() if len(table)}
    sensitivity = pd.read_csv(sensitivity_csv) if sensitivity_csv else None
    waic = {Path(path).parent.name: pd.read_csv(path) for path in waic_csvs} if waic_csvs else None
    traced = {Path(path).parent.parent.name: read_table(path, LLC_TABLE) for path in traced_csvs} if waic_csvs else None
    coefficient = {Path(path).parent.name: read_table(path, COEFFICIENT_TABLE) for path in coefficient_csvs or []}
    rows = evaluate(summary, loss, presets, sensitivity, waic, traced, coefficient)
    if certified and not presets["certified"]:
        why = "the calibration chose no settings (calibration.json says why): no certified estimates"
        rows = [r | {"note": f"{why}; {r['note']}"} if r["preset"] == "certified" else r for r in rows]
    if smoke_test:
        rows = [r | {"note": f"{SMOKE_TEST}; {r['note']}"} for r in rows]
    write_csv(out, rows, COLUMNS)
    return rows

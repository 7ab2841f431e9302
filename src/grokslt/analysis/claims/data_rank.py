"""The data-rank truth as an estimator of its own (`estimator` r/2, `shared/CLAIMS.md`'s reach rule).

Where a checkpoint interpolates the training set and the rank r of its centred data Jacobian is numerically
defined, the learning coefficient is r / 2 with no sampler (`grokslt.analysis.coefficient`, runs/RUN/coefficient.csv,
`half_rank`). A claim is asked of it where every checkpoint the claim reads has it: each run's final checkpoint for a
value or scaling claim, each run's tabled checkpoints for a claim in time. It is the coefficient itself, so the reach
rule is met by construction. Where the rule does not apply at some of them (the checkpoint does not interpolate, the
rank is not numerically defined, the run has no table or none at its final step) the row is inconclusive and says
why instead of giving a number. Claims whose runs have no coefficient table at all get no r/2 row.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping

import pandas as pd

from grokslt.analysis.claims.evidence import INCONCLUSIVE, Evidence, ReadRecord, row

ESTIMATOR, PRESET = "r/2", "sampler-free"
STATISTIC = "r / 2, the learning coefficient where the data-rank rule applies"
EXACT = ("r / 2 is the learning coefficient itself where the rule applies (interpolating, rank in a spectral gap): "
         "the reach rule is met by construction")  # fmt: skip


def coefficient_series(table: pd.DataFrame) -> pd.DataFrame:
    """A coefficient table as an LLC series: llc = r / 2 with its standard error, trusted (no chains)."""
    stderr = table.get("half_rank_stderr", math.nan)
    return pd.DataFrame({"step": table["step"], "llc": table["half_rank"], "mcse": stderr, "converged": True,
                         "local": True, "lambda_q": math.nan, "lambda_q_stderr": math.nan, "v_reach": 1.0}
                        ).reset_index(drop=True)  # fmt: skip


def rank_reason(checkpoint: pd.Series) -> str:
    """Why the data-rank rule gives no r / 2 at a coefficient table's checkpoint ('' where it gives one)."""
    if pd.notna(checkpoint["half_rank"]):
        return ""
    if not checkpoint["interpolating"]:
        return "not interpolating"
    return "rank not numerically defined (the threshold is not in a spectral gap)"


def needed(value_claim: bool, table: pd.DataFrame, final_step: int) -> pd.DataFrame:
    """The tabled checkpoints of one run that a claim reads: its final one for a value claim, else every one."""
    return table[table["step"] == final_step] if value_claim else table


def data_rank_rows(claim, evidence: Evidence, coefficient: Mapping[str, pd.DataFrame],
                   ask: Callable[..., list[dict]]) -> list[dict]:  # fmt: skip
    """The claim's rows of r / 2 over the runs it read of `evidence` (already asked of the estimates); `ask` is
    `table.asked`."""
    runs = sorted(evidence.llc.read)
    if not any(run in coefficient for run in runs):
        return []
    reasons: Counter = Counter()
    fractions, series, total = [], {}, 0
    for run in runs:
        final = int(evidence.llc[run]["step"].iloc[-1])
        checkpoints = needed(claim.value, coefficient[run], final) if run in coefficient else None
        if checkpoints is None or checkpoints.empty:
            missing = "no coefficient table" if checkpoints is None else f"no coefficient at the final step ({final})"
            reasons[missing] += 1
            total += 1
            continue
        for _, checkpoint in checkpoints.iterrows():
            reason = rank_reason(checkpoint)
            if reason:
                reasons[reason] += 1
            if reason == "not interpolating":
                fractions.append(float(checkpoint["loss_fraction"]))
        total += len(checkpoints)
        series[run] = coefficient_series(checkpoints)
    if reasons:
        note = not_applying(claim.value, reasons, fractions, total)
        return [row(claim.name, PRESET, STATISTIC, math.nan, math.nan, INCONCLUSIVE, len(runs), note)]
    rows = ask(claim, dataclasses.replace(evidence, llc=ReadRecord(series)), PRESET, reach=False)
    return [r | {"preset": PRESET, "note": f"{EXACT}; {r['note']}".strip("; ")} for r in rows]


def not_applying(value_claim: bool, reasons: Counter, fractions: list[float], total: int) -> str:
    where = "final checkpoints" if value_claim else "tabled checkpoints"
    said = []
    for reason, count in reasons.items():
        if reason == "not interpolating":
            reason += f" (L_n / L_n(0) {min(fractions):.2g}-{max(fractions):.2g}, the table's `interpolating` false)"
        said.append(f"{count} {reason}")
    return (f"of the {total} {where} the claim reads, the data-rank rule gives no r / 2 at {'; '.join(said)}: no "
            "number is given")  # fmt: skip

"""The trust rule: which claims' rows stand when some estimates they read are not trusted.

Only local, honestly converged estimates decide (`trusted`: `grokslt.estimation.locality`,
`grokslt.estimation.diagnostics`): an untrusted estimate is reported, never counted for or against a claim.
Which estimates a claim read is recorded as it reads them (`Evidence.llc`, by run; a claim that fits the grid
of the sampler sensitivity, `Claim.reads_sensitivity`, reads its cells). When all are
trusted the claim stands as computed. When some are not, a claim on trajectories is computed again without
them and reports that, provided (a) they are at most UNTRUSTED_SHARE of what it read, (b) every run it read
keeps a trusted estimate, and (c) it tests the same things with the same verdicts with them in: setting aside
more, or estimates that would change the answer, is a selection the data cannot justify. A claim that fits
points cannot lose one (its fit would change design); where it fits several lines (Figure 1a's widths, 1b's
primes), each row names the runs it fitted (`reads`) and is decided on those points alone, so an untrusted point
voids the line it lies on, not the others. K_eff's median ratio weighs its untrusted finals itself: its verdict
stands when it is the same at any values of theirs. Otherwise the verdict is `inconclusive`. The note says
how many were not local and how many not converged either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pandas as pd

from grokslt.analysis.claims import CLAIMS
from grokslt.analysis.claims.evidence import INCONCLUSIVE, Evidence, ReadRecord, final_estimates
from grokslt.analysis.llc_series import is_trusted

UNTRUSTED_SHARE = 0.05  # the most of a trajectory claim's estimates that may be set aside (module docstring)


def reads_sensitivity(claim: str) -> bool:
    return claim in CLAIMS and CLAIMS[claim].reads_sensitivity


def read_estimates(evidence: Evidence, claim: str, preset: str) -> pd.DataFrame:
    """The LLC estimates the claim read: each run's series, and the sensitivity grid where the claim reads it."""
    series = [evidence.llc[run] for run in sorted(evidence.llc.read)]
    grid = evidence.sensitivity
    if reads_sensitivity(claim) and preset == "paper_code" and grid is not None and not grid.empty:
        series.append(grid)
    if not series:
        return pd.DataFrame(columns=["local", "converged"])
    return pd.concat(series).astype({"local": bool, "converged": bool})


def untrusted(table: pd.DataFrame) -> str:
    """How many of the estimates read are not trusted ('' when all are local and converged)."""
    not_local, not_converged = int((~table["local"]).sum()), int((~table["converged"]).sum())
    if not (not_local or not_converged):
        return ""
    return (f"only local, honestly converged estimates decide: of the {len(table)} estimates it read, "
            f"{not_local} not local, {not_converged} not converged")  # fmt: skip


def without_untrusted(evidence: Evidence) -> Evidence:
    """The same evidence with every untrusted estimate set aside."""
    trusted = {run: table[is_trusted(table)].reset_index(drop=True) for run, table in evidence.llc.items()}
    return dataclasses.replace(evidence, llc=ReadRecord(trusted))


def set_aside_blocker(evidence: Evidence, claim: str, read: pd.DataFrame) -> str:
    """Why the untrusted estimates the claim read cannot simply be set aside ('' when they can)."""
    if reads_sensitivity(claim):
        return "each is a point of the claim's fit, which cannot lose one"
    share = float((~is_trusted(read)).mean())
    if share > UNTRUSTED_SHARE:
        return f"{share:.0%} of them untrusted, more than the {UNTRUSTED_SHARE:.0%} that may be set aside"
    emptied = [run for run in sorted(evidence.llc.read) if not is_trusted(evidence.llc[run]).any()]
    if emptied:
        return f"runs with no trusted estimate: {len(emptied)} ({emptied[0]}{', ...' if len(emptied) > 1 else ''})"
    return ""


def decided(evidence: Evidence, rows: list[dict], test: Callable[[Evidence], list[dict]] | None = None,
            preset: str = "") -> list[dict]:  # fmt: skip
    """The claim's rows by the module's rule; `test` computes them from other evidence (without it, any
    untrusted estimate makes the rows inconclusive). Rows that name the runs whose points they need trusted
    (`reads`; none where the row weighed its untrusted points itself) are decided on those points alone."""
    if rows and all("reads" in r for r in rows):
        return [decided_on_points(evidence, r) for r in rows]
    claim = rows[0]["claim"] if rows else ""
    read = read_estimates(evidence, claim, preset)
    reason = untrusted(read)
    if not reason:
        return rows
    blocker = set_aside_blocker(evidence, claim, read) if test else "the claim is not recomputed without them"
    if not blocker:
        kept = test(without_untrusted(evidence))
        if [(r["statistic"], r["verdict"]) for r in kept] == [(r["statistic"], r["verdict"]) for r in rows]:
            return [r | {"note": f"{reason}, set aside: computed without them (the same verdict with them in); "
                         f"{r['note']}".strip("; ")} for r in kept]  # fmt: skip
        verdicts = ", ".join(sorted({r["verdict"] for r in kept})) or "nothing to test"
        blocker = f"setting them aside changes the verdict (without them: {verdicts})"
    return [undecided(r, reason, blocker) for r in rows]


def decided_on_points(evidence: Evidence, fit: dict) -> dict:
    """One row of a claim that fits one point per run, on the final estimates of the runs it names (`reads`,
    dropped)."""
    fit = dict(fit)
    runs = fit.pop("reads")
    reason = untrusted(final_estimates(evidence, runs)) if runs else ""
    return undecided(fit, reason, "each is a point this row's statistic cannot lose") if reason else fit


def undecided(r: dict, reason: str, blocker: str) -> dict:
    note = f"{reason}; {blocker} (the statistic's own verdict: {r['verdict']}); {r['note']}"
    return r | {"verdict": INCONCLUSIVE, "note": note.strip("; ")}

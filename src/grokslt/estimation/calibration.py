"""Choosing sampler settings by a documented rule, from a grid of estimates at one checkpoint.

Every point of the grid step size x nbeta x localization is estimated with its diagnostics. A point
qualifies when
1. no chain diverged and the estimate passed the convergence diagnostics (`grokslt.estimation.diagnostics`), and
2. it is stable under halving the step size: the next smaller step size of the grid at the same nbeta
   and localization (at most STEP_RATIO_MAX times smaller) also converged, and the two estimates differ
   by at most max(STABLE_MCSE x their combined MCSE, STABLE_RELATIVE x the smaller step's estimate).
Among the points that qualify the rule takes the smallest localization (the estimand nearest the
unlocalized LLC), then the nbeta nearest n / ln n (the WBIC inverse temperature of n samples), then the
largest step size (the fastest mixing). When none qualifies it says so, lists the closest candidates
(fewest failed criteria) and fails: it never picks silently.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from grokslt.errors import BadInput, ComputationFailed
from grokslt.estimation.checkpoint_llc import estimate_checkpoints, settings_columns
from grokslt.estimation.llc import result_columns
from grokslt.estimation.samplers import SamplerSettings
from grokslt.io import write_csv, write_text
from grokslt.training.runs import load_run, parse_steps, select_steps

STEP_RATIO_MAX = 2.5
STABLE_MCSE = 2.0
STABLE_RELATIVE = 0.05
RULE = __doc__.split("\n\n", 1)[1].strip()


def grid_settings(base: SamplerSettings, step_sizes, nbetas, localizations) -> list[SamplerSettings]:
    for name, values in {"step_sizes": step_sizes, "nbetas": nbetas, "localizations": localizations}.items():
        if not values:
            raise BadInput(f"--{name.replace('_', '-')}: empty grid; give at least one value")
    return [
        base.replace(step_size=float(e), nbeta=float(b), localization=float(g))
        for g in sorted(localizations)
        for b in sorted(nbetas)
        for e in sorted(step_sizes)
    ]


def failed_criteria(row: dict, rows: list[dict]) -> list[str]:
    """Why a grid point does not qualify (empty: it does)."""
    reasons = []
    if row["n_diverged"]:
        reasons.append(f"{row['n_diverged']} chains diverged")
    if not row["converged"]:
        reasons.append(f"not converged (R-hat {row['r_hat']:.3f}, ESS {row['ess_bulk']:.0f}/{row['ess_tail']:.0f}, "
                       f"drift {row['llc_drift']:.3g})")  # fmt: skip
    same = [r for r in rows if (r["nbeta"], r["localization"]) == (row["nbeta"], row["localization"])]
    smaller = [r for r in same if r["step_size"] < row["step_size"]]
    if not smaller:
        return [*reasons, "no smaller step size in the grid to check stability against"]
    half = max(smaller, key=lambda r: r["step_size"])
    if row["step_size"] / half["step_size"] > STEP_RATIO_MAX:
        return [*reasons, f"next smaller step {half['step_size']:g} is more than {STEP_RATIO_MAX}x smaller"]
    if not half["converged"]:
        reasons.append(f"the halved step {half['step_size']:g} did not converge")
    gap = abs(row["llc_mean"] - half["llc_mean"])
    allowed = max(STABLE_MCSE * math.hypot(row["mcse"], half["mcse"]), STABLE_RELATIVE * abs(half["llc_mean"]))
    if not gap <= allowed:
        reasons.append(f"moves by {gap:.3g} when the step is halved (allowed {allowed:.3g})")
    return reasons


def choose(rows: list[dict], n: int) -> tuple[dict | None, dict[int, list[str]]]:
    """(the chosen row or None, {row index: failed criteria})."""
    failures = {i: failed_criteria(row, rows) for i, row in enumerate(rows)}
    qualifying = [rows[i] for i, reasons in failures.items() if not reasons]
    if not qualifying:
        return None, failures
    wbic = n / math.log(n)
    best = min(qualifying, key=lambda r: (r["localization"], abs(math.log(r["nbeta"] / wbic)), -r["step_size"]))
    return best, failures


def calibrate(run_dir, out_dir, step: str, base: SamplerSettings, step_sizes, nbetas, localizations, seed: int = 0,
              backend: str = "native", preset: str = "custom", report_only: bool = False) -> dict:  # fmt: skip
    """Estimate the grid at one checkpoint, write calibration.csv and calibration.json, and return the
    report; when no point qualifies, fail after writing both (unless `report_only`: a report with no choice)."""
    grid = grid_settings(base, step_sizes, nbetas, localizations)
    run = load_run(run_dir)
    available = list(run.checkpoints)
    if not available:
        raise BadInput(f"--run {run_dir}: no checkpoints to calibrate at")
    chosen_step = available[-1] if step == "final" else select_steps(available, parse_steps(step))[0]
    params = run.load(chosen_step)
    batch = run.config.batch_size
    rows = []
    for settings in grid:
        fixed = settings_columns(settings, preset, backend, batch, seed)
        try:
            [(result, wall)] = estimate_checkpoints(run.data, [(chosen_step, params)], settings, batch, seed, backend)
        except ComputationFailed:  # every chain diverged: a grid point that fails, not a failed calibration
            stats = dict.fromkeys(result_columns(settings), math.nan) | {"n_diverged": settings.num_chains}
            rows.append({"step": chosen_step, **stats, "converged": False, **fixed, "seconds": math.nan})
            continue
        rows.append({"step": chosen_step, **result.summary(), **fixed, "seconds": wall})
    best, failures = choose(rows, run.data.n_train)
    for i, row in enumerate(rows):
        row["qualifies"] = not failures[i]
        row["chosen"] = row is best
        row["why_not"] = "; ".join(failures[i])
    out = Path(out_dir)
    columns = ["step", *dict.fromkeys([*result_columns(base), *settings_columns(base, preset, backend, batch, seed)])]
    write_csv(out / "calibration.csv", rows, [*columns, "seconds", "qualifies", "chosen", "why_not"])
    closest = sorted(range(len(rows)), key=lambda i: len(failures[i]))[:3]
    names = [f"(step {rows[i]['step_size']:g}, nbeta {rows[i]['nbeta']:g}, gamma {rows[i]['localization']:g}: "
             f"{rows[i]['why_not']})" for i in closest]  # fmt: skip
    verdict = "chosen by the rule" if best is not None else f"no grid point qualifies; closest: {'; '.join(names)}"
    report = {
        "run": str(run_dir),
        "verdict": verdict,
        "step": chosen_step,
        "rule": RULE,
        "chosen": None if best is None else dataclasses.asdict(grid[rows.index(best)]),
        "estimate": None if best is None else {k: best[k] for k in ("llc_mean", "mcse", "r_hat", "ess_bulk")},
        "rejected": {
            f"step {r['step_size']:g}, nbeta {r['nbeta']:g}, gamma {r['localization']:g}": r["why_not"]
            for r in rows
            if r["why_not"]
        },  # fmt: skip
    }
    write_text(out / "calibration.json", json.dumps(report, indent=2) + "\n")
    if best is None and not report_only:
        raise ComputationFailed(verdict)
    return report


def calibrated_settings(path) -> SamplerSettings:
    """The settings a calibration chose (its calibration.json)."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"--calibration {path}: no such file; run `grokslt calibrate` first")
    chosen = json.loads(path.read_text()).get("chosen")
    if chosen is None:
        raise BadInput(f"--calibration {path}: the calibration chose no settings (see its `rejected`)")
    return SamplerSettings(**chosen)

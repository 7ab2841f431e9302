"""Choosing sampler settings by a documented rule, from a grid of estimates at several checkpoints.

Every point of the grid step size x nbeta x localization is estimated, with its honest diagnostics and its
locality, at each calibrated checkpoint (by default the run's transitions: memorisation, val 50%, val 95%
and the last checkpoint; the LLC peak is given with --step). At one checkpoint a point passes when
1. no chain diverged, the estimate is honestly converged (full-batch diagnostics,
   `grokslt.estimation.diagnostics`) and it is local (`grokslt.estimation.locality`), and
2. it is stable in the step size: the next smaller step of the grid at the same nbeta and localization,
   between STEP_RATIO_MIN (1.8) and STEP_RATIO_MAX (2.5) times smaller, also passes 1, and either the two
   estimates differ by at most STABLE_Z (2) times their combined MCSE (a tolerance from their errors), or
   their difference is the step's first-order bias: the step below that one (again 1.8-2.5 times smaller)
   also passes 1, and the extrapolations to step 0 from the two pairs of steps agree within STABLE_Z times
   their combined error. (An SGLD step's bias of a few percent exceeds the MCSE of long local chains; where
   it is first-order in the step, the extrapolated value is what the point measures, with the bias as its
   systematic error.)
A point qualifies when it passes at every calibrated checkpoint. Each passing point carries the
step-extrapolated value (r lambda(eps / r) - lambda(eps)) / (r - 1), first-order in the step, and
|lambda(eps) - extrapolated| as its systematic error. Among the points that qualify the rule takes the
smallest localization (the estimand nearest the unlocalized LLC), then the nbeta nearest n / ln n (the WBIC
inverse temperature of n samples), then the smaller step size (the smaller discretisation bias). When none
qualifies it says so, names the cheapest local point it found (and its cost), lists the closest candidates
(fewest failed criteria) and fails: it never picks silently.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from grokslt.artefacts import seal, unsealed
from grokslt.errors import BadInput, ComputationFailed
from grokslt.estimation.checkpoint_llc import estimate_checkpoints, settings_columns
from grokslt.estimation.llc import result_columns
from grokslt.estimation.samplers import SamplerSettings
from grokslt.io import write_csv, write_text
from grokslt.training.runs import decisive_steps, load_run, parse_steps, select_steps

STEP_RATIO_MIN, STEP_RATIO_MAX = 1.8, 2.5
STABLE_Z = 2.0
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


def own_failures(row: dict) -> list[str]:
    """Why one estimate is not trusted on its own (empty: it is)."""
    reasons = []
    if row["n_diverged"]:
        reasons.append(f"{row['n_diverged']} chains diverged")
    if not row["converged"]:
        reasons.append(f"not converged (R-hat {row['r_hat']:.3f}, ESS {row['ess_bulk']:.0f}/{row['ess_tail']:.0f})")
    if row.get("descends", False):
        reasons.append(f"not local: the chains descend below L_n(w*) (loss excess {row['loss_excess_fraction']:.3g} "
                       "of the zero function's)")  # fmt: skip
    elif not row.get("local", True):
        reasons.append(f"not local (loss excess {row['loss_excess_fraction']:.3g} of the zero function's)")
    return reasons


def smaller_step(row: dict, rows: list[dict]) -> dict | None:
    """The grid's next smaller step at the same checkpoint, nbeta and localization."""
    same = [r for r in rows if (r["step"], r["nbeta"], r["localization"]) == (row["step"], row["nbeta"],
                                                                             row["localization"])]  # fmt: skip
    smaller = [r for r in same if r["step_size"] < row["step_size"]]
    return max(smaller, key=lambda r: r["step_size"]) if smaller else None


def failed_criteria(row: dict, rows: list[dict]) -> list[str]:
    """Why a grid point does not pass at its checkpoint (empty: it does); a passing row gains the
    step-extrapolated value and its systematic error."""
    reasons = own_failures(row)
    half = smaller_step(row, rows)
    if half is None:
        return [*reasons, "no smaller step size in the grid to check stability against"]
    ratio = row["step_size"] / half["step_size"]
    if not STEP_RATIO_MIN <= ratio <= STEP_RATIO_MAX:
        return [*reasons, f"next smaller step {half['step_size']:g} is {ratio:.3g}x smaller, not "
                          f"{STEP_RATIO_MIN}-{STEP_RATIO_MAX}x"]  # fmt: skip
    if own_failures(half):
        reasons.append(f"the smaller step {half['step_size']:g} fails: {'; '.join(own_failures(half))}")
    gap = abs(row["llc_mean"] - half["llc_mean"])
    allowed = STABLE_Z * math.hypot(row["mcse"], half["mcse"])
    if not reasons and gap > allowed:
        nonlinear = bias_not_first_order(row, half, rows)
        if nonlinear:
            reasons.append(f"moves by {gap:.3g} with the step (allowed {allowed:.3g}: {STABLE_Z:g} combined MCSE), "
                           f"{nonlinear}")  # fmt: skip
    if not reasons:
        row["extrapolated"], _ = extrapolation(row, half)
        row["systematic"] = abs(row["llc_mean"] - row["extrapolated"])
    return reasons


def extrapolation(row: dict, half: dict) -> tuple[float, float]:
    """(value, standard error) at step 0 from two steps, assuming a bias linear in the step."""
    ratio = row["step_size"] / half["step_size"]
    value = (ratio * half["llc_mean"] - row["llc_mean"]) / (ratio - 1)
    return value, math.hypot(ratio * half["mcse"], row["mcse"]) / (ratio - 1)


def extrapolations_gap_error(row: dict, half: dict, quarter: dict) -> float:
    """The standard error of extrapolation(row, half) - extrapolation(half, quarter): the middle step's estimate
    enters both, with coefficients r1 / (r1 - 1) and -1 / (r2 - 1)."""
    r1, r2 = row["step_size"] / half["step_size"], half["step_size"] / quarter["step_size"]
    terms = (row["mcse"] / (r1 - 1), half["mcse"] * (r1 / (r1 - 1) + 1 / (r2 - 1)), quarter["mcse"] * r2 / (r2 - 1))
    return math.sqrt(sum(term**2 for term in terms))


def bias_not_first_order(row: dict, half: dict, rows: list[dict]) -> str:
    """Why the move from `half` to `row` cannot be taken for a first-order step bias ('' where it can)."""
    quarter = smaller_step(half, rows)
    if quarter is None or not STEP_RATIO_MIN <= half["step_size"] / quarter["step_size"] <= STEP_RATIO_MAX:
        return "and no third step 1.8-2.5x smaller to check that its bias is first-order"
    if own_failures(quarter):
        return f"and the third step {quarter['step_size']:g} fails: {'; '.join(own_failures(quarter))}"
    (upper, _), (lower, _) = extrapolation(row, half), extrapolation(half, quarter)
    allowed = STABLE_Z * extrapolations_gap_error(row, half, quarter)
    if abs(upper - lower) <= allowed:
        return ""
    return (f"and its extrapolations to step 0 from the next two step pairs differ by {abs(upper - lower):.3g} "
            f"(allowed {allowed:.3g}): the bias is not first-order in the step")  # fmt: skip


def point_key(row: dict) -> tuple[float, float, float]:
    return row["step_size"], row["nbeta"], row["localization"]


def choose(rows: list[dict], n: int) -> tuple[dict | None, dict[int, list[str]]]:
    """(a row of the chosen point or None, {row index: failed criteria}); a point must pass at every
    checkpoint of the rows."""
    failures = {i: failed_criteria(row, rows) for i, row in enumerate(rows)}
    failing = {point_key(rows[i]) for i, reasons in failures.items() if reasons}
    qualifying = [row for row in rows if point_key(row) not in failing]
    if not qualifying:
        return None, failures
    wbic = n / math.log(n)
    best = min(qualifying, key=lambda r: (r["localization"], abs(math.log(r["nbeta"] / wbic)), r["step_size"]))
    return best, failures


def calibration_steps(run, step: str) -> list[int]:
    """The checkpoints to calibrate at: 'transitions' (memorisation, val 50%, val 95%, the last), 'final',
    or comma-separated steps."""
    available = list(run.checkpoints)
    if not available:
        raise BadInput(f"--run {run.path}: no checkpoints to calibrate at")
    if step == "final":
        return [available[-1]]
    if step == "transitions":
        return sorted(set(decisive_steps(run, llc_peak=False).values()))
    return select_steps(available, parse_steps(step))


def calibrate(run_dir, out_dir, step: str, base: SamplerSettings, step_sizes, nbetas, localizations, seed: int = 0,
              backend: str = "native", preset: str = "custom", report_only: bool = False) -> dict:  # fmt: skip
    """Estimate the grid at the calibrated checkpoints, write calibration.csv and calibration.json, and return
    the report; when no point qualifies, fail after writing both (unless `report_only`: a report with no choice)."""
    grid = grid_settings(base, step_sizes, nbetas, localizations)
    run = load_run(run_dir)
    steps = calibration_steps(run, step)
    checkpoints = [(s, run.load(s)) for s in steps]
    batch = run.batch_size
    rows = []
    for settings in grid:
        fixed = settings_columns(settings, preset, backend, batch, seed)
        try:
            estimates = estimate_checkpoints(run.data, checkpoints, settings, batch, seed, backend, network=run.network)
        except ComputationFailed:  # every chain diverged: a grid point that fails, not a failed calibration
            stats = dict.fromkeys(result_columns(settings), math.nan) | {"n_diverged": settings.num_chains}
            rows += [{"step": s, **stats, "converged": False, "local": False, **fixed, "seconds": math.nan}
                     for s in steps]  # fmt: skip
            continue
        rows += [{"step": s, **result.summary(), **fixed, "seconds": wall}
                 for s, (result, wall) in zip(steps, estimates, strict=True)]  # fmt: skip
    best, failures = choose(rows, run.data.n_train)
    for i, row in enumerate(rows):
        row["passes"] = not failures[i]
        row["chosen"] = best is not None and point_key(row) == point_key(best)
        row["why_not"] = "; ".join(failures[i])
    out = Path(out_dir)
    columns = ["step", *dict.fromkeys([*result_columns(base), *settings_columns(base, preset, backend, batch, seed)])]
    extra = ["seconds", "passes", "extrapolated", "systematic", "chosen", "why_not"]
    write_csv(out / "calibration.csv", rows, [*columns, *extra])
    report = calibration_report(run_dir, steps, rows, failures, best, grid)
    seal(out / "calibration.json", write_text(out / "calibration.json", json.dumps(report, indent=2) + "\n"),
         "grokslt calibrate")  # fmt: skip
    if best is None and not report_only:
        raise ComputationFailed(report["verdict"])
    return report


def calibration_report(run_dir, steps, rows, failures, best, grid) -> dict:
    """The choice, its estimates at every checkpoint, why every other point failed, and where nothing
    qualifies, the cheapest local point and the closest candidates."""
    failing = {}
    for i, row in enumerate(rows):
        if failures[i]:
            failing.setdefault(point_key(row), []).append(f"step {row['step']}: {row['why_not']}")
    name = "step {:g}, nbeta {:g}, gamma {:g}".format
    local = [r for r in rows if r.get("local") is True and not math.isnan(r["seconds"])]
    cheapest = min(local, key=lambda r: r["seconds"], default=None)
    cheapest_local = None if cheapest is None else {
        "point": name(*point_key(cheapest)), "step": cheapest["step"], "seconds": cheapest["seconds"],
        "llc_mean": cheapest["llc_mean"], "converged": bool(cheapest["converged"]),
    }  # fmt: skip
    if best is not None:
        verdict = "chosen by the rule"
    else:
        closest = sorted(failing.items(), key=lambda item: sum(len(r.split("; ")) for r in item[1]))[:3]
        names = [f"({name(*key)}: {reasons[0]})" for key, reasons in closest]
        where = f"cheapest local point: {cheapest_local['point']}" if cheapest_local else "no grid point was local"
        verdict = f"no grid point qualifies; {where}; closest: {'; '.join(names)}"
    chosen_rows = [r for r in rows if best is not None and point_key(r) == point_key(best)]
    settings_of = {(s.step_size, s.nbeta, s.localization): s for s in grid}
    return {
        "run": str(run_dir),
        "verdict": verdict,
        "steps": steps,
        "rule": RULE,
        "chosen": None if best is None else dataclasses.asdict(settings_of[point_key(best)]),
        "estimates": [{k: r.get(k) for k in ("step", "llc_mean", "mcse", "extrapolated", "systematic", "r_hat",
                                              "ess_bulk", "loss_excess_fraction")} for r in chosen_rows],
        "cheapest_local": cheapest_local,
        "rejected": {name(*key): "; ".join(reasons) for key, reasons in failing.items()},
    }  # fmt: skip


def read_calibration(path) -> dict:
    """A calibration's report (calibration.json), as `grokslt calibrate` sealed it."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"--calibration {path}: no such file; run `grokslt calibrate` first")
    return json.loads(unsealed(path)[0])


def calibrated_settings(path) -> SamplerSettings:
    """The settings a calibration chose (its calibration.json)."""
    chosen = read_calibration(path).get("chosen")
    if chosen is None:
        raise BadInput(f"--calibration {path}: the calibration chose no settings (see its `rejected`)")
    return SamplerSettings(**chosen)

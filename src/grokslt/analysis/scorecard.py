"""How close each run is to the authors' log of the same settings (`grokslt.analysis.reference`).

For each of our runs with a matching authors' run, both read at the authors' evaluation schedule: the
steps at which it memorises, reaches 50% and 95% validation accuracy and stops; the LLC at those steps
and at its peak (only where the sampler settings match too, since LLCs of different settings are not
comparable); and the GSM: ours, theirs, the deviation and the relative deviation. A run without a match
gets one row that says so. The last rows give, per experiment and metric, the worst relative deviation.
"""

from __future__ import annotations

import math

import pandas as pd

from grokslt.analysis.membership import experiment_names
from grokslt.analysis.reference import AuthorsRun, find_match, load_reference
from grokslt.io import write_csv
from grokslt.training.metrics import grokking_severity, transition_steps

COLUMNS = ["experiment", "run", "authors_run", "metric", "ours", "theirs", "deviation", "relative_deviation", "note"]
MARKERS = {"memorisation_step": "memorised", "grok_step_50": "val 50%", "grok_step_95": "val 95%", "final_step": "stop"}


def sampler_comparable(preset: str, run: AuthorsRun) -> bool:
    """Whether an LLC at our preset was estimated as the authors' run was (nbeta is B / ln B in both)."""
    from grokslt.estimation.llc import PRESETS

    if preset not in PRESETS:
        return False
    settings = PRESETS[preset]
    ours = {k: getattr(settings, k) for k in run.sampler}
    return settings.nbeta is None and all(math.isclose(ours[k], run.sampler[k]) for k in run.sampler)


def value_at(table: pd.DataFrame, step, column: str) -> float:
    if step is None or pd.isna(step) or table.empty:
        return math.nan
    return float(table.loc[(table["step"] - step).abs().idxmin(), column])


def their_markers(run: AuthorsRun) -> dict:
    log = run.log
    markers = transition_steps(log["step"], log["train_acc"], log["val_acc"])
    return markers | {"final_step": int(log["step"].iloc[-1])}


def on_their_schedule(ours: pd.DataFrame, match: AuthorsRun) -> pd.DataFrame:
    """Our evaluations at the steps their schedule evaluates (a dense early schedule of ours adds steps
    theirs cannot resolve)."""
    return ours[ours["step"] % match.settings["eval_every"] == 0]


def run_rows(row: pd.Series, ours: pd.DataFrame, match: AuthorsRun) -> list[dict]:
    experiment, theirs = row["experiments"], match.log
    common = {"experiment": experiment, "run": row["run"], "authors_run": match.name}
    markers = their_markers(match)
    ours = on_their_schedule(ours, match)
    row = row.copy()
    row.update(pd.Series(transition_steps(ours["step"], ours["train_acc"], ours["val_acc"])))
    out = []

    def add(metric, mine, other, note=""):
        deviation = mine - other if not (pd.isna(mine) or pd.isna(other)) else math.nan
        relative = deviation / abs(other) if other and not pd.isna(deviation) else math.nan
        out.append(common | dict(metric=metric, ours=mine, theirs=other, deviation=deviation,
                                 relative_deviation=relative, note=note))  # fmt: skip

    for key, label in MARKERS.items():
        add(f"step {label}", row[key], markers[key])
    add(
        "GSM",
        grokking_severity(ours["train_acc"], ours["val_acc"]),
        grokking_severity(theirs["train_acc"], theirs["val_acc"]),
    )
    if sampler_comparable(row["llc_preset"], match):
        add_llc_rows(row, ours, theirs, markers, add)
    else:
        out.append(common | dict(metric="LLC", note=f"not compared: our preset {row['llc_preset']} differs from "
                                 f"the authors' sampler {match.sampler}"))  # fmt: skip
    return out


def add_llc_rows(row: pd.Series, ours: pd.DataFrame, theirs: pd.DataFrame, markers: dict, add) -> None:
    """`add` the LLC at each marker and at the peak, ours against theirs. A thinned trajectory of ours (`llc.every`)
    is compared where it has estimates: a marker it skipped says so, and the peaks are taken over the steps
    both estimated, so that a sparser trajectory is not read as a lower peak."""
    estimated = ours[ours["llc"].notna()]
    thinned = len(estimated) < len(ours)
    estimated_at = set(estimated["step"])
    for key, label in MARKERS.items():
        step = row[key]
        if thinned and not pd.isna(step) and step not in estimated_at:
            add(f"LLC at {label}", math.nan, value_at(theirs, markers[key], "llc"), "not estimated (llc.every)")
            continue
        add(f"LLC at {label}", value_at(estimated, step, "llc"), value_at(theirs, markers[key], "llc"))
    shared = theirs[theirs["step"].isin(estimated["step"])] if thinned else theirs
    note = f"over the {len(shared)} of their {len(theirs)} steps we estimated (llc.every)" if thinned else ""
    add("peak LLC", estimated["llc"].max(), shared["llc"].max(), note)


def scorecard(summary: pd.DataFrame, loss: dict[str, pd.DataFrame], reference_root) -> list[dict]:
    runs = load_reference(reference_root) if reference_root else []
    rows = []
    for _, row in summary.iterrows():
        match = find_match(row, runs) if row["status"] != "diverged" else None
        if match is None:
            why = "no authors' run with these settings" if runs else "no reference data (reference: none)"
            rows.append({"experiment": row["experiments"], "run": row["run"], "note": why})
            continue
        rows += run_rows(row, loss[row["run"]], match)
    return rows + worst_cases(rows)


def worst_cases(rows: list[dict]) -> list[dict]:
    table = pd.DataFrame([r for r in rows if not pd.isna(r.get("relative_deviation", math.nan))])
    if table.empty:
        return []
    # a run of two experiments counts in each one's worst case
    table = table.assign(experiment=table["experiment"].map(experiment_names)).explode("experiment")
    worst = []
    for (experiment, metric), group in table.groupby(["experiment", "metric"]):
        top = group.loc[group["relative_deviation"].abs().idxmax()]
        note = f"of {len(group)} runs; {top['run']}"
        worst.append({"experiment": experiment, "run": "worst", "authors_run": top["authors_run"], "metric": metric,
                      "ours": top["ours"], "theirs": top["theirs"], "deviation": top["deviation"],
                      "relative_deviation": top["relative_deviation"], "note": note})  # fmt: skip
    return worst


def write_scorecard(summary_csv, loss_csvs, reference_root, out) -> list[dict]:
    from pathlib import Path

    from grokslt.artefacts import LOSS_DATA, read_table

    summary = pd.read_csv(summary_csv)
    loss = {Path(path).parent.name: read_table(path, LOSS_DATA) for path in loss_csvs}
    loss = {run: table[~table["diverged"]] for run, table in loss.items()}
    rows = scorecard(summary, loss, reference_root)
    write_csv(out, rows, COLUMNS)
    return rows

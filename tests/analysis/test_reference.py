"""The authors' logs as reference data: checksums, settings, matching our runs, and the scorecard."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pandas as pd
import pytest
from workflow_support import REPO

from grokslt.analysis.reference import DEFAULT_EARLY_STOP, EARLY_STOP, find_match, load_reference
from grokslt.analysis.scorecard import sampler_comparable, scorecard
from grokslt.errors import BadInput
from grokslt.training.metrics import grokking_severity, transition_steps
from grokslt.training.train import TrainConfig

REFERENCE = REPO / "reference"


TRUSTED_PEAK = {"peak_converged": True, "peak_local": True}  # ours drawn filled: the hollow markers are theirs


def summary_of(config: TrainConfig, run: str, experiment: str, log: pd.DataFrame, preset="paper_code") -> dict:
    markers = transition_steps(log["step"], log["train_acc"], log["val_acc"])
    return {"run": run, "experiments": experiment, "status": "early_stop", "llc_preset": preset, "task": "add",
            **{k: getattr(config, k) for k in ("p", "hidden", "train_frac", "optimizer", "lr", "weight_decay",
               "batch_size", "seed", "split", "early_stop", "early_stop_threshold", "early_stop_patience")},
            **markers, "final_step": int(log["step"].iloc[-1]),
            "gsm": grokking_severity(log["train_acc"], log["val_acc"])}  # fmt: skip


def test_the_shipped_reference_loads_with_its_settings():
    runs = {run.name: run for run in load_reference(REFERENCE)}
    baseline = runs["flatness_test"]
    assert baseline.settings["early_stop"] == (0.99, 10) and baseline.sampler["step_size"] == 5e-4
    assert (baseline.settings["p"], baseline.settings["hidden"], baseline.settings["batch_size"]) == (53, 1024, 128)
    assert baseline.log["step"].tolist()[:2] == [100, 200] and baseline.log["step"].iloc[-1] == 15900
    assert baseline.log["llc"].iloc[0] == pytest.approx(4310.5126953125)
    assert len([name for name in runs if name.startswith("sweep_p/")]) == 13


def test_a_changed_reference_file_is_refused(tmp_path):
    copy = shutil.copytree(REFERENCE, tmp_path / "reference")
    target = copy / "authors" / "flatness_test" / "loss_data.csv"
    target.write_text(target.read_text().replace("4310.5126953125", "4311.0"))
    with pytest.raises(BadInput, match="checksum differs"):
        load_reference(copy)


def test_our_baseline_matches_their_flatness_test_and_scores_zero_against_itself():
    runs = load_reference(REFERENCE)
    baseline = next(run for run in runs if run.name == "flatness_test")
    row = summary_of(TrainConfig(), "ours", "baseline", baseline.log)
    assert find_match(pd.Series(row), runs) is baseline
    assert sampler_comparable("paper_code", baseline) and not sampler_comparable("paper_code_lr_wd", baseline)
    other = summary_of(TrainConfig(seed=777), "other", "seeds", baseline.log)
    rows = scorecard(pd.DataFrame([row, other]), {"ours": baseline.log, "other": baseline.log}, REFERENCE)
    scored = [r for r in rows if r["run"] == "ours"]
    assert {r["metric"] for r in scored} >= {"step val 50%", "LLC at stop", "peak LLC", "GSM"}
    assert all(r["deviation"] == 0 for r in scored)
    assert any(r["run"] == "other" and "no authors' run" in r["note"] for r in rows)
    assert any(r["run"] == "worst" for r in rows)


def test_a_run_of_two_experiments_counts_in_each_ones_worst_case():
    """A run trained once for two experiments (its cell `baseline;seeds`) is in each experiment's worst case, not in
    a third group named after the pair."""
    runs = load_reference(REFERENCE)
    baseline = next(run for run in runs if run.name == "flatness_test")
    shifted = baseline.log.assign(llc=baseline.log["llc"] * 1.1)
    row = summary_of(TrainConfig(), "ours", "baseline;seeds", shifted)
    worst = [r for r in scorecard(pd.DataFrame([row]), {"ours": shifted}, REFERENCE) if r["run"] == "worst"]
    peaks = {r["experiment"]: r for r in worst if r["metric"] == "peak LLC"}
    assert sorted(peaks) == ["baseline", "seeds"]
    assert all(r["relative_deviation"] == pytest.approx(0.1) and "ours" in r["note"] for r in peaks.values())


def test_a_dense_early_schedule_of_ours_is_scored_at_their_steps():
    runs = load_reference(REFERENCE)
    baseline = next(run for run in runs if run.name == "flatness_test")
    extra = pd.DataFrame({"step": [50], "train_acc": [1.0], "val_acc": [1.0], "llc": [1e6], "trace_hutchinson": [0.0]})
    dense = pd.concat([extra, baseline.log], ignore_index=True)
    row = summary_of(TrainConfig(), "ours", "baseline", dense)
    rows = scorecard(pd.DataFrame([row]), {"ours": dense}, REFERENCE)
    assert all(r["deviation"] == 0 for r in rows if r["run"] == "ours")


def test_a_thinned_trajectory_is_scored_where_it_has_estimates():
    """Our LLC at every 10th step and the markers: the peak is compared over the steps both estimated, a skipped
    marker says so, and the rest scores zero against the same log."""
    baseline = next(run for run in load_reference(REFERENCE) if run.name == "flatness_test")
    log = baseline.log.copy()
    markers = transition_steps(log["step"], log["train_acc"], log["val_acc"]).values()
    kept = log.index % 10 == 0
    kept |= log["step"].isin([*markers, log["step"].iloc[-1]])
    thinned = log.assign(llc=log["llc"].where(kept))
    skipped_peak = log["llc"].idxmax()
    assert not kept[skipped_peak], "the test needs the authors' peak between our estimates"
    row = summary_of(TrainConfig(), "ours", "baseline", log)
    rows = {r["metric"]: r for r in scorecard(pd.DataFrame([row]), {"ours": thinned}, REFERENCE) if r["run"] == "ours"}
    assert rows["peak LLC"]["deviation"] == 0 and "steps we estimated (llc.every)" in rows["peak LLC"]["note"]
    assert all(rows[f"LLC at {label}"]["deviation"] == 0 for label in ("memorised", "val 50%", "val 95%", "stop"))
    memorised = row["memorisation_step"]
    unmarked = thinned.assign(llc=thinned["llc"].where(thinned["step"] != memorised))
    rows = scorecard(pd.DataFrame([row]), {"ours": unmarked}, REFERENCE)
    [skipped] = [r for r in rows if r["run"] == "ours" and r["metric"] == "LLC at memorised"]
    assert skipped["note"] == "not estimated (llc.every)" and pd.isna(skipped["ours"])


def test_no_reference_says_so_per_run():
    runs = load_reference(REFERENCE)
    log = runs[0].log
    rows = scorecard(pd.DataFrame([summary_of(TrainConfig(), "ours", "baseline", log)]), {"ours": log}, None)
    assert rows == [{"experiment": "baseline", "run": "ours", "note": "no reference data (reference: none)"}]


def test_every_shipped_number_is_one_the_authors_runs_could_log():
    """A guard on the data set itself: accuracies are counts over their split (k / n as Python prints it),
    LLCs and traces are float32 values, steps are the evaluation schedule, and a log ends where its sweep's
    early-stop rule stops it (no row lost at the end)."""
    for params_csv in sorted((REFERENCE / "authors").rglob("params.csv")):
        sweep = params_csv.relative_to(REFERENCE / "authors").parts[0]
        params = next(csv.DictReader(params_csv.read_text().splitlines()))
        p, batch, every = int(params["p"]), int(params["batch_size"]), int(params["checkpoint_epochs"])
        train_size = int(float(params["train_frac"]) * p * p)
        sizes = {"train_acc": train_size, "val_acc": p * p - train_size}
        rows = list(csv.DictReader(params_csv.with_name("loss_data.csv").read_text().splitlines()))
        for i, row in enumerate(rows):
            where = f"{params_csv.parent.name} row {i + 1}"
            samples, steps = (int(row["training_step"]), batch) if "training_step" in row else (int(row["batch"]), 1)
            assert samples == (i + 1) * every * steps, where  # training_step counts samples, batch counts steps
            for column, n in sizes.items():
                assert row[column] == repr(round(float(row[column]) * n) / n), f"{where} {column}"
            for column in ("llc", "flatness/trace_hutchinson"):
                if column in row:
                    assert float(np.float32(row[column])) == float(row[column]), f"{where} {column}"
        threshold, patience = EARLY_STOP.get(sweep, DEFAULT_EARLY_STOP)
        val = [float(row["val_acc"]) for row in rows]
        if len(rows) * every < int(params["epochs"]):  # stopped early: by the rule, at its first chance
            assert min(val[-patience:]) >= threshold, params_csv.parent.name
            assert len(val) == patience or threshold > val[-patience - 1], params_csv.parent.name
        else:  # ran to the end without meeting the rule
            assert len(rows) * every == int(params["epochs"]), params_csv.parent.name
            assert not any(min(val[i : i + patience]) >= threshold for i in range(len(val) - patience + 1))


class Read:
    """What a figure reads, in memory."""

    def __init__(self, summary, loss_data=None):
        self.summary, self.loss_data = summary, loss_data
        self.certified = {}  # an optional read: no run of these has certified estimates

    def authors_runs(self):
        return load_reference(REFERENCE)


def lr_wd_rows(preset: str) -> tuple[pd.DataFrame, list]:
    """Our summary rows for three of their sweep_batch_lr_wd runs (their own logs as ours) and one unmatched."""
    theirs = [r for r in load_reference(REFERENCE) if r.name.startswith("sweep_batch_lr_wd/")][:3]
    rows = []
    for i, run in enumerate(theirs):
        s = run.settings
        config = TrainConfig(lr=s["lr"], weight_decay=s["weight_decay"], max_steps=25000, early_stop_threshold=0.95,
                             early_stop_patience=3)  # fmt: skip
        rows.append(summary_of(config, f"r{i}", "vary_lr_wd", run.log, preset) | {"peak_llc": run.log["llc"].max(),
                                                                        **TRUSTED_PEAK})
    unmatched = TrainConfig(lr=3e-3, max_steps=25000, early_stop_threshold=0.95, early_stop_patience=3)
    rows.append(summary_of(unmatched, "r9", "vary_lr_wd", theirs[0].log, preset) | {"peak_llc": 1.0, **TRUSTED_PEAK})
    return pd.DataFrame(rows), theirs


def hollow_points(fig) -> set[tuple[float, float]]:
    """Open markers, less the censored triangles (runs that never reached val 95%), which are open too."""
    return {(float(x), float(y)) for ax in fig.axes for line in ax.lines if line.get_markerfacecolor() == "none"
            and line.get_marker() != "^"
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True) if not np.isnan(y)}  # fmt: skip


def test_fig9_draws_the_authors_runs_of_the_same_settings_as_open_markers():
    from grokslt.figures.severity import fig9

    rows, theirs = lr_wd_rows("paper_code_lr_wd")
    points = hollow_points(fig9(Read(rows), "vary_lr_wd"))
    for run in theirs:
        lr, log = run.settings["lr"], run.log
        assert (lr, grokking_severity(log["train_acc"], log["val_acc"])) in points
        assert (lr, float(log["llc"].max())) in points
    assert len(points) == 2 * len(theirs)  # the unmatched run draws nothing of theirs
    other_sampler = hollow_points(fig9(Read(lr_wd_rows("paper_code")[0]), "vary_lr_wd"))
    assert len(other_sampler) == len(theirs)  # GSM only: LLCs of another sampler are not comparable


def test_the_small_multiples_draw_the_authors_log_beside_each_matched_run():
    from grokslt.figures.trajectory import small_multiples

    rows, theirs = lr_wd_rows("paper_code_lr_wd")
    tables = {}
    for run, name in zip([*theirs, theirs[0]], rows["run"], strict=True):
        tables[name] = run.log.assign(
            train_loss=0.01, val_loss=0.01, llc_std=0.1, trace_hutchinson=1.0, converged=True, local=True
        )
    rows = rows.assign(status="early_stop", experiments="vary_lr_wd")
    fig = small_multiples(Read(rows, tables), "vary_lr_wd")
    grey = [line for ax in fig.axes for line in ax.lines if line.get_color() in ("0.5", "0.45")]
    assert len(grey) == 3 * len(theirs)  # train and validation accuracy and the LLC per matched run
    assert "grey: authors' log" in fig._suptitle.get_text()

"""The authors' logs as reference data: checksums, settings, matching our runs, and the scorecard."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pandas as pd
import pytest
from workflow_support import REPO

from grokslt.errors import BadInput
from grokslt.metrics import grokking_severity, transition_steps
from grokslt.reference import DEFAULT_EARLY_STOP, EARLY_STOP, find_match, load_reference
from grokslt.scorecard import sampler_comparable, scorecard
from grokslt.train import TrainConfig

REFERENCE = REPO / "reference"


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
            assert int(row["training_step"]) == (i + 1) * every * batch, where
            for column, n in sizes.items():
                assert row[column] == repr(round(float(row[column]) * n) / n), f"{where} {column}"
            for column in ("llc", "flatness/trace_hutchinson"):
                if column in row:
                    assert float(np.float32(row[column])) == float(row[column]), f"{where} {column}"
        threshold, patience = EARLY_STOP.get(sweep, DEFAULT_EARLY_STOP)
        val = [float(row["val_acc"]) for row in rows]
        assert min(val[-patience:]) >= threshold > val[-patience - 1], params_csv.parent.name

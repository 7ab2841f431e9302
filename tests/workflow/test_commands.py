"""The workflow's command lines and figure inputs, built from a checked config without Snakemake."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from grokslt.cli import build_parser
from grokslt.figures import FIGURES, instances
from grokslt.workflow.commands import Layout, figure_args
from grokslt.workflow.config import check_workflow
from grokslt.workflow.studies import STUDIES

TINY = yaml.safe_load(Path(__file__).with_name("tiny.yaml").read_text())


def layout(config: dict = TINY) -> Layout:
    return Layout.of(check_workflow(copy.deepcopy(config)), "reference/SHA256SUMS")


def parses(command: str, words: list[str], *required: str):
    """The flags parse under the command's own parser (with the flags every job adds)."""
    return build_parser().parse_args([command, *words, *required])


def test_every_flag_a_rule_passes_is_one_the_command_takes():
    tiny = layout()
    run = next(iter(tiny.runs))
    assert parses("llc", tiny.llc_args(run), "--run", "r", "--out", "o").preset == "paper_code"
    assert parses("llc", tiny.certify_args(), "--run", "r", "--out", "o").num_draws == 300
    for kind in [*tiny.refined_kinds(), "traced"]:
        parses("llc", tiny.refined_args(kind), "--run", "r", "--out", "o")
    tables = parses("tables", tiny.tables_args(), "--id", "i", "--run", "r", "--llc", "l", "--params-out", "p",
                    "--loss-out", "o")  # fmt: skip
    assert tables.hessian_preset == "paper_code" and tables.mass == 0.99
    calibration = parses("calibrate", tiny.study_args(STUDIES["calibration"]), "--out", "o")
    assert calibration.step_sizes == "0.001,0.002,0.004" and calibration.report_only
    accuracy = parses("accuracy", tiny.study_args(STUDIES["estimator_accuracy"]), "--out", "o")
    assert accuracy.nbetas == "10.0,30.0,100.0" and accuracy.repeats == 2
    assert accuracy.runs == [tiny.run_dir(run) for run in tiny.membership["accuracy_nets"]]


def test_an_experiments_llc_block_and_the_calibrated_preset_reach_the_flags():
    config = copy.deepcopy(TINY)
    long = {"early_stop": False, "max_steps": 400, "llc": {"preset": "calibrated", "num_draws": 50, "every": 3}}
    config["experiments"]["baseline_long"] = long
    tiny = layout(config)
    [run] = tiny.membership["baseline_long"]
    words = tiny.llc_args(run)
    calibration = "tiny results/calibration/baseline/calibration.json"
    assert words[words.index("--calibration") + 1] == calibration and tiny.calibration_input(run) == [calibration]
    assert words[words.index("--every") + 1] == "3" and words[words.index("--num-draws") + 1] == "50"
    other = tiny.membership["vary_p"][0]
    assert "--every" not in tiny.llc_args(other) and tiny.calibration_input(other) == []
    assert "--report-only" not in tiny.study_args(STUDIES["calibration"])  # a trajectory needs the calibration's choice


def test_a_figure_reads_its_experiments_tables_and_the_certified_runs_among_them():
    tiny = layout()
    drawn = instances(TINY["figures"])
    traces = lambda run: [f"{run}.npz"]  # noqa: E731
    fig2, settings = drawn["fig2"]
    loss = tiny.figure_tables("fig2", fig2, settings, "loss_data", traces)
    band = tiny.experiment_runs(["baseline", "seeds"])
    assert loss == [f"tiny results/runs/{run}/loss_data.csv" for run in band]
    # the summary of a figure is its runs' rows, which the figure's job puts together: no job of its own
    assert tiny.figure_tables("fig2", fig2, settings, "summary", traces) == [
        f"tiny results/runs/{run}/summary.csv" for run in band
    ]
    fig9, settings = drawn["fig9"]
    # vary_lr_wd is not among certified.experiments; its run at the baseline's settings is the baseline's run, which is
    [shared] = set(tiny.membership["vary_lr_wd"]) & set(tiny.membership["baseline"])
    certified = tiny.figure_tables("fig9", fig9, settings, "certified", traces)
    assert certified == [f"tiny results/runs/{shared}/certified.csv"] and len(tiny.membership["vary_lr_wd"]) == 3
    assert tiny.figure_tables("fig9", fig9, settings, "reference", traces) == ["reference/SHA256SUMS"]
    diagnostics, settings = drawn["diagnostics"]
    [first] = tiny.membership["baseline"]
    assert tiny.figure_tables("diagnostics", diagnostics, settings, "traces", traces) == [f"{first}.npz"]
    assert tiny.figure_tables("diagnostics", diagnostics, settings, "params", traces) == [
        f"tiny results/runs/{first}/params.csv"
    ]
    no_reference = layout(TINY | {"reference": "none"})
    assert no_reference.figure_tables("fig9", fig9, drawn["fig9"][1], "reference", traces) == []
    with pytest.raises(ValueError, match="unknown"):
        tiny.figure_tables("fig9", fig9, settings, "nothing", traces)


def test_figure_arguments_leave_out_an_optional_input_that_is_absent_only():
    fig9 = FIGURES["fig9"]
    words = figure_args(fig9, {"experiment": "vary_lr_wd"}, {"summary": ["s.csv"], "reference": [], "certified": []})
    assert words == ["fig9", "--summary", "s.csv", "--experiment", "vary_lr_wd"]
    rows = {"summary": ["a/summary.csv", "b/summary.csv"], "reference": [], "certified": []}
    membership = {"vary_lr_wd": ["a", "b"], "baseline": ["a"], "x": []}
    words = figure_args(fig9, {"experiment": "vary_lr_wd"}, rows, membership)
    assert words == ["fig9", "--summary", *rows["summary"], "--membership", "vary_lr_wd=a,b", "baseline=a",
                     "--experiment", "vary_lr_wd"]  # fmt: skip
    theory = FIGURES["theory_vs_measurement"]
    words = figure_args(theory, {"experiments": ["a", "b"]}, {"summary": []})
    assert words == ["theory_vs_measurement", "--summary", "--rank-checks", "--experiments", "a", "b"]


def checkpoints_written(settings) -> int:
    """Every step a run evaluates at, counted one by one, and its last (training to max_steps)."""
    steps = settings.max_steps
    return sum(settings.evaluates_at(step) for step in range(1, steps + 1)) + (not settings.evaluates_at(steps))


def test_whole_runs_are_those_whose_every_checkpoint_fits_one_llc_chunk():
    config = copy.deepcopy(TINY) | {"run_jobs": "whole"}
    config["experiments"]["dense"] = {"max_steps": 200, "dense_until": 100, "dense_every": 20, "early_stop": False}
    config["experiments"]["calibrated"] = {"seed": 7, "llc": {"preset": "calibrated"}}
    config["experiments"]["ragged"] = {"max_steps": 280, "early_stop": False}  # 50, ..., 250 and the last, 280
    whole = layout(config)
    size = config["llc"]["chunk_size"]
    fits = {run for run, settings in whole.runs.items() if checkpoints_written(settings) <= size}
    [calibrated] = whole.membership["calibrated"]
    assert whole.whole_runs and set(whole.whole_runs) == fits - {calibrated}
    assert set(whole.staged_runs()) == set(whole.runs) - fits | {calibrated}
    assert whole.membership["baseline_long"][0] in whole.staged_runs()  # 8 checkpoints, chunks of 6
    [dense] = whole.membership["dense"]  # 50, 100, 150, 200 and 20, 40, 60, 80
    assert dense in whole.staged_runs() and checkpoints_written(whole.runs[dense]) == 8
    [ragged] = whole.membership["ragged"]
    ragged_settings = whole.runs[ragged]
    assert ragged in whole.whole_runs and ragged_settings.most_checkpoints == 6 == checkpoints_written(ragged_settings)
    assert layout(config | {"gpu": True}).whole_runs == [] and layout().whole_runs == []

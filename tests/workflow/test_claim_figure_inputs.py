"""The claims' figures read the coefficient tables of their experiment's runs where the config computes them, and go
without them (the figure then says so) where it does not."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from grokslt.figures import FIGURES
from grokslt.workflow.commands import Layout, figure_args
from grokslt.workflow.config import check_workflow

TINY = yaml.safe_load((Path(__file__).parent / "tiny.yaml").read_text())


def tiny_layout(coefficient: dict) -> Layout:
    return Layout.of(check_workflow(copy.deepcopy(TINY) | {"coefficient": coefficient}), "reference/SHA256SUMS")


def no_traces(run):
    return []


def test_without_coefficient_tables_the_flag_is_left_out():
    layout, figure = tiny_layout({"experiments": [], "finals": []}), FIGURES["claim_fig2"]
    files = {kind: layout.figure_tables("claim_fig2", figure, figure.settings, kind, no_traces)
             for kind in figure.reads}  # fmt: skip
    assert files["coefficient"] == [] and files["certified"]
    words = figure_args(figure, figure.settings, files)
    assert "--coefficient" not in words and "--certified" in words


def test_the_experiments_runs_with_coefficient_tables_are_read():
    tiny = layout = tiny_layout({"experiments": ["baseline"], "finals": []})
    [baseline] = tiny.membership["baseline"]
    figure = FIGURES["claim_keff"]  # of vary_p's and vary_K's runs, only the one that is also the baseline's
    shared = [run for run in tiny.experiment_runs(["vary_p", "vary_K"]) if run == baseline]
    tables = layout.figure_tables("claim_keff", figure, figure.settings, "coefficient", no_traces)
    assert tables == [f"tiny results/runs/{run}/coefficient.csv" for run in shared]
    figure = FIGURES["claim_fig2"]
    tables = layout.figure_tables("claim_fig2", figure, figure.settings, "coefficient", no_traces)
    assert tables == [f"tiny results/runs/{baseline}/coefficient.csv"]
    assert figure_args(figure, figure.settings, {"coefficient": tables})[-4:-2] == ["--coefficient", tables[0]]

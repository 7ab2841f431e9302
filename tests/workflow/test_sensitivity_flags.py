"""The sampler-sensitivity study estimates one checkpoint: it takes the baseline's sampler but not the thinning of
its LLC trajectory (`llc: every`), which `grokslt sensitivity` has no flag for (the quick config thins the
baseline's trajectory, and its sensitivity job failed on `--every 2`)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from grokslt.cli import build_parser
from grokslt.workflow.commands import Layout
from grokslt.workflow.config import check_workflow

TINY = yaml.safe_load(Path(__file__).with_name("tiny.yaml").read_text())


def test_a_thinned_baseline_gives_the_sensitivity_study_its_sampler_without_the_thinning():
    config = copy.deepcopy(TINY)
    config["llc"]["every"] = 2
    layout = Layout.of(check_workflow(config), "reference/SHA256SUMS")
    [run] = [run for run in layout.membership["baseline"]]
    assert layout.llc_args(run)[-2:] == ["--every", "2"]
    words = layout.sampler_args(run)
    assert words == layout.llc_args(run)[:-2]
    grid = ["--step-sizes", "1e-4", "--localizations", "1", "--out", "o"]
    args = build_parser().parse_args(["sensitivity", "--run", "r", *words, *grid])
    assert args.preset == "paper_code" and args.num_draws == 20

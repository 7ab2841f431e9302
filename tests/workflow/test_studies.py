"""The study registry: each entry's section, table, command and cost agree with the schema, the figures' inputs,
the command line and the planner."""

from pathlib import Path

import yaml

from grokslt.cli import COMMANDS
from grokslt.figures import READS
from grokslt.workflow.config import check_workflow, config_schema
from grokslt.workflow.studies import STUDIES

TINY = yaml.safe_load(Path(__file__).with_name("tiny.yaml").read_text())


def test_every_study_is_a_config_section_a_figure_input_and_a_command():
    schema = config_schema()["properties"]
    for name, study in STUDIES.items():
        assert set(study.experiment_keys) <= set(schema[name]["properties"]), name
        assert study.table in READS and study.command in COMMANDS, name


def test_every_study_passes_flags_its_command_takes():
    from grokslt.cli import build_parser
    from grokslt.workflow.commands import Layout

    layout = Layout.of(check_workflow(dict(TINY)), "reference/SHA256SUMS")
    for study in STUDIES.values():
        runs = study.run_ids(layout.config, layout.membership)
        assert runs, f"{study.section}: tests/workflow/tiny.yaml runs it"
        args = build_parser().parse_args([study.command, *layout.study_args(study, runs[0]), "--out", "o"])
        assert args.command == study.command


def test_the_planner_prices_each_study_a_config_runs_and_no_other(monkeypatch):
    from grokslt.workflow import plan

    monkeypatch.setattr(plan, "step_seconds", lambda machine, run, what: 1e-6)  # a microsecond per chain step
    checked = check_workflow(dict(TINY))
    config, membership = checked.config, checked.membership
    costs = {run: {"checkpoints": 4, "dense_checkpoints": 0} for run in checked.runs}
    priced = plan.study_seconds(config, checked.runs, membership, costs, None, {})
    config["figures"]["estimator_accuracy"] = False
    without = plan.study_seconds(config, checked.runs, membership, costs, None, {})
    assert {study.table for study in STUDIES.values()} <= set(priced)
    section = config["calibration"]
    grid = len(section["step_sizes"]) * len(section["nbetas"]) * len(section["localizations"])
    steps = section["num_chains"] * (section["num_burnin"] + section["num_draws"])
    assert priced["calibration"] == 4 * grid * steps * 1e-6  # at its 4 transitions
    assert "accuracy" not in without and without["sensitivity"] == priced["sensitivity"] > 0

"""The file counts of docs/extending.md, checked: a study added as one `Study(...)` entry reaches the config schema and
its check, the planner, its rule's inputs, flags and outputs, the figure inputs and the column reference; a claim
added as one function and one `Claim(...)` entry reaches claims.csv. Both entries are throwaways, removed after."""

import copy
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
import yaml
from claims_support import summary_row

from grokslt.workflow import columns, plan
from grokslt.workflow.commands import Layout
from grokslt.workflow.config import ConfigError, check_workflow, config_schema
from grokslt.workflow.studies import STUDIES, Columns, Study

TINY = yaml.safe_load((Path(__file__).parent / "tiny.yaml").read_text())


def margin_arguments(layout, runs):
    return ["--run", layout.run_dir(runs[0]), "--every", str(layout.config["margin"]["every"])]


MARGIN = Study(
    "margin",
    "the classification margin per checkpoint",
    lambda: {
        "experiments": {"type": "array", "items": {"type": "string"}, "default": [], "description": "experiments"},
        "every": {"type": "integer", "minimum": 1, "default": 5, "description": "every k-th checkpoint"},
    },
    "margin",
    margin_arguments,
    "runs/{run}/margin.csv",
    "margin",
    "margin",
    Columns(
        "One row per checkpoint: the margin.",
        lambda run, directory, sampler: ["step", "margin"],
        {"margin": "the smallest logit gap to the answer"},
    ),  # fmt: skip
    lambda section, runs, prices: 7.0 * len(runs),
    reads="each",
    experiment_keys=("experiments",),
)


@pytest.fixture
def margin(monkeypatch):
    monkeypatch.setitem(STUDIES, "margin", MARGIN)
    return MARGIN


def with_margin(**section) -> dict:
    return copy.deepcopy(TINY) | {"margin": section}


def test_a_study_is_one_entry_schema_check_planner_rule_and_columns(margin, monkeypatch):
    assert config_schema()["properties"]["margin"]["properties"]["every"]["default"] == 5
    checked = check_workflow(with_margin(experiments=["baseline", "vary_p"]))
    assert checked.config["margin"] == {"experiments": ["baseline", "vary_p"], "every": 5}
    with pytest.raises(ConfigError, match=r"margin.experiments\[0\] = 'nothing': no such experiment"):
        check_workflow(with_margin(experiments=["nothing"]))

    runs = margin.run_ids(checked.config, checked.membership)
    assert runs == list(dict.fromkeys([*checked.membership["baseline"], *checked.membership["vary_p"]]))
    monkeypatch.setattr(plan, "step_seconds", lambda machine, run, what: 1e-6)
    costs = {run: {"checkpoints": 4, "dense_checkpoints": 0} for run in checked.runs}
    assert plan.study_seconds(checked.config, checked.runs, checked.membership, costs, None, {})["margin"] == 7.0 * 2
    without = check_workflow(copy.deepcopy(TINY))
    jobs = plan.shared_jobs(checked.config, checked.membership)
    assert jobs - plan.shared_jobs(without.config, without.membership) == len(runs)  # one job per run of the study

    layout = Layout.of(checked, "reference/SHA256SUMS")  # what the rule of workflow/rules/estimation.smk reads
    assert layout.study_outputs(margin) == {"table": "tiny results/runs/{run}/margin.csv"}
    assert layout.study_tables(margin) == [f"tiny results/runs/{run}/margin.csv" for run in runs]
    assert layout.study_inputs(margin, runs[0]) == [f"tiny results/runs/{runs[0]}/train_log.csv"]
    assert layout.study_args(margin, runs[0]) == ["--run", f"tiny results/runs/{runs[0]}", "--every", "5"]

    [table] = [table for table in columns.tables() if table.path == "runs/RUN/margin.csv"]
    assert columns.meaning(table.path, "margin") == "the smallest logit gap to the answer"


def test_a_study_the_config_leaves_empty_runs_nowhere(margin, monkeypatch):
    checked = check_workflow(copy.deepcopy(TINY))
    assert checked.config["margin"] == {"experiments": [], "every": 5}
    assert Layout.of(checked, "reference/SHA256SUMS").study_tables(margin) == []
    monkeypatch.setattr(plan, "step_seconds", lambda machine, run, what: 1e-6)
    costs = {run: {"checkpoints": 4, "dense_checkpoints": 0} for run in checked.runs}
    assert "margin" not in plan.study_seconds(checked.config, checked.runs, checked.membership, costs, None, {})


def test_the_coefficient_study_reads_each_run_at_its_own_checkpoints():
    """Every 20th of the baseline's checkpoints and its transitions; the last of the finals' other runs."""
    config = copy.deepcopy(TINY) | {"coefficient": {"experiments": ["baseline"], "finals": ["vary_p"], "every": 20}}
    layout = Layout.of(check_workflow(config), "reference/SHA256SUMS")
    study = STUDIES["coefficient"]
    [baseline] = layout.membership["baseline"]
    others = [run for run in layout.membership["vary_p"] if run != baseline]
    assert layout.study_args(study, baseline)[2:4] == ["--every", "20"]
    assert layout.study_args(study, others[0])[2:4] == ["--steps", "final"]
    assert len(layout.study_tables(study)) == 1 + len(others)
    from grokslt.figures import FIGURES

    tables = layout.figure_tables("fig1a", FIGURES["fig1a"], {"experiment": "vary_p"}, "coefficient", lambda run: [])
    assert tables == [f"tiny results/runs/{run}/coefficient.csv" for run in layout.membership["vary_p"]]


def test_a_study_of_the_paper_model_refuses_other_families():
    config = copy.deepcopy(TINY) | {"coefficient": {"finals": ["mlp"]}}
    with pytest.raises(ConfigError, match=r"coefficient.finals\[0\] = 'mlp': its runs are mlp/cross_entropy"):
        check_workflow(config)


def test_a_claim_is_one_function_and_one_entry(monkeypatch):
    from grokslt.analysis.claims import CLAIMS, Claim
    from grokslt.analysis.claims.table import evaluate

    module = types.ModuleType("grokslt.analysis.claims.throwaway")
    module.always_inconclusive = lambda evidence, preset: [
        dict(
            claim="throwaway_claim",
            preset=preset,
            statistic="runs",
            value=float(len(evidence.llc.read)),
            uncertainty=float("nan"),
            verdict="inconclusive",
            n=0,
            note="a throwaway claim",
        )  # fmt: skip
    ]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(CLAIMS, "throwaway_claim", Claim("throwaway_claim", "throwaway.always_inconclusive"))
    summary = pd.DataFrame([summary_row("x", "other")])
    rows = [row for row in evaluate(summary, {}, {"paper_code": {}}, None) if row["claim"] == "throwaway_claim"]
    assert [(row["preset"], row["verdict"], row["model"]) for row in rows] == [("paper_code", "inconclusive",
                                                                                "quadratic")]  # fmt: skip

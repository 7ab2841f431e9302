"""`grokslt plan`: its parts add up to the total, the table says why the experiments' rows do not, and the
measurement says what it is timing while it runs."""

import logging

import pytest
from workflow_support import MACHINE, quick

from grokslt.workflow import plan


def test_the_parts_add_up_to_the_total_and_the_rows_difference_is_named():
    result = plan.plan(quick(), 2, MACHINE)
    parts = result["cpu_seconds_parts"]
    assert sum(parts.values()) == pytest.approx(result["cpu_seconds"])
    assert {"runs, each once", "job starts", "figures"} <= set(parts)
    text = plan.describe(result)
    rows = sum(row["cpu_seconds"] for row in result["experiments"].values()) / 3600
    assert f"the rows sum to {rows:.2f} CPU hours: a run counts in every experiment it belongs to" in text
    for name, seconds in parts.items():
        assert f"  {name:28s} {seconds / 3600:10.2f}" in text


def test_the_measurement_says_what_it_times(monkeypatch, caplog):
    monkeypatch.setattr(plan, "measure_run", lambda run, steps, repeats: (1e-3, 1e-3))
    monkeypatch.setattr(plan, "fastest", lambda work, repeats: 1.0)
    from grokslt.workflow.config import check_workflow

    runs = check_workflow(quick()).runs.values()
    with caplog.at_level(logging.INFO, logger=plan.log.name):
        plan.measure(runs=runs)
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("timing training and SGLD steps: size 1 of 2 (p 11, K 32, batch 16)")
    assert "timing a job's start and a figure job" in messages

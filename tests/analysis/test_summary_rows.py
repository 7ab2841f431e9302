"""summary/runs.csv put together from each run's sealed row (`grokslt.analysis.summary`): the rows' text repeated
byte for byte, the experiments from the membership, and a row of another run or of other columns refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from grokslt.analysis.summary import parse_membership, summary_text
from grokslt.artefacts import seal
from grokslt.errors import BadInput
from grokslt.io import write_csv


def sealed_row(root: Path, run: str, **cells) -> Path:
    path = root / run / "summary.csv"
    row = {"run": run, "p": 5, "final_llc": 1.25, "grok_step_95": None} | cells
    seal(path, write_csv(path, [row], list(row)), "grokslt tables", "identity")
    return path


def test_the_rows_text_is_repeated_with_each_runs_experiments(tmp_path):
    rows = {run: sealed_row(tmp_path, run) for run in ("b", "a")}
    membership = {"vary_p": ["a", "b"], "baseline": ["a"], "empty": []}
    assert summary_text(rows, membership) == (
        "run,experiments,p,final_llc,grok_step_95\na,baseline;vary_p,5,1.25,\nb,vary_p,5,1.25,\n"
    )


def test_no_rows_give_a_header_alone(tmp_path):
    assert summary_text({}, {}) == "run\n"


def test_a_row_under_another_runs_name_is_refused(tmp_path):
    path = sealed_row(tmp_path, "a")
    with pytest.raises(BadInput, match="the summary row of run 'a', given as 'b'"):
        summary_text({"b": path}, {})


def test_rows_of_different_columns_are_refused(tmp_path):
    rows = {"a": sealed_row(tmp_path, "a"), "b": sealed_row(tmp_path, "b", extra=1)}
    with pytest.raises(BadInput, match="columns differ"):
        summary_text(rows, {})


def test_an_edited_row_is_refused(tmp_path):
    path = sealed_row(tmp_path, "a")
    path.write_text(path.read_text().replace("1.25", "9.25"))
    with pytest.raises(BadInput, match="not the bytes `grokslt tables` wrote"):
        summary_text({"a": path}, {})


def test_membership_names_only_the_runs_given():
    assert parse_membership(["x=a,b", "y="], ["a", "b"], "--membership") == {"x": ["a", "b"], "y": []}
    with pytest.raises(BadInput, match="--membership x: runs \\['c'\\] are not among the runs given"):
        parse_membership(["x=a,c"], ["a", "b"], "--membership")

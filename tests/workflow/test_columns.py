"""Every output column has a meaning, docs/columns.md is what the code says, and the example reads real results."""

import fnmatch
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grokslt.workflow import columns

REPO = Path(__file__).resolve().parents[2]


def test_every_column_of_every_table_has_a_meaning():
    missing = columns.undescribed()
    assert not missing, (
        f"columns without a meaning: {missing}; add each to DESCRIPTIONS (or the table's `meanings`) in "
        f"src/grokslt/workflow/columns.py, then regenerate: {columns.REGENERATE}"
    )


def test_every_description_describes_a_column():
    unused = columns.unused_descriptions()
    assert not unused, f"DESCRIPTIONS in src/grokslt/workflow/columns.py name no column of any table: {unused}"


def test_columns_come_in_the_order_the_writers_write_them():
    found = columns.observed_columns()
    assert found["runs/RUN/train_log.csv"][:2] == ["step", "samples_seen"]
    assert found["runs/RUN/loss_data.csv"][:2] == ["step", "training_step"]
    assert "llc_chain_{i}" in found["runs/RUN/llc/chunk{i}of{n}.csv"]  # per-chain columns, collapsed
    assert "accept_rate" in found["runs/RUN/llc/chunk{i}of{n}.csv"]  # a sampler's own statistic, from every sampler
    assert "version_{package}" in found["runs/RUN/params.csv"]
    assert columns.collapse(["a", "llc_chain_0", "llc_chain_1", "b"]) == ["a", "llc_chain_{i}", "b"]


def test_docs_columns_md_is_the_generated_reference():
    written = (REPO / "docs" / "columns.md").read_text()
    assert written == columns.reference(), f"docs/columns.md is stale: regenerate it with `{columns.REGENERATE}`"


# -- on real results ----------------------------------------------------------------------------------------


def documented_table(relative: str) -> str | None:
    """The documented table a file under a results directory is an instance of."""
    for table in columns.tables():
        pattern = table.path.replace("RUN", "*").replace("EXPERIMENT", "*").replace("{i}of{n}", "*of*")
        pattern = pattern.replace("{STEP}", "*").replace("{KIND}", "*")
        a_run_row = fnmatch.fnmatch(relative, "runs/*/summary.csv")  # summary/runs.csv's row of one run
        if fnmatch.fnmatch(relative, pattern) or (table.path == "summary/runs.csv" and a_run_row):
            return table.path
    return None


@pytest.mark.slow
def test_every_table_the_tiny_workflow_writes_is_documented(finished_tiny):
    from workflow_support import TINY_RESULTS

    results = finished_tiny.root / TINY_RESULTS
    documented = columns.observed_columns()
    checked = set()
    for path in sorted([*results.rglob("*.csv"), *results.rglob("*.npz"), *results.rglob("*.nc")]):
        relative = path.relative_to(results).as_posix()
        if relative.startswith(("data/", "benchmarks/", "logs/")):
            continue
        table = documented_table(relative)
        assert table is not None, f"{relative}: no table of grokslt.workflow.columns.tables() describes it"
        if path.suffix == ".npz":
            with np.load(path) as arrays:
                names = sorted(arrays.files)
        elif path.suffix == ".nc":
            from grokslt.estimation.pair_traces import load_pair_traces

            with load_pair_traces(path) as tree:
                names = [f"{group.name}/{name}" for group in tree.children.values() for name in group.data_vars]
        else:
            names = columns.collapse(pd.read_csv(path, nrows=0).columns.tolist())
        extra = [name for name in names if name not in documented[table]]
        assert not extra, f"{relative}: columns {extra} are not in the reference of {table}"
        checked.add(table)
    assert checked == {table.path for table in columns.tables() if table.workflow}


@pytest.mark.slow
def test_the_example_reads_the_tiny_workflow_results(finished_tiny):
    from workflow_support import TINY_RESULTS

    results = finished_tiny.root / TINY_RESULTS
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "load_results.py"), str(results)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for text in (
        "summary/runs.csv:",
        "never reached val 95%",
        "LLC chains at step",
        "per-chain estimates",
        "local",
        "claims/claims.csv:",
    ):
        assert text in result.stdout

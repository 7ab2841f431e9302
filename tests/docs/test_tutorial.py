"""The tutorial (examples/tutorial.py, a jupytext percent notebook) runs cell by cell, as a notebook kernel would,
on the shared tiny workflow's results, and every cell that draws, opens or estimates something does so."""

import os
from pathlib import Path

import jupytext
import matplotlib
import matplotlib.pyplot as plt
import pytest
from workflow_support import REPO, TINY_RESULTS

TUTORIAL = REPO / "examples" / "tutorial.py"


def test_the_tutorial_is_a_percent_notebook_of_markdown_and_code_cells():
    notebook = jupytext.read(TUTORIAL)
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds.count("markdown") >= 4 and kinds.count("code") >= 5
    assert notebook.metadata["jupytext"]["formats"] == "py:percent"


@pytest.mark.slow
def test_the_tutorial_runs_on_the_tiny_workflows_results(finished_tiny, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.setenv("GROKSLT_RESULTS", str(finished_tiny.root / TINY_RESULTS))
    monkeypatch.setenv("GROKSLT_TUTORIAL_FIGURES", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    namespace: dict = {"__name__": "__main__"}
    try:
        for index, cell in enumerate(jupytext.read(TUTORIAL).cells):
            if cell.cell_type == "code":
                exec(compile(cell.source, f"{TUTORIAL.name}, cell {index}", "exec"), namespace)
    finally:
        plt.close("all")
    # the cells' products: Figure 2 with its diagnostics drawn, the traces opened, an LLC estimated
    assert sorted(path.name for path in Path(tmp_path).iterdir()) == ["fig2_diagnostics.png"]
    assert namespace["tree"]["log_likelihood"]["train"].sizes["chain"] >= 2
    assert namespace["pair_loss"].notnull().all()
    result = namespace["result"]
    assert result.llc_mean == result.llc_mean and result.diagnostics is not None  # a finite estimate, diagnosed
    assert os.environ["GROKSLT_RESULTS"].endswith(TINY_RESULTS)

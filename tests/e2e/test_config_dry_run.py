"""What Snakemake shows of the config check (tests/workflow/test_config_errors.py holds the check itself): the
check's lines, each prefixed `config: `, before any job; a config of one experiment with sections left out builds
its jobs. Two starts of Snakemake, each ending once the workflow is parsed (2-6 s)."""

from __future__ import annotations

import pytest
from config_support import ONE_EXPERIMENT_SKIPPED, one_experiment
from workflow_support import quick, snakemake, write_config

pytestmark = pytest.mark.slow
MAX_LINES = 10


def test_snakemake_ends_on_mistakes_before_any_job_with_each_line_marked(tmp_path):
    """A run (not a dry run) of a config with four mistakes, two of them text that would reach a shell and one a key
    given twice in the file Snakemake reads: a line each, prefixed, and nothing run or written."""
    config = quick()
    config["experiments"]["vary_p"]["lr_rate"] = 0.1
    config["experiments"]["x;touch pwned"] = {}
    config["results"] = "$(touch pwned)"
    path = write_config(tmp_path, config)
    path.write_text(path.read_text() + "threads: 2\n")
    result = snakemake("--cores", "1", "--configfile", path, cwd=tmp_path, check=False)
    lines = (result.stdout + result.stderr).strip().splitlines()
    shown = "\n".join(lines)
    assert result.returncode != 0
    assert len(lines) <= MAX_LINES, shown
    for mistake in (
        f"{path}: threads given twice in one mapping",
        "experiments = 'x;touch pwned': expected text matching",
        "experiments.vary_p.lr_rate: unknown key; did you mean lr?",
        "results = '$(touch pwned)': expected output directory",
    ):
        assert any(line.startswith(f"config: {mistake}") for line in lines), shown
    assert {entry.name for entry in tmp_path.iterdir()} <= {"config.yaml", ".snakemake"}  # no pwned, no results


def test_a_config_of_one_experiment_and_no_optional_section_builds_its_jobs(tmp_path):
    """The skipped figures said one line each; the sections left out are their defaults; a figure switched off is
    not drawn, the others are."""
    config = one_experiment()
    for section in ("llc", "hessian", "defaults"):  # (one_experiment leaves out sampler_sensitivity too)
        del config[section]
    config["figures"]["diagnostics"] = False
    config["results"] = str(tmp_path / "results")
    result = snakemake("-n", "--configfile", write_config(tmp_path, config), cwd=tmp_path, check=False)
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 0, "\n".join(lines[-20:])
    assert [line for line in lines if line.startswith("config: ")] == [f"config: {s}" for s in ONE_EXPERIMENT_SKIPPED]
    assert "figures/fig2.png" in result.stdout and "figures/sensitivity.png" in result.stdout
    assert "figures/diagnostics.png" not in result.stdout and "fig1a.png" not in result.stdout

"""What Snakemake shows of the config check (tests/workflow/test_config_errors.py holds the check itself): the
check's lines, each prefixed `config: `, before any job; a config of one experiment with sections left out builds
its jobs. Two dry runs of the whole workflow, 2-6 s each."""

from __future__ import annotations

import pytest
from config_support import ONE_EXPERIMENT_SKIPPED, one_experiment
from workflow_support import quick, snakemake, write_config

pytestmark = pytest.mark.slow
MAX_LINES = 10


def dry_run(tmp_path, configfile):
    result = snakemake("-n", "--configfile", configfile, cwd=tmp_path, check=False)
    return result, (result.stdout + result.stderr).strip().splitlines()


def test_snakemake_ends_on_mistakes_before_any_job_with_each_line_marked(tmp_path):
    """A misspelt key and a key given twice in the file Snakemake reads: both lines, prefixed, nothing written."""
    config = quick()
    config["experiments"]["vary_p"]["lr_rate"] = 0.1
    path = write_config(tmp_path, config)
    path.write_text(path.read_text() + "threads: 2\n")
    result, lines = dry_run(tmp_path, path)
    shown = "\n".join(lines)
    assert result.returncode != 0
    assert len(lines) <= MAX_LINES, shown
    assert any(line.startswith("config: experiments.vary_p.lr_rate: unknown key; did you mean lr?") for line in lines)
    assert any(line.startswith(f"config: {path}: threads given twice in one mapping") for line in lines), shown
    assert not (tmp_path / "results").exists()


def test_a_config_of_one_experiment_and_no_optional_section_builds_its_jobs(tmp_path):
    """The skipped figures said one line each; the sections left out are their defaults; a figure switched off is
    not drawn, the others are."""
    config = one_experiment()
    for section in ("llc", "hessian", "defaults"):  # (one_experiment leaves out sampler_sensitivity too)
        del config[section]
    config["figures"]["diagnostics"] = False
    config["results"] = str(tmp_path / "results")
    result, lines = dry_run(tmp_path, write_config(tmp_path, config))
    assert result.returncode == 0, "\n".join(lines[-20:])
    assert [line for line in lines if line.startswith("config: ")] == [f"config: {s}" for s in ONE_EXPERIMENT_SKIPPED]
    assert "figures/fig2.png" in result.stdout and "figures/sensitivity.png" in result.stdout
    assert "figures/diagnostics.png" not in result.stdout and "fig1a.png" not in result.stdout

"""The workflow as a module of another project's Snakefile (`module grokslt: snakefile: ...` and `use rule *
from grokslt`): its own files (figure code, captions, the authors' checksums, conda environments, the
report) are found from the module, not from the Snakefile that includes it. workflow/Snakefile, where the
Snakemake workflow catalog looks, is the same workflow."""

from __future__ import annotations

import pytest
from workflow_support import REPO, TINY, TINY_RESULTS, job_counts, load, snakemake, write_config

from grokslt.figures import instances
from grokslt.workflow.config import check_workflow

HOST = """configfile: "config.yaml"


module grokslt:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from grokslt
"""


@pytest.mark.slow
def test_another_project_runs_the_workflow_as_a_module(tmp_path):
    host = tmp_path / "Snakefile"
    host.write_text(HOST.format(snakefile=REPO / "Snakefile"))
    # every experiment and figure of the tiny config resolves (a dry run: the real one is the workflow tests')
    tiny = load(TINY)
    write_config(tmp_path, tiny)
    checked = check_workflow(tiny)
    jobs = job_counts(snakemake("-n", cwd=tmp_path, snakefile=host).stdout)
    assert jobs["train"] == len(checked.runs) and jobs["figure"] == len(instances(checked.config["figures"]))
    # the same through workflow/Snakefile, where the workflow catalog and snakedeploy look
    catalog = tmp_path / "Snakefile.catalog"
    catalog.write_text(HOST.format(snakefile=REPO / "workflow" / "Snakefile"))
    catalog_jobs = job_counts(snakemake("-n", cwd=tmp_path, snakefile=catalog).stdout)
    assert catalog_jobs == {**{k: v for k, v in jobs.items() if k != "all"}, "default": 1}
    # a real run of one experiment without the studies, which use no file of the module's own, and its report
    # with the figures' captions: figure code, captions and the authors' checksums found from the module
    one = load(TINY)
    one["experiments"] = {"baseline": {}}
    one["certified"]["experiments"] = one["refined"]["experiments"] = []
    one["calibration"]["experiment"] = one["sampler_sensitivity"]["experiment"] = None
    one["figures"] = {"dpi": 60}
    write_config(tmp_path, one)
    snakemake("--cores", "2", cwd=tmp_path, snakefile=host, timeout=300)
    results = tmp_path / TINY_RESULTS
    drawn = sorted(path.stem for path in (results / "figures").glob("*.png"))
    assert drawn == ["claim_fig2", "diagnostics", "fig2", "scorecard"]
    assert (results / "claims" / "claims.csv").stat().st_size > 0
    snakemake("--report", tmp_path / "report.html", cwd=tmp_path, snakefile=host)
    assert "Sampler diagnostics" in (tmp_path / "report.html").read_text(errors="replace")

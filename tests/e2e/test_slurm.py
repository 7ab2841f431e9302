"""The workflow through the real SLURM profile, on a single-node SLURM cluster started on localhost by
tests/cluster/local_slurm.sh (Debian's munge, slurmctld, slurmd, slurmdbd with MariaDB)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from workflow_support import REPO, TINY, TINY_RESULTS, copy_workflow, load, snakemake, tables, write_config

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CLUSTER_SCRIPT = REPO / "tests" / "cluster" / "local_slurm.sh"
# The CI overlay on profiles/slurm: this cluster's partition and account, small resources, quick status checks.
CI_OVERLAY = [
    "--profile",
    "profiles/slurm",
    "--default-resources",
    "slurm_partition=debug",
    "slurm_account=grokslt",
    "runtime=10",
    "mem_mb=500",
    "cpus_per_task=1",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "2",
    "--slurm-keep-successful-logs",
    "--jobs",
    "4",
]
SUBMITTED = re.compile(r"Job ([0-9a-f-]+) has been submitted with SLURM jobid (\d+)")
FINISHED = re.compile(r"Finished jobid: (\d+) \(Rule: (\w+)\)")


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("starting SLURM daemons needs root and Debian's packages")
    subprocess.run(["bash", str(CLUSTER_SCRIPT), "start"], check=True, timeout=900)
    try:
        yield
    finally:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop"], check=True, timeout=300)


def sacct_states(job_ids: set[str]) -> dict[str, str]:
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(sorted(job_ids))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("|") for line in out.splitlines() if line)


# The smallest figure's slice of the tiny workflow (one run: every stage from training to figure),
# not all of it: each job pays a scheduler round trip and a Python start, and the whole tiny workflow as SLURM
# jobs was the test suite's slowest part by minutes (Figure 1a's slice, two runs on two datasets, half again).
FIGURE = f"{TINY_RESULTS}/figures/saturation.png"


def test_a_figure_builds_as_slurm_jobs_with_the_local_results(cluster, finished_tiny, tmp_path):
    snakefile = copy_workflow(tmp_path)
    result = snakemake(FIGURE, *CI_OVERLAY, "--configfile", TINY, cwd=tmp_path, snakefile=snakefile, timeout=1800)
    output = result.stdout + result.stderr
    submitted = dict(SUBMITTED.findall(output))  # Snakemake job (or group) id -> SLURM job id
    finished = {job: rule for job, rule in FINISHED.findall(output)}
    assert {"train", "llc", "run_tables", "figure"} <= set(finished.values())
    assert set(finished) <= set(submitted), finished  # every job ran as a SLURM job
    states = sacct_states(set(submitted.values()))
    assert states and set(states.values()) == {"COMPLETED"}, states
    assert (tmp_path / FIGURE).stat().st_size > 0
    on_slurm, local = tables(tmp_path / TINY_RESULTS), tables(finished_tiny.root / TINY_RESULTS)
    summary_rows = [path for path in on_slurm if path.startswith("runs/") and path.endswith("/summary.csv")]
    assert len(summary_rows) == 1 and on_slurm == {path: local[path] for path in on_slurm}  # the figure's one run


def test_a_failing_job_fails_the_workflow_and_shows_its_error(cluster, tmp_path):
    config = load(TINY)
    config["llc"]["step_size"] = 1.0e6  # every SGLD chain diverges: the LLC jobs must fail
    snakefile = copy_workflow(tmp_path)
    configfile = write_config(tmp_path, config)
    result = snakemake(
        FIGURE, *CI_OVERLAY, "--configfile", configfile, cwd=tmp_path, snakefile=snakefile, timeout=1800, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Error in rule llc" in output
    assert "SGLD chains diverged" in output
    assert SUBMITTED.search(output)
    assert not list(Path(tmp_path / TINY_RESULTS / "runs").glob("*/summary.csv"))  # no run's tables were written

"""Helpers shared by the workflow and end-to-end tests: the repository's paths and configs, running Snakemake on a
copy of the workflow."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from grokslt.workflow import plan

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "workflow" / "tiny.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TINY_RESULTS = "tiny results"  # the results path of TINY, relative to the working directory
# A machine whose cost coefficients make the planner's arithmetic easy to check by hand.
MACHINE = plan.Machine(train=(1e-4, 1e-9), chain=(1e-4, 1e-9), start=1.0, figure=3.0)


def bare_environment() -> dict[str, str]:
    """The environment without the virtual environment on PATH, as for `.venv/bin/snakemake` from a plain shell."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    return {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"} | {"PATH": path}


def snakemake(*args, cwd: Path, snakefile: Path = REPO / "Snakefile", timeout: int = 600, check: bool = True):
    """Run Snakemake on a workflow copy. It runs in a process group of its own, which a timeout or any other
    exception (Ctrl-C included) kills with every local job it started, since they stay in its group: a stuck run
    never goes on loading the machine under the next tests. Jobs it submitted to SLURM are not in the group."""
    command = [SNAKEMAKE, "-s", str(snakefile), *map(str, args)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(command, cwd=cwd, env=bare_environment(), start_new_session=True, **pipes) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException as error:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate(timeout=60)
            if isinstance(error, subprocess.TimeoutExpired):
                raise subprocess.TimeoutExpired(command, timeout, stdout, stderr) from None
            raise
    if check and process.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(map(str, args))} failed:\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def job_counts(output: str) -> dict[str, int]:
    lines = output.split("Job stats:")[1].splitlines()[3:]
    counts = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def quick() -> dict:
    return load(REPO / "config" / "quick.yaml")


def write_config(tmp_path: Path, config: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def copy_workflow(destination: Path) -> Path:
    """A copy of the workflow files, so that a test may edit a figure module without touching the repo."""
    shutil.copy(REPO / "Snakefile", destination / "Snakefile")
    shutil.copytree(REPO / "workflow", destination / "workflow")
    shutil.copytree(REPO / "profiles", destination / "profiles")
    shutil.copytree(REPO / "envs", destination / "envs")
    shutil.copytree(REPO / "reference", destination / "reference")
    shutil.copytree(REPO / "src" / "grokslt" / "figures", destination / "src" / "grokslt" / "figures")
    return destination / "Snakefile"


def tables(results: Path) -> dict[str, list[list[str]]]:
    """Every CSV the workflow wrote, by relative path, without the columns that time a computation
    (`seconds`, `reference_seconds`: wall clock, never the same twice)."""
    import csv

    out = {}
    for path in sorted(results.rglob("*.csv")):
        rows = list(csv.reader(path.read_text().splitlines()))
        kept = [i for i, name in enumerate(rows[0] if rows else []) if not name.endswith("seconds")]
        out[str(path.relative_to(results))] = [[row[i] for i in kept if i < len(row)] for row in rows]
    return out

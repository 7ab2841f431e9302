import json
import os
import resource
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
from filelock import FileLock


@pytest.fixture(autouse=True)
def _one_thread_and_double_checks():
    torch.set_num_threads(1)
    yield


class FinishedTiny(NamedTuple):
    root: Path
    snakefile: Path
    cpu_seconds: float  # the CPU time of Snakemake and every job it ran (load on the machine barely changes it)


def shared_directory(tmp_path_factory) -> Path:
    """One directory for every pytest process of this test session: the one scripts/test.sh names, else the
    parent of the xdist workers' base directories, else this session's own."""
    if os.environ.get("GROKSLT_TEST_SHARED"):
        return Path(os.environ["GROKSLT_TEST_SHARED"])
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="session")
def finished_tiny(tmp_path_factory) -> FinishedTiny:
    """The tiny configuration run to the end, locally, in a copy of the workflow: once per test session,
    whichever worker or process asks first (the others wait for it and read it)."""
    shared = shared_directory(tmp_path_factory)
    root = shared / "finished_tiny"
    record = shared / "finished_tiny.json"
    with FileLock(shared / "finished_tiny.lock"):
        if not record.exists():
            record.write_text(json.dumps(build_tiny(root)))
    outcome = json.loads(record.read_text())
    if "failure" in outcome:  # one failed build fails every test that reads it, at once, with its message
        pytest.fail(f"the shared tiny run failed: {outcome['failure']}")
    return FinishedTiny(root, root / "Snakefile", outcome["cpu_seconds"])


def build_tiny(root: Path) -> dict:
    """Run the tiny workflow in `root` (a leftover of an interrupted session is removed first); its CPU time, or
    why it failed. The timeout is generous: a loaded machine (CI's, or one running a paper-scale job beside the
    tests) has taken over 10 minutes for what takes 3 on a quiet one."""
    from workflow_support import TINY, copy_workflow, snakemake

    before = children_cpu_seconds()
    try:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        snakefile = copy_workflow(root)
        snakemake("--cores", "2", "--configfile", TINY, cwd=root, snakefile=snakefile, timeout=1800)
    except subprocess.TimeoutExpired as error:
        return {"failure": f"{error}\n{error.stdout}\n{error.stderr}"[-4000:]}
    except Exception as error:  # recorded, so that the waiting processes do not each build it again
        return {"failure": f"{type(error).__name__}: {error}"[-4000:]}
    return {"cpu_seconds": children_cpu_seconds() - before}

import json
import os
import resource
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
    from workflow_support import TINY, copy_workflow, snakemake

    shared = shared_directory(tmp_path_factory)
    root = shared / "finished_tiny"
    record = shared / "finished_tiny.json"
    with FileLock(shared / "finished_tiny.lock"):
        if not record.exists():
            root.mkdir()
            snakefile = copy_workflow(root)
            before = children_cpu_seconds()
            snakemake("--cores", "2", "--configfile", TINY, cwd=root, snakefile=snakefile)
            record.write_text(json.dumps({"cpu_seconds": children_cpu_seconds() - before}))
    return FinishedTiny(root, root / "Snakefile", json.loads(record.read_text())["cpu_seconds"])

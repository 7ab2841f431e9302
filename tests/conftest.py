import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread_and_double_checks():
    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def finished_tiny(tmp_path_factory):
    """The tiny configuration run to the end, locally, in a copy of the workflow."""
    import time

    from workflow_support import TINY, copy_workflow, snakemake

    root = tmp_path_factory.mktemp("tiny")
    snakefile = copy_workflow(root)
    started = time.time()
    snakemake("--cores", "2", "--configfile", TINY, cwd=root, snakefile=snakefile)
    return root, snakefile, time.time() - started

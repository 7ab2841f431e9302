"""The process set-up every command goes through: subnormal floats flushed (or not), in torch and in
the compiled kernels, without changing what a run logs."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from grokslt import cpu_kernels, runtime
from grokslt.training.train import TrainConfig, train

SMALLEST_NORMAL = torch.finfo(torch.float32).tiny


@pytest.fixture
def restore_mode():
    yield
    runtime.set_subnormals("ieee")  # the state of a fresh process, as the other tests expect


def subnormal_product() -> float:
    return (torch.tensor([SMALLEST_NORMAL / 8]) * torch.tensor([1.0])).item()


def test_configure_flushes_subnormals_in_torch_and_in_the_kernels(restore_mode, monkeypatch):
    monkeypatch.delenv(runtime.SUBNORMALS_ENV, raising=False)
    runtime.configure(1)
    assert subnormal_product() == 0.0
    if cpu_kernels.library() is not None:
        assert cpu_kernels.library().subnormals_flushed() == 1
    monkeypatch.setenv(runtime.SUBNORMALS_ENV, "ieee")
    runtime.configure(1)
    assert subnormal_product() == SMALLEST_NORMAL / 8
    if cpu_kernels.library() is not None:
        assert cpu_kernels.library().subnormals_flushed() == 0


def test_an_unknown_mode_is_named(monkeypatch):
    monkeypatch.setenv(runtime.SUBNORMALS_ENV, "fast")
    with pytest.raises(ValueError, match="GROKSLT_SUBNORMALS = 'fast': expected one of"):
        runtime.configure(1)


def test_threads_started_after_configure_flush_too(restore_mode):
    code = (
        "import torch; from grokslt import runtime; runtime.configure(2);"
        "x = torch.full((4_000_000,), torch.finfo(torch.float32).tiny / 8); print(int(((x * 1.0) != 0).sum()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"


@pytest.mark.slow
@pytest.mark.paper
def test_flushing_leaves_the_baseline_log_unchanged(restore_mode, tmp_path):
    """The paper's baseline (p 53, K 1024, 15,900 steps to its early stop: the authors' retrace) logs
    the same bytes with subnormals flushed and with IEEE subnormals."""
    logs = {}
    for mode in ("ieee", "flush"):
        runtime.set_subnormals(mode)
        trainer = train(TrainConfig(), tmp_path / mode)
        logs[mode] = (tmp_path / mode / "train_log.csv").read_bytes()
    assert trainer.step == 15900
    assert logs["ieee"] == logs["flush"]

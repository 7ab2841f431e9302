"""Processes killed mid-way and run side by side (issue 44's red team): a SIGKILL in the middle of an LLC chunk or
a calibration leaves nothing a rerun trusts, and the rerun writes the same bytes, seals included, as a run that was
never killed; two trainings of one run directory at once leave the run of one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # each starts two to four commands of 2-10 s in their own processes

TRAIN = ["--p", "7", "--hidden", "8", "--lr", "1e-2", "--batch-size", "16", "--eval-every", "50", "--no-early-stop"]
CALIBRATE = ["--step", "final", "--step-sizes", "1e-4,3e-4", "--nbetas", "10", "--localizations", "5",
             "--num-burnin", "5", "--num-draws", "40", "--report-only"]  # fmt: skip


def grokslt(*args) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "grokslt", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def killed_when(args: list, ready=None, logged: str | None = None) -> None:
    """Start `grokslt args`, SIGKILL it as soon as `ready()` holds or it has logged a line with `logged`, and
    wait for it."""
    process = subprocess.Popen([sys.executable, "-m", "grokslt", *map(str, args)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 300
    while not (ready() if ready else logged in process.stderr.readline()):
        assert process.poll() is None, "finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.02 if ready else 0)
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kills") / "run"
    assert grokslt("train", *TRAIN, "--max-steps", "200", "--out", out).returncode == 0
    return out


def files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_an_llc_job_killed_mid_chunk_then_rerun_writes_the_bytes_and_seal_of_an_unbroken_one(run, tmp_path):
    args = ["llc", "--run", run, "--num-burnin", "5", "--num-draws", "2000", "--traces"]
    killed_out = tmp_path / "killed"
    killed_when([*args, killed_out / "t.npz", "--out", killed_out / "llc.csv"], logged="llc at step 50")
    assert not killed_out.exists()  # nothing written, not even the directory
    assert grokslt(*args, killed_out / "t.npz", "--out", killed_out / "llc.csv").returncode == 0
    assert grokslt(*args, tmp_path / "whole/t.npz", "--out", tmp_path / "whole/llc.csv").returncode == 0
    assert files(killed_out) == files(tmp_path / "whole")


def test_a_calibration_killed_mid_grid_then_rerun_gives_the_same_choice_and_estimates(run, tmp_path):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    killed_when(["calibrate", "--run", run, *CALIBRATE, "--out", killed], logged="llc at step")  # the first point
    assert not (killed / "calibration.json").exists()  # killed before it wrote anything a later job trusts
    for out in (killed, whole):
        assert grokslt("calibrate", "--run", run, *CALIBRATE, "--out", out).returncode == 0
    timed = ["seconds"]
    tables = [pd.read_csv(out / "calibration.csv").drop(columns=timed) for out in (killed, whole)]
    pd.testing.assert_frame_equal(*tables)
    reports = [(out / "calibration.json").read_text().splitlines() for out in (killed, whole)]
    assert [line for line in reports[0] if '"seconds"' not in line and '"run"' not in line] == [
        line for line in reports[1] if '"seconds"' not in line and '"run"' not in line
    ]


def test_a_training_killed_after_a_checkpoint_is_refused_naming_that_step(tmp_path):
    run = tmp_path / "run"
    killed_when(["train", *TRAIN, "--max-steps", "100000", "--out", run],
                lambda: (run / "checkpoints" / "step_0000200.safetensors").exists())  # fmt: skip
    result = grokslt("llc", "--run", run, "--out", tmp_path / "llc.csv")
    assert result.returncode == 2
    stopped = int(result.stderr.split("training stopped at step ")[1].split()[0])
    assert stopped >= 150  # its last saved evaluation (200's checkpoint may be written, its record not yet), not 0


def test_two_trainings_of_one_directory_at_once_give_the_run_of_one(tmp_path):
    run, alone = tmp_path / "run", tmp_path / "alone"
    args = [sys.executable, "-m", "grokslt", "train", *TRAIN, "--max-steps", "400"]
    processes = [subprocess.Popen([*args, "--out", str(run)], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [(process.wait(timeout=600), process.stderr.read()) for process in processes]
    assert grokslt("train", *TRAIN, "--max-steps", "400", "--out", alone).returncode == 0
    assert [status for status, _ in outcomes] == [0, 0], outcomes  # each writes the same bytes, atomically
    for name in ("train_log.csv", "checkpoints/step_0000400.safetensors"):
        assert (run / name).read_bytes() == (alone / name).read_bytes()
    assert grokslt("llc", "--run", run, "--steps", "400", "--num-draws", "40", "--out", run / "llc.csv").returncode == 0
    assert os.path.exists(run / "llc.csv")

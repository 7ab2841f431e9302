"""Fault injection: what a careless or hostile user, a full disk or a killed job does to the commands
and the workflow. Each case asserts the exit status, that the error is one line naming the file or
key (no traceback), and that nothing half-written is left where a rerun would trust it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from workflow_support import TINY, load, snakemake, write_config

pytestmark = pytest.mark.slow  # about 25 commands of 2-5 s each

TRAIN = ["--p", "7", "--hidden", "8", "--lr", "1e-2", "--batch-size", "16", "--eval-every", "20"]
FAST_LLC = ["--num-burnin", "5", "--num-draws", "20"]


def grokslt(*args, env: dict | None = None, timeout: int = 300, prefix: list[str] | None = None):
    command = [*(prefix or []), sys.executable, "-m", "grokslt", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def error_line(result) -> str:
    """The command's error: its last line on stderr, which must be its only error line."""
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    assert lines and lines[-1].startswith("grokslt "), result.stderr
    assert sum(": error: " in line for line in lines) == 1, result.stderr
    return lines[-1]


def leftovers(directory: Path) -> list[str]:
    """Temporary files of atomic writes left in `directory` (and below)."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob(".*.tmp"))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faults") / "run"
    assert grokslt("train", *TRAIN, "--max-steps", "200", "--no-early-stop", "--out", out).returncode == 0
    return out


def copy_run(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


# -- the table -----------------------------------------------------------------------------------


def test_exploding_training_stops_and_is_recorded(tmp_path):
    result = grokslt("train", *TRAIN, "--lr", "1e3", "--max-steps", "200", "--out", tmp_path / "run")
    assert result.returncode == 0
    assert "diverged at step 20" in result.stdout and "training diverged at step 20" in result.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()
    for command in ("llc", "hessian"):
        skipped = grokslt(command, "--run", tmp_path / "run", "--out", tmp_path / f"{command}.csv")
        assert skipped.returncode == 0 and "training diverged at step 20; 0 checkpoints" in skipped.stderr
        assert (tmp_path / f"{command}.csv").read_text().count("\n") == 1  # the header alone
    refused = grokslt("llc", "--run", tmp_path / "run", "--steps", "20", "--out", tmp_path / "x.csv")
    assert refused.returncode == 2 and "--steps 20: training diverged there" in error_line(refused)


def test_sgld_chains_that_all_diverge_fail_in_one_line(run, tmp_path):
    result = grokslt("llc", "--run", run, "--steps", "200", "--step-size", "10", *FAST_LLC, "--out", tmp_path / "x.csv")
    assert result.returncode == 1
    assert "checkpoint step 200: all 3 SGLD chains diverged" in error_line(result)
    assert not (tmp_path / "x.csv").exists()


def test_a_truncated_checkpoint_is_named(run, tmp_path):
    copy = copy_run(run, tmp_path)
    checkpoint = copy / "checkpoints" / "step_0000100.safetensors"
    checkpoint.write_bytes(checkpoint.read_bytes()[:50])
    result = grokslt("llc", "--run", copy, "--steps", "100", *FAST_LLC, "--out", tmp_path / "x.csv")
    assert result.returncode == 2
    assert f"{checkpoint}: not the checkpoint training wrote" in error_line(result)  # its checksum, run.json's


def test_a_checkpoint_of_another_model_size_is_named(run, tmp_path):
    copy = copy_run(run, tmp_path)
    other = tmp_path / "other"
    grokslt("train", *TRAIN, "--hidden", "4", "--max-steps", "20", "--out", other)
    shutil.copy(other / "checkpoints" / "step_0000020.safetensors", copy / "checkpoints" / "step_0000020.safetensors")
    result = grokslt("hessian", "--run", copy, "--steps", "20", "--out", tmp_path / "x.csv")
    assert result.returncode == 2
    assert "step_0000020.safetensors: not the checkpoint training wrote" in error_line(result)


def test_a_dataset_of_another_p_is_named(tmp_path):
    assert (
        grokslt("dataset", "--p", "11", "--train-frac", "0.4", "--seed", "0", "--out", tmp_path / "d.npz").returncode
        == 0
    )
    result = grokslt("train", *TRAIN, "--max-steps", "20", "--dataset", tmp_path / "d.npz", "--out", tmp_path / "run")
    assert result.returncode == 2 and "dataset with p = 11" in error_line(result)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    result = grokslt("train", *TRAIN, "--max-steps", "20", "--dataset", tmp_path / "bad.npz", "--out", tmp_path / "r")
    assert result.returncode == 2 and "bad.npz: not a dataset" in error_line(result)


def test_a_corrupt_resume_state_is_named(tmp_path):
    grokslt("train", *TRAIN, "--max-steps", "40", "--out", tmp_path / "run")
    (tmp_path / "run" / "resume.pt").write_bytes(b"\x00" * 10)
    result = grokslt("train", *TRAIN, "--max-steps", "60", "--out", tmp_path / "run")
    assert result.returncode == 2 and "resume.pt: not a readable torch file" in error_line(result)


def in_private_mount(options: str) -> list[str] | None:
    """A command prefix that runs in a user and mount namespace with a small tmpfs on $MOUNT (filled up
    where it is writable), or None where such namespaces are not allowed."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        return None
    fill = 'head -c 1000000 /dev/zero > "$MOUNT/filler" 2>/dev/null; '
    return ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o {options} tmpfs "$MOUNT" && {fill}exec "$@"', "sh"]


@pytest.mark.parametrize(
    "options, status, message",
    [("size=64k", 1, "no space left on the device"), ("size=64k,ro", 2, "read-only file system")],
)
def test_an_output_on_a_full_or_read_only_file_system(run, tmp_path, options, status, message):
    prefix = in_private_mount(options)
    if prefix is None:
        pytest.skip("no user namespaces for a private tmpfs here")
    mount = tmp_path / "mnt"
    mount.mkdir()
    out = mount / "llc.csv"
    result = grokslt(
        "llc", "--run", run, *FAST_LLC, "--traces", mount / "traces.npz", "--out", out,
        env={"MOUNT": str(mount)}, prefix=prefix,
    )  # fmt: skip
    assert result.returncode == status
    line = error_line(result)
    assert message in line and str(mount) in line


def test_permission_denied_names_the_file(run, tmp_path):
    """As root, the command runs as `nobody` (root ignores permissions) on a copy of the run that it may read."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root without setpriv: permissions are not enforced")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    shared = Path(tempfile.mkdtemp(prefix="grokslt-faults-", dir="/tmp"))
    try:
        readable = shutil.copytree(run, shared / "run")
        locked = shared / "locked"
        locked.mkdir()
        for path in [shared, *shared.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        locked.chmod(0o555)
        env = {"GROKSLT_CACHE_DIR": str(shared / "cache")}
        result = grokslt(
            "hessian", "--run", readable, "--steps", "20", "--out", locked / "h.csv", prefix=prefix, env=env
        )
        assert result.returncode == 2
        assert f"{locked / 'h.csv'}: permission denied" in error_line(result)
    finally:
        shutil.rmtree(shared)


def test_missing_inputs_and_directories_are_named(tmp_path):
    result = grokslt("llc", "--run", tmp_path / "nope", "--out", tmp_path / "x.csv")
    assert result.returncode == 2 and "no run.json there" in error_line(result)
    result = grokslt("train", *TRAIN, "--max-steps", "20", "--dataset", tmp_path / "none.npz", "--out", tmp_path / "r")
    assert result.returncode == 2 and f"{tmp_path / 'none.npz'}: no such file or directory" in error_line(result)
    (tmp_path / "file").write_text("")
    result = grokslt("train", *TRAIN, "--max-steps", "20", "--out", tmp_path / "file" / "run")
    assert result.returncode == 2 and "a parent of this path is a file" in error_line(result)


def test_bad_settings_and_other_settings_in_a_run_directory(tmp_path):
    result = grokslt("train", *TRAIN, "--p", "91", "--out", tmp_path / "run")
    assert result.returncode == 2 and "p = 91: expected a prime" in error_line(result)
    grokslt("train", *TRAIN, "--max-steps", "40", "--out", tmp_path / "run")
    result = grokslt("train", *TRAIN, "--hidden", "16", "--max-steps", "40", "--out", tmp_path / "run")
    assert result.returncode == 2 and "other settings (hidden 8 -> 16)" in error_line(result)


def test_raising_max_steps_resumes_the_run(tmp_path):
    grokslt("train", *TRAIN, "--max-steps", "40", "--no-early-stop", "--out", tmp_path / "run")
    result = grokslt("train", *TRAIN, "--max-steps", "80", "--no-early-stop", "--out", tmp_path / "run")
    assert result.returncode == 0 and "resuming" in result.stderr and "at step 80" in result.stdout


def test_debug_shows_the_traceback(tmp_path):
    result = grokslt("llc", "--run", tmp_path / "nope", "--out", tmp_path / "x.csv", "--debug")
    assert result.returncode != 0 and "Traceback" in result.stderr


# -- killed, concurrent and read-only ---------------------------------------------------------------------


@pytest.mark.parametrize("command", ["llc", "hessian"])
def test_a_job_killed_mid_chunk_leaves_nothing_a_rerun_trusts(run, tmp_path, command):
    extra = [*FAST_LLC[:2], "--num-draws", "1500"] if command == "llc" else ["--num-probes", "600"]
    args = [sys.executable, "-m", "grokslt", command, "--run", str(run), *extra, "--out", str(tmp_path / "out.csv")]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and "step 20" not in (line := process.stderr.readline()):
        assert line or process.poll() is None, "finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (tmp_path / "out.csv").exists()
    assert grokslt(command, "--run", run, *extra, "--out", tmp_path / "out.csv").returncode == 0
    assert grokslt(command, "--run", run, *extra, "--out", tmp_path / "again.csv").returncode == 0
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "again.csv").read_bytes()


def test_two_jobs_writing_one_output_at_once(run, tmp_path):
    out = tmp_path / "llc.csv"
    args = [sys.executable, "-m", "grokslt", "llc", "--run", str(run), *FAST_LLC, "--out", str(out)]
    processes = [subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    assert [process.wait(timeout=300) for process in processes] == [0, 0]
    assert grokslt("llc", "--run", run, *FAST_LLC, "--out", tmp_path / "alone.csv").returncode == 0
    assert out.read_bytes() == (tmp_path / "alone.csv").read_bytes()
    assert leftovers(tmp_path) == []


def test_an_unwritable_kernel_cache_still_gives_the_compiled_result(run, tmp_path):
    (tmp_path / "cache").write_text("a file where the cache directory should be")
    env = {"GROKSLT_CACHE_DIR": str(tmp_path / "cache" / "grokslt")}
    result = grokslt("llc", "--run", run, "--steps", "200", *FAST_LLC, "--out", tmp_path / "a.csv", env=env)
    assert result.returncode == 0 and "kernel cache" in result.stderr and "for this process only" in result.stderr
    assert grokslt("llc", "--run", run, "--steps", "200", *FAST_LLC, "--out", tmp_path / "b.csv").returncode == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert ",xoshiro128++," in (tmp_path / "a.csv").read_text()


# -- run integrity: a run is never silently wrong ---------------------------------------------------------


def test_training_a_finished_run_again_rewrites_its_log_and_record(run, tmp_path):
    copy = copy_run(run, tmp_path)
    log, record = (copy / "train_log.csv").read_bytes(), json.loads((copy / "run.json").read_text())
    (copy / "train_log.csv").unlink()
    (copy / "run.json").unlink()  # what `snakemake --forcerun train` does before the job
    result = grokslt("train", *TRAIN, "--max-steps", "200", "--no-early-stop", "--out", copy)
    assert result.returncode == 0, result.stderr
    assert (copy / "train_log.csv").read_bytes() == log
    rewritten = json.loads((copy / "run.json").read_text())
    assert rewritten["outcome"] == record["outcome"] and rewritten["log_sha256"] == record["log_sha256"]
    assert grokslt("llc", "--run", copy, "--steps", "200", *FAST_LLC, "--out", tmp_path / "llc.csv").returncode == 0


def test_a_run_killed_mid_training_is_refused_downstream(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "grokslt", "train", *TRAIN, "--max-steps", "100000", "--no-early-stop"]
    process = subprocess.Popen([*args, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and "step 100:" not in (line := process.stderr.readline()):
        assert line or process.poll() is None, "finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert json.loads((out / "run.json").read_text())["outcome"]["status"] == "training"
    for command in ("llc", "hessian"):
        result = grokslt(command, "--run", out, "--out", tmp_path / f"{command}.csv")
        message = error_line(result)
        assert result.returncode == 2 and "run.json: training stopped at step" in message, message
        assert "of 100000 without finishing" in message and "snakemake --forcerun train" in message
    result = grokslt("tables", "--id", "r", "--run", out, "--llc", tmp_path / "x.csv",
                     "--params-out", tmp_path / "p.csv", "--loss-out", tmp_path / "l.csv")  # fmt: skip
    assert result.returncode == 2 and "without finishing" in error_line(result)


def test_an_edited_training_log_is_refused(run, tmp_path):
    copy = copy_run(run, tmp_path)
    log = copy / "train_log.csv"
    log.write_text("\n".join(log.read_text().splitlines()[:-2]) + "\n")  # two evaluations dropped
    result = grokslt("llc", "--run", copy, "--out", tmp_path / "llc.csv")
    message = error_line(result)
    assert result.returncode == 2 and f"{log}: differs from the log training wrote" in message
    assert "rewrites the log and record from resume.pt" in message
    assert grokslt("train", *TRAIN, "--max-steps", "200", "--no-early-stop", "--out", copy).returncode == 0
    assert log.read_bytes() == (run / "train_log.csv").read_bytes()


def test_a_missing_logged_checkpoint_is_named(run, tmp_path):
    copy = copy_run(run, tmp_path)
    (copy / "checkpoints" / "step_0000100.safetensors").unlink()
    result = grokslt("llc", "--run", copy, "--steps", "200", *FAST_LLC, "--out", tmp_path / "llc.csv")
    message = error_line(result)
    assert result.returncode == 2 and "step_0000100.safetensors: logged at step 100 but missing" in message
    assert not (tmp_path / "llc.csv").exists()


def test_eval_every_past_max_steps_is_refused_in_one_line(tmp_path):
    result = grokslt("train", *TRAIN, "--eval-every", "500", "--max-steps", "200", "--out", tmp_path / "run")
    assert result.returncode == 2
    assert "eval_every = 500 > max_steps = 200" in error_line(result)
    # (the workflow's config check refuses it too: tests/workflow/test_config_errors.py)


@pytest.mark.parametrize("p, batch", [(7, 1000), (3, 4)])
def test_full_batch_and_p_3_give_an_exact_initial_loss_and_a_finite_mcse(tmp_path, p, batch):
    out = tmp_path / "run"
    train = ["--p", str(p), "--hidden", "8", "--lr", "1e-2", "--batch-size", str(batch), "--eval-every", "20"]
    assert grokslt("train", *train, "--max-steps", "40", "--no-early-stop", "--out", out).returncode == 0
    assert grokslt("llc", "--run", out, *FAST_LLC, "--out", tmp_path / "llc.csv").returncode == 0
    import pandas as pd

    table = pd.read_csv(tmp_path / "llc.csv")
    assert (table["init_loss_stderr"] == 0).all()
    assert table["mcse"].notna().all() and (table["mcse"] > 0).all()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--steps", ""], "--steps '': expected at least one step"),
        (["--steps", "100,100"], "--steps '100,100': step(s) [100] given more than once"),
        (["--chunk", "0/100"], "--chunk 0/100: 100 chunks of the run's 10 checkpoints; expected at most 10"),
        (["--device", "tpu"], "--device 'tpu': expected cpu, cuda or cuda:N"),
    ],
)
def test_empty_or_repeated_selections_and_unknown_devices_are_refused(run, tmp_path, flags, message):
    result = grokslt("llc", "--run", run, *FAST_LLC, *flags, "--out", tmp_path / "llc.csv")
    assert result.returncode == 2 and message in error_line(result)
    assert not (tmp_path / "llc.csv").exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a CUDA GPU is present")
def test_cuda_on_a_machine_without_one_is_refused_in_one_line(run, tmp_path):
    result = grokslt("llc", "--run", run, *FAST_LLC, "--device", "cuda", "--out", tmp_path / "llc.csv")
    assert result.returncode == 2 and "--device 'cuda': this torch" in error_line(result)
    assert "sees no CUDA GPU; use --device cpu" in error_line(result)


def test_results_that_is_a_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "taken").write_text("not a directory")
    config = load(TINY) | {"results": "taken"}
    result = snakemake("-n", "--configfile", write_config(tmp_path, config), cwd=tmp_path, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "results = 'taken': is a file; expected a directory" in output
    assert "Traceback" not in output


def test_a_second_workflow_on_one_results_directory_refuses_and_deletes_nothing(tmp_path):
    from grokslt.workflow import lock

    config = load(TINY) | {"results": str(tmp_path / "shared")}
    lock.acquire(tmp_path / "shared")  # a live workflow: this test's process
    try:
        (tmp_path / "shared" / "keep.txt").write_text("the other workflow's output")
        (tmp_path / "b").mkdir()
        result = snakemake("--cores", "1", "--configfile", write_config(tmp_path, config), cwd=tmp_path / "b",
                           check=False)  # fmt: skip
        output = result.stdout + result.stderr
        assert result.returncode != 0 and "another workflow (pid" in output and "is writing to this results" in output
        assert (tmp_path / "shared" / "keep.txt").exists() and not (tmp_path / "shared" / "runs").exists()
    finally:
        lock.release(tmp_path / "shared")
    assert not lock.lock_path(tmp_path / "shared").exists()


def test_a_lock_left_by_a_killed_workflow_is_taken_over(tmp_path):
    from grokslt.workflow import lock

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.acquire(tmp_path, pid=dead.pid)
    assert lock.acquire(tmp_path) == lock.lock_path(tmp_path)
    lock.release(tmp_path)
    assert not lock.lock_path(tmp_path).exists()


def test_gpu_true_asks_a_gpu_only_for_the_jobs_that_use_one(tmp_path):
    config = load(TINY) | {"gpu": True}
    result = snakemake("-n", "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    jobs = result.stdout.split("\nrule ")[1:]
    gpu_rules = {job.split(":")[0] for job in jobs if "gpu=1" in job}
    assert "train" not in gpu_rules and "run_tables" not in gpu_rules

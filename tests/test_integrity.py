"""No corrupted, truncated, edited or foreign file yields a number (issue 46).

A tiny run (p 7, K 8, 200 steps) is pushed through the commands in-process (train, llc with traces,
hessian, theory, tables, summary); each case damages one artefact in a copy and asserts the exit status
and the one line that names the file, the column and what to do."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest

from grokslt.cli import main

TRAIN = ["--p", "7", "--hidden", "8", "--lr", "1e-2", "--batch-size", "16", "--eval-every", "50", "--max-steps", "200",
         "--no-early-stop"]  # fmt: skip
LLC = ["--preset", "paper_code", "--backend", "native", "--seed", "0", "--num-burnin", "5", "--num-draws", "40"]
HESSIAN = ["--preset", "paper_code", "--seed", "0", "--num-probes", "2"]


def cli(capsys, *args) -> tuple[int, str]:
    """Run one command in this process: (exit status, its error line or '')."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        status = 0
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    return status, err.splitlines()[-1] if err else ""


def ok(*args) -> None:
    """Run one command that must succeed (its log goes to pytest's capture)."""
    main([str(a) for a in args])


def build(run: Path) -> None:
    ok("train", *TRAIN, "--out", run)
    ok("llc", "--run", run, *LLC, "--chunk", "0/2", "--out", run / "llc/chunk0of2.csv", "--traces",
       run / "llc/chunk0of2.npz")  # fmt: skip
    ok("llc", "--run", run, *LLC, "--chunk", "1/2", "--out", run / "llc/chunk1of2.csv", "--traces",
       run / "llc/chunk1of2.npz")  # fmt: skip
    ok("hessian", "--run", run, *HESSIAN, "--out", run / "hessian/chunk0of1.csv")
    ok("theory", "--run", run, "--out", run / "theory.csv")
    ok(*table_args(run))
    ok("summary", "--runs", run, "--out", run.parent / "summary.csv")


def tables(capsys, run: Path, llc: list[Path] | None = None) -> tuple[int, str]:
    return cli(capsys, *table_args(run, llc))


def table_args(run: Path, llc: list[Path] | None = None) -> list:
    llc = llc or [run / "llc/chunk0of2.csv", run / "llc/chunk1of2.csv"]
    return ["tables", "--id", run.name, "--run", run, "--llc", *llc, "--hessian",
               run / "hessian/chunk0of1.csv", "--theory", run / "theory.csv", "--params-out", run / "params.csv",
            "--loss-out", run / "loss_data.csv"]  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("integrity") / "run"
    build(run)
    return run


@pytest.fixture
def run(finished, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


def llc_of(capsys, run: Path) -> tuple[int, str]:
    return cli(capsys, "llc", "--run", run, *LLC, "--steps", "200", "--out", run.parent / "again.csv")


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))


def edit_record(run: Path, **config) -> None:
    record = json.loads((run / "run.json").read_text())
    record["config"].update(config)
    (run / "run.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


# -- the defects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["llc", "hessian"])
def test_a_corrupted_but_readable_checkpoint_is_refused(run, capsys, command):
    checkpoint = run / "checkpoints" / "step_0000200.safetensors"
    flip_byte(checkpoint, -97)  # an exponent bit of a weight: still a valid safetensors file
    args = LLC if command == "llc" else HESSIAN
    status, err = cli(capsys, command, "--run", run, *args, "--steps", "200", "--out", run.parent / "x.csv")
    assert status == 2
    assert str(checkpoint) in err and "checksum" in err and "train" in err
    assert not (run.parent / "x.csv").exists()


@pytest.mark.parametrize("edit", [{"seed": 1}, {"train_frac": 0.5}])
def test_an_edited_run_record_is_refused(run, capsys, edit):
    edit_record(run, **edit)
    status, err = llc_of(capsys, run)
    assert status == 2
    assert f"{run / 'run.json'}" in err and "edited" in err and "delete" in err


def test_a_truncated_loss_table_is_not_summarised(run, capsys):
    loss = run / "loss_data.csv"
    loss.write_bytes(loss.read_bytes()[:-250])
    status, err = cli(capsys, "summary", "--runs", run, "--out", run.parent / "s.csv")
    assert status == 2
    assert str(loss) in err and "`grokslt tables`" in err and "delete it" in err
    assert not (run.parent / "s.csv").exists()


def reseal(path: Path) -> None:
    """Rewrite a table's seal to its current bytes: the reader's own checks, behind the checksum, must hold."""
    from grokslt.artefacts import seal, seal_path, sha256

    stamp = json.loads(seal_path(path).read_text())
    seal(path, sha256(path.read_bytes()), stamp["writer"], stamp["run"])


def rewrite(path: Path, change) -> None:
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    change(table)
    table.to_csv(path, index=False)
    reseal(path)


@pytest.mark.parametrize("command", ["summary", "claims"])
def test_a_missing_llc_column_is_named(run, finished, capsys, command):
    rewrite(run / "loss_data.csv", lambda table: table.drop(columns="llc", inplace=True))
    if command == "summary":
        status, err = cli(capsys, "summary", "--runs", run, "--out", run.parent / "s.csv")
    else:
        status, err = cli(capsys, "claims", "--summary", finished.parent / "summary.csv", "--loss-data",
                          run / "loss_data.csv", "--out", run.parent / "c.csv")  # fmt: skip
    assert status == 2
    assert str(run / "loss_data.csv") in err and "'llc'" in err


@pytest.mark.parametrize("column", ["local", "converged"])
def test_blank_flags_do_not_read_as_true(run, capsys, column):
    def blank(table):
        table[column] = ""

    rewrite(run / "loss_data.csv", blank)
    status, err = cli(capsys, "summary", "--runs", run, "--out", run.parent / "s.csv")
    assert status == 2
    assert f"column {column!r} is blank at step" in err and str(run / "loss_data.csv") in err


def test_the_summary_fractions_read_the_flags_as_written(finished):
    summary = pd.read_csv(finished.parent / "summary.csv").iloc[0]
    loss = pd.read_csv(finished / "loss_data.csv")
    estimated = loss[loss["llc"].notna()]
    assert summary["local_fraction"] == pytest.approx((estimated["local"] == True).mean())  # noqa: E712
    assert summary["converged_fraction"] == pytest.approx((estimated["converged"] == True).mean())  # noqa: E712


def test_a_truncated_trace_file_is_named(run, capsys):
    traces = run / "llc/chunk0of2.npz"
    traces.write_bytes(traces.read_bytes()[:-100])
    status, err = cli(
        capsys,
        "figure",
        "diagnostics",
        "--loss-data",
        run / "loss_data.csv",
        "--params",
        run / "params.csv",
        "--traces",
        traces,
        run / "llc/chunk1of2.npz",
        "--out",
        run.parent / "fig",
    )
    assert status == 2
    assert str(traces) in err and "grokslt llc" in err


def test_a_chunk_given_twice_is_refused(run, capsys):
    chunk = run / "llc/chunk0of2.csv"
    status, err = tables(capsys, run, [chunk, chunk, run / "llc/chunk1of2.csv"])
    assert status == 2
    assert "also in" in err and str(chunk) in err


def test_another_runs_llc_table_is_refused(run, capsys, tmp_path):
    other = tmp_path / "other"
    ok("train", *TRAIN[:-3], "--max-steps", "200", "--seed", "1", "--no-early-stop", "--out", other)
    ok("llc", "--run", other, *LLC, "--out", other / "llc.csv")
    status, err = tables(capsys, run, [other / "llc.csv"])
    assert status == 2
    assert str(other / "llc.csv") in err and "another run" in err


def test_sensitivity_with_no_step_sizes_is_refused(run, capsys):
    status, err = cli(capsys, "sensitivity", "--run", run, "--step", "200", "--step-sizes", "", "--localizations", "1",
                      *LLC, "--out", run.parent / "s.csv")  # fmt: skip
    assert status == 2
    assert "--step-sizes" in err


# -- the weak cases ------------------------------------------------------------------------------


def test_train_out_on_an_existing_file_exits_2(capsys, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    status, err = cli(capsys, "train", *TRAIN, "--out", target)
    assert status == 2
    assert str(target) in err


def test_outputs_keep_the_users_umask(finished):
    for path in [finished / "run.json", finished / "loss_data.csv", finished / "checkpoints/step_0000200.safetensors",
                 finished / "llc/chunk0of2.npz"]:  # fmt: skip
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask(), path


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask

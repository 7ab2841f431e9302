"""No corrupted, truncated, edited or foreign file yields a number (issue 46).

A tiny run (p 7, K 8, 200 steps) is pushed through the commands in-process (train, llc with traces,
hessian, tables, summary); each case damages one artefact in a copy and asserts the exit status
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
    ok(*table_args(run))
    ok("summary", "--runs", run, "--out", run.parent / "summary.csv")


def tables(capsys, run: Path, llc: list[Path] | None = None) -> tuple[int, str]:
    return cli(capsys, *table_args(run, llc))


def table_args(run: Path, llc: list[Path] | None = None) -> list:
    llc = llc or [run / "llc/chunk0of2.csv", run / "llc/chunk1of2.csv"]
    return ["tables", "--id", run.name, "--run", run, "--llc", *llc, "--params-out", run / "params.csv",
            "--loss-out", run / "loss_data.csv"]


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


def claims_of(capsys, run: Path, finished: Path) -> tuple[int, str]:
    """`grokslt claims` on the run's loss table: a reader of loss_data.csv after `grokslt tables`."""
    return cli(capsys, "claims", "--summary", finished.parent / "summary.csv", "--loss-data", run / "loss_data.csv",
               "--out", run.parent / "c.csv")  # fmt: skip


def test_a_truncated_loss_table_is_not_read(run, finished, capsys):
    loss = run / "loss_data.csv"
    loss.write_bytes(loss.read_bytes()[:-250])
    status, err = claims_of(capsys, run, finished)
    assert status == 2
    assert str(loss) in err and "`grokslt tables`" in err and "delete it" in err
    assert not (run.parent / "c.csv").exists()


def test_a_truncated_summary_row_is_not_summarised(run, capsys):
    row = run / "summary.csv"
    row.write_bytes(row.read_bytes()[:-30])
    status, err = cli(capsys, "summary", "--runs", run, "--out", run.parent / "s.csv")
    assert status == 2
    assert f"{row}: not the bytes `grokslt tables` wrote" in err
    assert not (run.parent / "s.csv").exists()


def test_a_missing_summary_row_names_the_command_that_writes_it(run, capsys):
    (run / "summary.csv").unlink()
    status, err = cli(capsys, "summary", "--runs", run, "--out", run.parent / "s.csv")
    assert status == 2 and f"{run / 'summary.csv'}: missing; run `grokslt tables --run {run}`" in err


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


def test_a_missing_llc_column_is_named(run, finished, capsys):
    rewrite(run / "loss_data.csv", lambda table: table.drop(columns="llc", inplace=True))
    status, err = claims_of(capsys, run, finished)
    assert status == 2
    assert str(run / "loss_data.csv") in err and "'llc'" in err


@pytest.mark.parametrize("column", ["local", "converged"])
def test_blank_flags_do_not_read_as_true(run, finished, capsys, column):
    def blank(table):
        table[column] = ""

    rewrite(run / "loss_data.csv", blank)
    status, err = claims_of(capsys, run, finished)
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


# -- red team: new hostile and fault cases (issue 44), each with its expected outcome ------------------


def refused(capsys, *args) -> str:
    """The one error line of a command that must refuse its input (exit status 2)."""
    status, err = cli(capsys, *args)
    assert status == 2, err
    return err


def stamp_of(path: Path) -> dict:
    from grokslt.artefacts import seal_path

    return json.loads(seal_path(path).read_text())


def test_a_checkpoint_swapped_for_another_of_the_same_run_is_refused(run, capsys):
    """Same shapes, a valid file, the run's own weights: only the checksum tells step 100's from step 200's."""
    checkpoints = run / "checkpoints"
    shutil.copy(checkpoints / "step_0000100.safetensors", checkpoints / "step_0000200.safetensors")
    err = refused(capsys, *["llc", "--run", run, *LLC, "--steps", "200", "--out", run.parent / "x.csv"])
    assert "step_0000200.safetensors: not the checkpoint training wrote" in err


def test_a_corrupt_safetensors_header_is_refused(run, capsys):
    flip_byte(run / "checkpoints" / "step_0000050.safetensors", 12)  # inside the JSON header
    err = refused(capsys, "hessian", "--run", run, *HESSIAN, "--steps", "50", "--out", run.parent / "x.csv")
    assert "step_0000050.safetensors" in err and "delete" in err


def test_a_checkpoint_not_written_by_training_is_refused(run, capsys):
    shutil.copy(run / "checkpoints" / "step_0000200.safetensors", run / "checkpoints" / "step_0000250.safetensors")
    err = refused(capsys, "llc", "--run", run, *LLC, "--steps", "200", "--out", run.parent / "x.csv")
    assert "step_0000250.safetensors: not written by the run's training" in err


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda r: r.update(outcome={"status": "max_steps", "step": 10_000}), id="outcome"),
        pytest.param(lambda r: r["checkpoints_sha256"].update({"200": "0" * 64}), id="checkpoint checksum"),
        pytest.param(lambda r: r.update(log_sha256="0" * 64), id="log checksum"),
    ],
)
def test_any_edit_of_the_run_record_is_refused(run, capsys, edit):
    record = json.loads((run / "run.json").read_text())
    edit(record)
    (run / "run.json").write_text(json.dumps(record))
    assert "edited since training wrote it" in refused(capsys, *["llc", "--run", run, *LLC, "--out", run / "x.csv"])


def test_a_record_of_an_older_grokslt_asks_to_retrain(run, capsys):
    record = json.loads((run / "run.json").read_text())
    del record["record_sha256"], record["checkpoints_sha256"]
    (run / "run.json").write_text(json.dumps(record))
    err = refused(capsys, "llc", "--run", run, *LLC, "--out", run / "x.csv")
    assert "without checksums" in err and "snakemake --forcerun train" in err
    ok("train", *TRAIN, "--out", run)  # what the message says: the run's training, which records them
    ok("llc", "--run", run, *LLC, "--steps", "200", "--out", run / "x.csv")


def test_a_table_without_its_seal_or_with_a_garbled_seal_is_refused(run, capsys):
    from grokslt.artefacts import seal_path

    chunk = run / "llc/chunk0of2.csv"
    seal_path(chunk).unlink()  # as a job killed between writing its table and its seal leaves it
    assert f"{chunk}: no checksum beside it" in tables(capsys, run)[1]
    seal_path(chunk).write_text("{not json")
    assert "not a seal written by grokslt" in tables(capsys, run)[1]


def test_a_table_truncated_mid_row_names_the_command_that_rebuilds_it(run, capsys):
    chunk = run / "llc/chunk1of2.csv"
    chunk.write_bytes(chunk.read_bytes()[:-40])
    status, err = tables(capsys, run)
    assert status == 2 and f"{chunk}: not the bytes `grokslt llc` wrote" in err


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("local", "yes", "column 'local' holds 'yes', expected True or False"),
        ("step", "", "column 'step' holds blanks or non-integers"),
        ("llc", "n/a", "column 'llc' holds text where numbers belong"),
        ("diverged", "", "column 'diverged' is blank at step"),
    ],
)
def test_a_resealed_loss_table_must_still_hold_its_kind(run, finished, capsys, column, value, message):
    """Behind the checksum, the strict reader: a table sealed with wrong contents is refused by column."""

    def spoil(table):
        table.loc[0, column] = value

    rewrite(run / "loss_data.csv", spoil)
    status, err = claims_of(capsys, run, finished)
    assert status == 2, err
    assert message in err and str(run / "loss_data.csv") in err


def test_an_llc_table_with_steps_that_are_no_checkpoints_is_refused(run, capsys):
    rewrite(run / "llc/chunk0of2.csv", lambda table: table.__setitem__("step", table["step"].astype(int) + 1))
    status, err = tables(capsys, run)
    assert status == 2 and "no checkpoints of the run" in err


def test_chunks_of_two_different_splits_are_refused(run, capsys):
    ok("llc", "--run", run, *LLC, "--chunk", "0/1", "--out", run / "llc/chunk0of1.csv")
    status, err = tables(capsys, run, [run / "llc/chunk0of1.csv", run / "llc/chunk1of2.csv"])
    assert status == 2 and "also in" in err


def test_a_summary_row_copied_from_another_run_is_not_summarised(run, finished, capsys, tmp_path):
    twin = tmp_path / "twin"
    ok("train", *TRAIN[:-3], "--max-steps", "200", "--seed", "3", "--no-early-stop", "--out", twin)
    for name in ("summary.csv", "summary.csv.seal.json"):
        shutil.copy(finished / name, twin / name)
    err = refused(capsys, "summary", "--runs", twin, "--out", tmp_path / "s.csv")
    assert "computed from another run's checkpoints" in err


def test_an_edited_summary_row_is_not_summarised(run, capsys):
    row = run / "summary.csv"
    row.write_text(row.read_text().replace(",7,", ",11,", 1))
    assert "summary.csv: not the bytes `grokslt tables` wrote" in refused(
        capsys, "summary", "--runs", run, "--out", run.parent / "s.csv"
    )


def test_a_trace_file_missing_an_array_is_named(run, capsys):
    import numpy as np

    from grokslt.artefacts import seal
    from grokslt.io import save_npz

    traces = run / "llc/chunk0of2.npz"
    with np.load(traces) as arrays:
        kept = {name: arrays[name] for name in arrays.files if name != "loss_trace"}
    seal(traces, save_npz(traces, **kept), "grokslt llc", stamp_of(traces)["run"])
    err = refused(capsys, "figure", "diagnostics", "--loss-data", run / "loss_data.csv", "--params",
                  run / "params.csv", "--traces", traces, "--out", run.parent / "fig")  # fmt: skip
    assert f"{traces}: no array 'loss_trace'" in err


def test_truncated_pair_traces_are_named(run, capsys):
    ok("llc", "--run", run, *LLC, "--steps", "200", "--observe-every", "5", "--out", run / "traced.csv",
       "--pair-traces", run / "traces")  # fmt: skip
    nc = run / "traces" / "step000200.nc"
    nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
    err = refused(capsys, "waic", "--traces", run / "traces", "--out", run / "waic.csv")
    assert f"{nc}: not the bytes `grokslt llc --pair-traces` wrote" in err


NASTY = "rün ü; $(touch pwned) `id` 'q\" & | > <*?[]{}~#!"


def test_unicode_and_shell_metacharacters_in_every_name_a_user_types(tmp_path, capsys, monkeypatch):
    """Each name a user types (run directory, outputs, run id, experiment) goes through every command as
    given: nothing is run by a shell, nothing is written outside it, and the tables are what a plain name gives."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / NASTY / NASTY
    build(run)
    ok("summary", "--runs", run, "--experiment", f"expé={run.name}", "--out", run.parent / f"{NASTY}.csv")
    assert not list(tmp_path.rglob("pwned"))
    summary = pd.read_csv(run.parent / f"{NASTY}.csv")
    assert summary["run"].tolist() == [NASTY] and summary["experiments"].tolist() == ["expé"]


def test_outputs_in_a_read_only_results_directory_fail_in_one_line(finished, tmp_path):
    """A results directory mounted read-only (a private mount namespace; root ignores file modes)."""
    import os
    import subprocess
    import sys

    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no user namespaces for a private read-only mount here")
    results = shutil.copytree(finished, tmp_path / "run")
    shell = 'mount --bind "$RUN" "$RUN" && mount -o remount,bind,ro "$RUN" && exec "$@"'
    command = ["unshare", "-rm", "sh", "-c", shell, "sh", sys.executable, "-m", "grokslt", *table_args(results)]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "RUN": str(results)})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("read-only file system: choose an output path on a "
                                                           "writable file system")  # fmt: skip
    assert (results / "loss_data.csv").read_bytes() == (finished / "loss_data.csv").read_bytes()


def test_a_corrupted_initial_network_is_refused(run):
    """init.safetensors, which the estimator accuracy study estimates at, carries its checksum in run.json too."""
    from grokslt.errors import BadInput
    from grokslt.training.runs import load_run

    flip_byte(run / "init.safetensors", -5)
    with pytest.raises(BadInput, match="init.safetensors: not the checkpoint training wrote"):
        load_run(run).load_init()

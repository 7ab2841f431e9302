"""The command line as the workflow calls it: train, then llc / hessian / theory on the run."""

import subprocess
import sys

import pandas as pd
import pytest

from grokslt.cli import COMMANDS, main


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    main(
        [
            "train",
            "--p",
            "7",
            "--hidden",
            "16",
            "--lr",
            "1e-2",
            "--batch-size",
            "16",
            "--max-steps",
            "300",
            "--eval-every",
            "50",
            "--no-early-stop",
            "--out",
            str(out),
        ]
    )
    return out


FAST_LLC = ["--num-draws", "30", "--num-burnin", "5"]


def test_llc_chunks_together_equal_the_whole_run(tiny_run, tmp_path):
    main(
        [
            "llc",
            "--run",
            str(tiny_run),
            *FAST_LLC,
            "--out",
            str(tmp_path / "all.csv"),
            "--traces",
            str(tmp_path / "all.npz"),
        ]
    )
    parts = []
    for i in range(3):
        main(["llc", "--run", str(tiny_run), *FAST_LLC, "--chunk", f"{i}/3", "--out", str(tmp_path / f"{i}.csv")])
        parts.append(pd.read_csv(tmp_path / f"{i}.csv"))
    whole = pd.read_csv(tmp_path / "all.csv")
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    main(["llc", "--run", str(tiny_run), *FAST_LLC, "--stack", "4", "--out", str(tmp_path / "stacked.csv")])
    stacked = pd.read_csv(tmp_path / "stacked.csv")
    pd.testing.assert_frame_equal(stacked.drop(columns="llc_mean"), whole.drop(columns="llc_mean"), rtol=1e-4)
    assert ((stacked.llc_mean - whole.llc_mean).abs() < 1e-3 * whole.llc_mean.abs()).all()
    assert whole["step"].tolist() == [50, 100, 150, 200, 250, 300]
    assert {"llc_mean", "llc_std", "llc_chain_2", "init_loss", "llc_drift", "n_diverged", "backend"} <= set(whole)
    import numpy as np

    traces = np.load(tmp_path / "all.npz")
    assert traces["loss_trace"].shape == (6, 3, 30)


def test_hessian_and_theory_commands(tiny_run, tmp_path):
    main(
        [
            "hessian",
            "--run",
            str(tiny_run),
            "--steps",
            "100,300",
            "--num-probes",
            "50",
            "--out",
            str(tmp_path / "h.csv"),
        ]
    )
    table = pd.read_csv(tmp_path / "h.csv")
    assert table["step"].tolist() == [100, 300]
    assert ((table.trace_hutchinson - table.trace_exact).abs() < 5 * table.trace_stderr).all()
    main(["theory", "--run", str(tiny_run), "--atom-rank-max", "16", "--out", str(tmp_path / "t.csv")])
    theory = pd.read_csv(tmp_path / "t.csv")
    assert (theory.K_eff <= 16).all() and theory.atom_rank_llc.notna().all()
    main(
        [
            "theory",
            "--out",
            str(tmp_path / "tables"),
            "--sizes",
            "7:16,53:1024",
            "--grid-p",
            "3",
            "--grid-K",
            "2,4",
            "--single-d",
            "3",
            "--single-K",
            "2",
        ]
    )
    assert len(pd.read_csv(tmp_path / "tables" / "formulas.csv")) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["llc", "--chunk", "3/2"], "--chunk '3/2': expected i/n"),
        (["llc", "--preset", "fast"], "preset = 'fast'"),
        (["llc", "--backend", "jax"], "backend = 'jax'"),
        (["llc", "--steps", "123"], "--steps [123]: no such checkpoints"),
        (["llc", "--num-draws", "0"], "num_draws = 0"),
        (["hessian", "--preset", "many"], "preset = 'many'"),
    ],
)
def test_bad_arguments_fail_before_work_with_the_value_named(tiny_run, tmp_path, args, message):
    command = [
        sys.executable,
        "-m",
        "grokslt",
        args[0],
        "--run",
        str(tiny_run),
        *args[1:],
        "--out",
        str(tmp_path / "x.csv"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "x.csv").exists()


def test_missing_run_is_named(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "grokslt", "llc", "--run", str(tmp_path / "nope"), "--out", str(tmp_path / "x.csv")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "no run.json there" in result.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_prints_its_help(command, capsys):
    with pytest.raises(SystemExit) as exit:
        main([command, "--help"])
    assert exit.value.code == 0
    assert f"usage: grokslt {command}" in capsys.readouterr().out


def test_help_shows_examples_that_parse(capsys):
    import shlex

    from grokslt.cli import EXAMPLES, build_parser, split_commands

    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    assert "Examples" in capsys.readouterr().out
    commands = EXAMPLES.replace("\\\n", " ").splitlines()
    examples = [shlex.split(line)[1:] for line in commands if line.strip().startswith("grokslt ")]
    assert len(examples) >= 4
    for words in examples:
        if "--help" not in words:
            for command in split_commands(words):
                build_parser().parse_args(command)  # every flag of every example exists


def test_starting_a_command_imports_neither_arviz_nor_matplotlib():
    """Every workflow job is a `grokslt` process: its parser must not import ArviZ (with it xarray and
    scipy.stats) or matplotlib, which only the commands that diagnose chains or draw need
    (benchmarks/bench_startup.py: 1.86 times a bare torch import's CPU with them, 1.04 without)."""
    heavy = ("arviz_stats", "matplotlib", "xarray")
    code = (
        "import sys; from grokslt.cli import build_parser; build_parser(); "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_commands_joined_by_then_run_in_one_process_as_they_would_apart(tiny_run, tmp_path):
    """`llc ... --then hessian ...`: the same tables as two commands, one start."""
    llc = ["llc", "--run", str(tiny_run), *FAST_LLC, "--steps", "100,300"]
    hessian = ["hessian", "--run", str(tiny_run), "--steps", "100,300", "--num-probes", "5"]
    main([*llc, "--out", str(tmp_path / "llc.csv")])
    main([*hessian, "--out", str(tmp_path / "h.csv")])
    main([*llc, "--out", str(tmp_path / "llc2.csv"), "--then", *hessian, "--out", str(tmp_path / "h2.csv")])
    assert (tmp_path / "llc.csv").read_bytes() == (tmp_path / "llc2.csv").read_bytes()
    assert (tmp_path / "h.csv").read_bytes() == (tmp_path / "h2.csv").read_bytes()


def test_a_chain_is_parsed_whole_before_its_first_command_runs(tiny_run, tmp_path, capsys):
    """A mistyped flag in the last command refuses the chain before the first writes anything."""
    first = ["llc", "--run", str(tiny_run), *FAST_LLC, "--steps", "100", "--out", str(tmp_path / "first.csv")]
    with pytest.raises(SystemExit) as refused:
        main([*first, "--then", "hessian", "--run", str(tiny_run), "--num-probs", "5", "--out", "h.csv"])
    assert refused.value.code == 2 and "--num-probs" in capsys.readouterr().err
    assert not (tmp_path / "first.csv").exists()
    with pytest.raises(SystemExit) as empty:
        main([*first, "--then"])
    assert empty.value.code == 2 and not (tmp_path / "first.csv").exists()

"""Sampler calibration: the documented rule on synthetic grids, and the command on a small run."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from grokslt.estimation.calibration import calibrated_settings, choose
from grokslt.training.train import TrainConfig, train


def point(step, nbeta, gamma, llc, mcse=1.0, converged=True, diverged=0, local=True, checkpoint=100):
    return dict(step=checkpoint, step_size=step, nbeta=nbeta, localization=gamma, llc_mean=llc, mcse=mcse,
                converged=converged, n_diverged=diverged, r_hat=1.0, ess_bulk=1000.0, ess_tail=1000.0,
                local=local, loss_excess_fraction=0.01 if local else 5.0)  # fmt: skip


def test_a_step_stable_point_of_the_smallest_localization_is_chosen_with_its_extrapolation():
    rows = [
        point(1e-4, 20.0, 5.0, 100.0), point(2e-4, 20.0, 5.0, 101.0), point(4e-4, 20.0, 5.0, 130.0),  # 4e-4 moves
        point(1e-4, 20.0, 50.0, 10.0), point(2e-4, 20.0, 50.0, 10.1), point(4e-4, 20.0, 50.0, 10.2),
    ]  # fmt: skip
    best, failures = choose(rows, n=1000)
    assert (best["step_size"], best["localization"]) == (2e-4, 5.0)
    assert best["extrapolated"] == pytest.approx(99.0) and best["systematic"] == pytest.approx(2.0)
    assert "moves by 29 with the step (allowed 2.83: 2 combined MCSE)" in " ".join(failures[2])
    assert "no smaller step size" in " ".join(failures[0])


def test_the_smaller_of_two_stable_steps_is_preferred():
    rows = [point(e, 20.0, 5.0, 100.0) for e in (1e-4, 2e-4, 4e-4)]
    best, _ = choose(rows, n=1000)
    assert best["step_size"] == 2e-4


def test_unconverged_diverged_or_non_local_points_never_qualify_and_nothing_is_picked_silently():
    rows = [point(1e-4, 20.0, 5.0, 100.0, converged=False), point(2e-4, 20.0, 5.0, 100.0, diverged=1),
            point(1e-4, 20.0, 50.0, 10.0), point(2e-4, 20.0, 50.0, 10.0, local=False)]  # fmt: skip
    best, failures = choose(rows, n=1000)
    assert best is None
    assert "not converged" in " ".join(failures[0]) and "1 chains diverged" in " ".join(failures[1])
    assert "not local (loss excess 5 of the zero function's)" in " ".join(failures[3])


def test_a_step_ratio_outside_1_8_to_2_5_checks_no_stability():
    rows = [point(1e-4, 20.0, 5.0, 100.0), point(1.25e-4, 20.0, 5.0, 100.0)]
    best, failures = choose(rows, n=1000)
    assert best is None and "is 1.25x smaller, not 1.8-2.5x" in " ".join(failures[1])


def test_a_point_must_qualify_at_every_checkpoint():
    rows = [point(e, 20.0, 5.0, 100.0, checkpoint=100) for e in (1e-4, 2e-4)]
    rows += [point(1e-4, 20.0, 5.0, 50.0, checkpoint=900), point(2e-4, 20.0, 5.0, 60.0, checkpoint=900)]
    rows += [point(e, 20.0, 50.0, 10.0, checkpoint=c) for c in (100, 900) for e in (1e-4, 2e-4)]
    best, _ = choose(rows, n=1000)
    assert best["localization"] == 50.0  # gamma 5 moves with the step at checkpoint 900


def test_ties_in_localization_prefer_the_wbic_temperature():
    rows = [point(e, b, 5.0, 10.0) for b in (30.0, 150.0) for e in (1e-4, 2e-4)]
    best, _ = choose(rows, n=1000)  # n / ln n = 144.8
    assert best["nbeta"] == 150.0 and best["step_size"] == 2e-4


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibration") / "run"
    train(TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=50, max_steps=200), out)
    return out


def calibrate(run, out, *grid):
    command = [sys.executable, "-m", "grokslt", "calibrate", "--run", str(run), "--num-draws", "2000",
               "--num-chains", "4", "--num-burnin", "200", "--out", str(out), *grid]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_command_writes_its_grid_and_choice_and_llc_uses_it(small_run, tmp_path):
    grid = ["--step-sizes", "1.25e-5,2.5e-5,5e-5", "--nbetas", "1000", "--localizations", "3000"]
    done = calibrate(small_run, tmp_path, *grid, "--num-draws", "4000", "--num-burnin", "500")
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "calibration.csv")
    report = json.loads((tmp_path / "calibration.json").read_text())
    assert len(table) == 3 * len(report["steps"])
    assert {"r_hat", "ess_bulk", "mcse", "local", "passes", "extrapolated", "chosen", "why_not"} <= set(table)
    assert {report["chosen"]["step_size"]} == set(table.loc[table.chosen, "step_size"])
    assert "step-extrapolated" in report["rule"] and len(report["estimates"]) == len(report["steps"])
    settings = calibrated_settings(tmp_path / "calibration.json")
    llc = subprocess.run(
        [sys.executable, "-m", "grokslt", "llc", "--run", str(small_run), "--steps", "200", "--preset", "calibrated",
         "--calibration", str(tmp_path / "calibration.json"), "--out", str(tmp_path / "llc.csv")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert llc.returncode == 0, llc.stderr
    row = pd.read_csv(tmp_path / "llc.csv").iloc[0]
    assert row["preset"] == "calibrated" and row["step_size"] == settings.step_size and row["num_chains"] == 4


@pytest.mark.slow
def test_nothing_qualifying_fails_with_the_closest_candidates(small_run, tmp_path):
    done = calibrate(small_run, tmp_path, "--step-sizes", "5e-2,1e-1", "--nbetas", "20", "--localizations", "0")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "no grid point qualifies;" in last and "closest:" in last
    assert json.loads((tmp_path / "calibration.json").read_text())["chosen"] is None


@pytest.mark.parametrize(
    "grid, message",
    [
        (["--step-sizes", "", "--nbetas", "20", "--localizations", "5"], "--step-sizes: empty grid"),
        (["--step-sizes", "1e-4", "--nbetas", "20", "--localizations", "5", "--sampler", "hmc"], "invalid choice"),
        (["--step-sizes", "1e-4", "--nbetas", "20", "--localizations", "5", "--diffusion-factor", "0.1"],
         "a setting of sampler sgnht"),
        (["--step-sizes", "1e-4", "--nbetas", "20", "--localizations", "5", "--step", "123"], "no such checkpoints"),
    ],
)  # fmt: skip
def test_bad_grids_are_named_before_any_work(small_run, tmp_path, grid, message):
    done = calibrate(small_run, tmp_path, *grid)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "calibration.csv").exists()


def test_a_first_order_step_bias_larger_than_the_mcse_qualifies_with_its_extrapolation_and_a_curved_one_does_not():
    """Long local chains: MCSE 0.1, SGLD bias 25,000 eps (2.5% at eps 1e-4), larger than the MCSE. Linear in the
    step, the extrapolations from (2e-4, 1e-4) and (1e-4, 5e-5) agree at 100; quadratic, they do not."""
    steps = (5e-5, 1e-4, 2e-4, 4e-4)
    linear = [point(e, 1e4, 1e4, 100 + 25_000 * e, mcse=0.1) for e in steps]
    best, failures = choose(linear, n=1000)
    assert best["step_size"] == 2e-4 and best["extrapolated"] == pytest.approx(100.0)
    assert best["systematic"] == pytest.approx(5.0)
    assert "no third step" in " ".join(failures[1])
    curved = [point(e, 1e4, 1e4, 100 + 1e8 * e**2, mcse=0.1) for e in steps]
    best, failures = choose(curved, n=1000)
    assert best is None and "the bias is not first-order in the step" in " ".join(failures[2])

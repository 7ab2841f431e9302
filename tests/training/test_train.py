import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from grokslt.io import list_checkpoints, load_checkpoint
from grokslt.training.train import AuthorsBatchSampler, TrainConfig, train

TINY = dict(p=11, hidden=32, lr=1e-2, batch_size=16, eval_every=20, max_steps=200)


def test_batches_equal_a_fresh_dataloader_iterator_each_step():
    n, batch = 37, 8
    torch.manual_seed(3)
    loader = DataLoader(TensorDataset(torch.arange(n)), batch_size=batch, shuffle=True)
    generator = torch.Generator()
    generator.set_state(torch.get_rng_state())
    sampler = AuthorsBatchSampler(n, batch, generator)
    for _ in range(5):
        (reference,) = next(iter(loader))
        assert torch.equal(sampler(), reference)


def test_first_evaluation_retraces_the_authors_logged_row(tmp_path):
    """The authors' flatness_test log, first row (step 100): before their in-loop LLC estimate first
    draws from the global RNG, our run must coincide with theirs."""
    config = TrainConfig(max_steps=100)
    row = train(config, tmp_path).rows[0]
    assert row["samples_seen"] == 12800
    assert row["train_acc"] == pytest.approx(0.22439893143365983, abs=1e-12)
    assert row["val_acc"] == pytest.approx(0.0071174377224199285, abs=1e-12)
    assert row["train_loss_authors"] == pytest.approx(0.00912549954989157, rel=1e-5)
    assert row["val_loss_authors"] == pytest.approx(0.00929759813567639, rel=1e-5)


def test_checkpoints_and_log_rows_per_evaluation(tmp_path):
    trainer = train(TrainConfig(**TINY, early_stop=False), tmp_path)
    steps = [row["step"] for row in trainer.rows]
    assert steps == list(range(20, 201, 20))
    assert list(list_checkpoints(tmp_path / "checkpoints")) == steps
    last = load_checkpoint(list_checkpoints(tmp_path / "checkpoints")[200])
    assert torch.equal(last["W"], trainer.model.W.detach())
    assert (tmp_path / "init.safetensors").exists()


def test_early_stop_after_patience_evaluations(tmp_path):
    config = TrainConfig(**TINY | {"max_steps": 5000}, early_stop_threshold=0.01, early_stop_patience=3)
    trainer = train(config, tmp_path)
    assert trainer.step == 60
    assert all(row["val_acc"] >= 0.01 for row in trainer.rows)


def test_a_dense_early_schedule_stops_where_the_regular_one_does(tmp_path):
    """Patience counts regular evaluations, as in the authors' logs: three dense evaluations at the
    threshold do not stop the run at step 30."""
    rule = dict(early_stop_threshold=0.01, early_stop_patience=3)
    dense = train(TrainConfig(**TINY | {"max_steps": 5000}, dense_until=100, dense_every=10, **rule), tmp_path / "d")
    regular = train(TrainConfig(**TINY | {"max_steps": 5000}, **rule), tmp_path / "r")
    assert dense.step == regular.step == 60


def test_finished_run_is_not_trained_again(tmp_path):
    config = TrainConfig(**TINY, early_stop=False)
    train(config, tmp_path)
    before = (tmp_path / "train_log.csv").read_bytes()
    assert train(config, tmp_path).step == 200
    assert (tmp_path / "train_log.csv").read_bytes() == before


def test_resume_refuses_other_settings(tmp_path):
    train(TrainConfig(**TINY, early_stop=False), tmp_path)
    with pytest.raises(ValueError, match=r"other settings \(lr 0.01 -> 0.5\)"):
        train(TrainConfig(**TINY | {"lr": 0.5}, early_stop=False), tmp_path)
    with pytest.raises(ValueError, match="past max_steps = 100"):
        train(TrainConfig(**TINY | {"max_steps": 100}, early_stop=False), tmp_path)


@pytest.mark.parametrize("first_max_steps", [120, 130])
def test_raising_max_steps_extends_a_run_as_if_trained_at_once(first_max_steps, tmp_path):
    """Also when the first run ended between evaluations (its closing evaluation is dropped)."""
    train(TrainConfig(**TINY, early_stop=False), tmp_path / "once")
    train(TrainConfig(**TINY | {"max_steps": first_max_steps}, early_stop=False), tmp_path / "twice")
    trainer = train(TrainConfig(**TINY, early_stop=False), tmp_path / "twice")
    assert trainer.step == 200
    for name in ("train_log.csv", "checkpoints/step_0000200.safetensors"):
        assert (tmp_path / "twice" / name).read_bytes() == (tmp_path / "once" / name).read_bytes()
    assert list(list_checkpoints(tmp_path / "twice" / "checkpoints")) == list(range(20, 201, 20))


def test_a_new_early_stop_rule_continues_only_a_consistent_log(tmp_path):
    stop = dict(early_stop_threshold=0.01, early_stop_patience=3)
    assert train(TrainConfig(**TINY, **stop), tmp_path).step == 60
    assert train(TrainConfig(**TINY, early_stop_threshold=0.01, early_stop_patience=5), tmp_path).step == 100
    with pytest.raises(ValueError, match="would have stopped early at step 60"):
        train(TrainConfig(**TINY, **stop), tmp_path)


def test_diverged_training_stops_and_is_recorded(tmp_path):
    import json

    trainer = train(TrainConfig(**TINY | {"lr": 1e3}, early_stop=False), tmp_path)
    assert trainer.step == 20 and trainer.rows[-1]["diverged"]
    outcome = json.loads((tmp_path / "run.json").read_text())["outcome"]
    assert outcome["status"] == "diverged" and outcome["step"] == 20 and "zero function" in outcome["reason"]
    assert list_checkpoints(tmp_path / "checkpoints") == {}
    assert "diverged" in (tmp_path / "train_log.csv").read_text().splitlines()[0].split(",")
    assert train(TrainConfig(**TINY | {"lr": 1e3, "max_steps": 400}, early_stop=False), tmp_path).step == 20


@pytest.mark.parametrize(
    "override, message",
    [
        ({"hidden": 0}, "hidden = 0: expected a positive integer"),
        ({"lr": 0.0}, "lr = 0.0: expected a positive number"),
        ({"weight_decay": -1.0}, "weight_decay = -1.0"),
        ({"optimizer": "rmsprop"}, "optimizer = 'rmsprop'"),
        ({"momentum": 0.9}, "only the sgd optimizer"),
        ({"early_stop_threshold": 1.5}, "early_stop_threshold = 1.5"),
        ({"p": 9}, "p = 9: expected a prime"),
    ],
)
def test_bad_settings_fail_before_work(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        train(TrainConfig(**TINY | override), tmp_path / "run")
    assert not (tmp_path / "run").exists()


CLI_ARGS = [
    "--p",
    "11",
    "--hidden",
    "48",
    "--lr",
    "1e-2",
    "--batch-size",
    "16",
    "--eval-every",
    "25",
    "--max-steps",
    "2500",
    "--no-early-stop",
]


def run_cli(out, *extra, **kwargs):
    cmd = [sys.executable, "-m", "grokslt", "train", *CLI_ARGS, *extra, "--out", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_cli_rejects_bad_input_with_a_named_value(tmp_path):
    proc = run_cli(tmp_path / "r", "--p", "12")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert b"p = 12: expected a prime integer >= 3" in err


@pytest.mark.slow
def test_sigkill_and_restart_gives_a_byte_identical_log(tmp_path):
    reference = run_cli(tmp_path / "reference")
    assert reference.wait(timeout=300) == 0
    killed = tmp_path / "killed"
    for delay in (0.0, 0.37):
        proc = run_cli(killed)
        deadline = time.time() + 120
        # (resume.pt is written before train_log.csv: wait for both, or a kill between them leaves no log)
        while not all((killed / name).exists() for name in ("resume.pt", "train_log.csv")) and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    expected = (tmp_path / "reference" / "train_log.csv").read_bytes()
    assert len((killed / "train_log.csv").read_bytes()) < len(expected), "killed after the end"
    assert run_cli(killed).wait(timeout=300) == 0
    assert (killed / "train_log.csv").read_bytes() == expected
    assert expected.count(b"\n") == 2500 // 25 + 1


@pytest.mark.parametrize("optimizer, momentum", [("adam", 0.0), ("adamw", 0.0), ("sgd", 0.9)])
def test_every_optimizer_fits_the_training_set(tmp_path, optimizer, momentum):
    lr = 0.5 if optimizer == "sgd" else 1e-2
    config = TrainConfig(**TINY | {"lr": lr}, optimizer=optimizer, momentum=momentum, early_stop=False)
    rows = train(config, tmp_path).rows
    assert rows[-1]["train_loss"] < 0.5 * rows[0]["train_loss"]


def test_a_dense_early_schedule_evaluates_and_checkpoints_more_often_then_regularly(tmp_path):
    trainer = train(TrainConfig(**TINY, dense_until=50, dense_every=10, early_stop=False), tmp_path)
    steps = [row["step"] for row in trainer.rows]
    assert steps == [10, 20, 30, 40, 50, 60, 80, 100, 120, 140, 160, 180, 200]
    assert list(list_checkpoints(tmp_path / "checkpoints")) == steps
    regular = train(TrainConfig(**TINY, early_stop=False), tmp_path / "regular").rows
    assert [r for r in trainer.rows if r["step"] % 20 == 0] == regular  # the extra evaluations change nothing

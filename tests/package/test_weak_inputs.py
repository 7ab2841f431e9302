"""The weak cases of issue 46: input that worked but surprised, each now a one-line error naming the file or
key and what to do, or the behaviour a user expects. The config cases call the check directly (no Snakemake)."""

from __future__ import annotations

import copy
import json

import pytest
from workflow_support import REPO, load

from grokslt.cli import main
from grokslt.workflow.config import ConfigError, check_workflow

QUICK = load(REPO / "config" / "quick.yaml")
TRAIN = ["--p", "7", "--hidden", "8", "--lr", "1e-2", "--batch-size", "16", "--eval-every", "50", "--no-early-stop"]


def changed(edit) -> dict:
    config = copy.deepcopy(QUICK)
    edit(config)
    return config


def failure(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main([str(a) for a in args])
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return exit.value.code, err


def test_a_yaml_syntax_error_names_its_line_and_column(capsys, tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("experiments:\n  baseline: {p: 7\n  other: 3\n")
    status, err = failure(capsys, "plan", "--configfile", bad)
    assert status == 2
    assert str(bad) in err and "line 3, column" in err


def test_no_experiments_says_so():
    with pytest.raises(ConfigError, match=r"^experiments = \{\}: expected at least one entry \(named experiments"):
        check_workflow(changed(lambda c: c.update(experiments={})))


def test_a_seed_past_64_bits_is_named_by_its_key():
    config = changed(lambda c: c["experiments"]["baseline"].update(seed=2**64 + 1))
    with pytest.raises(ConfigError, match=r"experiments\.baseline\.seed = 18446744073709551617: expected an integer"):
        check_workflow(config)


def test_a_seed_past_64_bits_on_the_command_line(capsys, tmp_path):
    status, err = failure(capsys, "train", *TRAIN, "--seed", 2**64 + 1, "--out", tmp_path / "run")
    assert status == 2 and "seed = 18446744073709551617" in err


def test_draws_too_few_for_the_observations_are_caught_before_any_job():
    config = changed(lambda c: c["llc"].update(num_draws=20))
    with pytest.raises(ConfigError, match=r"^llc: observe_every = \d+: leaves \d full-batch observations of 20 draws"):
        check_workflow(config)


def test_one_chain_says_r_hat_and_mcse_are_undefined(capsys, tmp_path, caplog):
    run = tmp_path / "run"
    main(["train", *TRAIN, "--max-steps", "100", "--out", str(run)])
    main(["llc", "--run", str(run), "--num-chains", "1", "--num-draws", "40", "--num-burnin", "0", "--steps", "100",
          "--out", str(tmp_path / "llc.csv")])  # fmt: skip
    assert "one chain: R-hat and the MCSE are undefined" in caplog.text


def test_a_run_killed_in_training_records_its_last_checkpoint(tmp_path):
    from grokslt.training.train import TrainConfig, Trainer

    config = TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=50, max_steps=200, early_stop=False)
    trainer = Trainer(config, tmp_path)
    for _ in range(100):  # a run killed between its evaluations at 100 and 150
        trainer.train_step()
        if config.evaluates_at(trainer.step):
            trainer.log_evaluation()
            trainer.save()
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["outcome"] == {"status": "training", "step": 100}
    assert set(record["checkpoints_sha256"]) == {"50", "100"}


def test_an_all_blank_llc_column_and_an_empty_chunk_name_their_file(tmp_path):
    from grokslt.artefacts import LLC_TABLE, LOSS_DATA, read_table, seal, sha256
    from grokslt.errors import BadInput

    loss = tmp_path / "loss_data.csv"
    loss.write_text("step,diverged,llc,converged,local\n100,False,,,\n200,False,,,\n")
    seal(loss, sha256(loss.read_bytes()), "grokslt tables")
    with pytest.raises(BadInput, match=rf"^{loss}: column 'llc' holds no estimate at all; delete it"):
        read_table(loss, LOSS_DATA)
    chunk = tmp_path / "chunk0of2.csv"
    chunk.write_text("")
    seal(chunk, sha256(b""), "grokslt llc")
    with pytest.raises(BadInput, match=rf"^{chunk}: empty, not even a header; .*`grokslt llc`"):
        read_table(chunk, LLC_TABLE)


def test_a_table_of_no_estimates_is_read(tmp_path):
    """A run that diverged at its first evaluation has an LLC chunk of a header alone: read, not refused."""
    from grokslt.artefacts import LLC_TABLE, read_table, seal, sha256

    chunk = tmp_path / "chunk0of1.csv"
    chunk.write_text("step,llc_mean,converged,local\n")
    seal(chunk, sha256(chunk.read_bytes()), "grokslt llc")
    assert read_table(chunk, LLC_TABLE).empty

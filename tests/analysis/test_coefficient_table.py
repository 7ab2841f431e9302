"""The coefficient table as the workflow writes it: `--steps final` is the run's last checkpoint, and the table is
sealed as the run's, read back by its strict reader and refused once edited."""

import pytest

from grokslt.analysis.coefficient import write_coefficient_table
from grokslt.artefacts import COEFFICIENT_TABLE, read_table
from grokslt.errors import BadInput
from grokslt.training.runs import load_run


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from grokslt.training.train import TrainConfig, train

    run = tmp_path_factory.mktemp("coefficient") / "run"
    config = TrainConfig(p=5, hidden=4, lr=1e-2, batch_size=8, eval_every=20, max_steps=60, early_stop=False)
    train(config, run)
    return run


def test_the_final_checkpoint_alone_sealed_and_read_strictly(trained, tmp_path):
    out = tmp_path / "coefficient.csv"
    write_coefficient_table(trained, out, steps="final", probes=2, lanczos_steps=6)
    run = load_run(trained)
    table = read_table(out, COEFFICIENT_TABLE, run.identity, steps=run.checkpoints)
    assert table["step"].tolist() == [max(run.checkpoints)] == [60]
    assert table["interpolating"].dtype == bool and table["half_d"].iloc[0] == 3 * 5 * 4 / 2
    out.write_text(out.read_text().replace(",False,", ",True,", 1))
    with pytest.raises(BadInput, match="not the bytes `grokslt coefficient` wrote"):
        read_table(out, COEFFICIENT_TABLE)


def test_final_is_no_chunk(trained, tmp_path):
    with pytest.raises(BadInput, match="--steps final: give it without --chunk"):
        write_coefficient_table(trained, tmp_path / "c.csv", steps="final", chunk="0/2", probes=2, lanczos_steps=4)

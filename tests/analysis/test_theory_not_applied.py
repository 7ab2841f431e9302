"""`grokslt theory --run` on a run the paper's closed forms do not describe (another family, loss or task) says so
in one line and exits 2, writing nothing, instead of a table of blanks with exit status 0."""

import pandas as pd
import pytest

from grokslt.cli import main
from grokslt.training.train import TrainConfig, train

SMALL = {"p": 5, "hidden": 4, "batch_size": 8, "max_steps": 20, "eval_every": 10, "early_stop": False}
NOT_APPLIED = {
    "mlp": ({"model": "mlp", "loss": "cross_entropy", "embed": 4}, "proven for the quadratic network, not model mlp"),
    "transformer": (
        {"model": "transformer", "loss": "cross_entropy", "embed": 8, "heads": 2},
        "proven for the quadratic network, not model transformer",
    ),
    "cross_entropy": ({"loss": "cross_entropy"}, "proven for the centred MSE, not loss cross_entropy"),
    "mul": ({"task": "mul"}, "proven for addition, not mul"),
}


@pytest.mark.parametrize("name", NOT_APPLIED)
def test_theory_refuses_a_run_its_closed_forms_do_not_describe(name, tmp_path, capsys):
    changes, reason = NOT_APPLIED[name]
    run = tmp_path / f"run {name}"
    train(TrainConfig(**SMALL, **changes), run, progress=False)
    out = tmp_path / "theory.csv"
    with pytest.raises(SystemExit) as exit_:
        main(["theory", "--run", str(run), "--out", str(out)])
    error = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and not out.exists()
    assert error.count("\n") == 0 and error.startswith(f"grokslt theory: error: {run}: ")
    assert f"closed forms do not apply to this run ({reason})" in error


def test_theory_on_the_papers_setting_still_writes_every_checkpoint(tmp_path):
    run = tmp_path / "run"
    train(TrainConfig(**SMALL), run, progress=False)
    main(["theory", "--run", str(run), "--out", str(tmp_path / "theory.csv")])
    table = pd.read_csv(tmp_path / "theory.csv")
    assert table["step"].tolist() == [10, 20] and table["K_eff"].between(1, 4).all()
    assert table["generic_llc"].notna().all() and table["keff_llc"].notna().all()

"""Every figure drawn from small synthetic tables; missing inputs fail with a message naming them."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from grokslt.cli import main

DPI = 50


def loss_table(steps: np.ndarray, peak: float) -> pd.DataFrame:
    grok = 1 / (1 + np.exp(-(steps - steps.mean()) / 50))
    llc = peak * (1 - np.exp(-steps / 100)) * (1 - 0.3 * grok)
    return pd.DataFrame(
        {
            "step": steps,
            "train_loss": 0.5 * np.exp(-steps / 50) + 1e-4,
            "val_loss": 0.5 - 0.4 * grok,
            "train_acc": np.minimum(1, steps / 100),
            "val_acc": grok,
            "llc": llc,
            "llc_std": 0.05 * llc,
            "trace_hutchinson": 2 * llc,
            "llc_init_loss": 0.01,
            "diverged": False,
            "converged": steps > steps.mean(),
            "local": steps > steps.min(),  # the first estimate not local: drawn as a cross
            "r_hat": 1.0 + 0.1 * np.exp(-steps / 200),
            "ess_bulk": 50 + steps,
            "ess_tail": 40 + steps,
        }
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    rows = []
    settings = [("base", "baseline", 7, 16, 1e-2, 1e-4, 0)]
    settings += [(f"seed{s}", "seeds", 7, 16, 1e-2, 1e-4, s) for s in (1, 2)]
    settings += [(f"p{p}K{k}", "vary_p", p, k, 1e-2, 1e-4, 0) for p in (5, 7, 11) for k in (8, 16)]
    settings += [(f"lr{lr}wd{wd}", "vary_lr_wd", 7, 16, lr, wd, 0) for lr in (1e-3, 1e-2, 1e3) for wd in (0.0, 1e-4)]
    for run, experiment, p, k, lr, wd, seed in settings:
        steps = np.arange(50, 550, 50)
        table = loss_table(steps, peak=k * (3 * p - 1) / 20 * (1 + 0.05 * rng.standard_normal()))
        diverged = lr > 1  # training diverged at the first evaluation: one row, no estimates
        if diverged:
            table = table.iloc[:1].assign(train_loss=1e20, llc=np.nan, trace_hutchinson=np.nan, diverged=True)
        (root / run).mkdir()
        table.to_csv(root / run / "loss_data.csv", index=False)
        pd.DataFrame({"llc_nbeta": [9.2], "llc_num_chains": [3]}).to_csv(root / run / "params.csv", index=False)
        rows.append(
            {
                "run": run,
                "experiments": experiment,
                "p": p,
                "hidden": k,
                "lr": lr,
                "weight_decay": wd,
                "batch_size": 16,
                "seed": seed,
                "status": "diverged" if diverged else "early_stop",
                "final_step": int(table.step.iloc[-1]),
                "final_llc": table.llc.iloc[-1],
                "final_converged": True,
                "final_local": p != 11,  # Figure 1a marks the p = 11 runs not local
                "peak_llc": table.llc.max(),
                "final_keff_llc": k * (3 * p - 1) / 3,
                "generic_llc": k * (3 * p - 1) / 2,
                "lazy_lower": p * (2 * p - 1) / 2,
                "lazy_upper": p * k / 2,
                "gsm": lr * 10,
                "memorisation_step": 100,
                "grok_step_50": 300,
                "grok_step_95": 450,
            }
        )
    pd.DataFrame(rows).to_csv(root / "runs.csv", index=False)
    pd.DataFrame(
        {
            "step": 500,
            "step_size": np.repeat([1e-4, 1e-3], 3),
            "localization": np.tile([1.0, 10.0, 100.0], 2),
            "llc_mean": [50, 30, 10, 90, 50, 12],
            "llc_std": 2.0,
        }
    ).to_csv(root / "sensitivity.csv", index=False)
    pd.DataFrame(
        {
            "generic_llc": [4.0, 8.0, 31.5],
            "parameter_map_llc": [4.0, 8.0, 31.0],
            "data_llc": [3.5, 7.0, 13.5],
            "defective": [False, False, True],
        }
    ).to_csv(root / "rank_checks.csv", index=False)
    np.savez(
        root / "base" / "traces.npz",
        steps=np.arange(50, 550, 50),
        loss_trace=0.01 + 0.001 * rng.random((10, 3, 40)).cumsum(axis=2),
    )
    return root


def draw(name, root, out, *args):
    main(["figure", name, "--dpi", str(DPI), "--out", str(out / name), *map(str, args)])
    return out / f"{name}.pdf", out / f"{name}.png"


def refused(capsys, name, root, out, *args) -> str:
    """The command's error message; it must exit with status 2 and draw nothing."""
    with pytest.raises(SystemExit) as exit_info:
        draw(name, root, out, *args)
    assert exit_info.value.code == 2
    assert not (out / f"{name}.png").exists()
    return capsys.readouterr().err


CASES = {
    "fig1a": lambda r: ["--summary", r / "runs.csv", "--experiment", "vary_p"],
    "fig1b": lambda r: ["--summary", r / "runs.csv", "--experiment", "vary_p"],
    "fig2": lambda r: [
        "--summary",
        r / "runs.csv",
        "--loss-data",
        *r.glob("*/loss_data.csv"),
        "--experiment",
        "baseline",
        "--band-experiment",
        "seeds",
    ],
    "trajectories": lambda r: [
        "--summary",
        r / "runs.csv",
        "--loss-data",
        *r.glob("*/loss_data.csv"),
        "--experiment",
        "vary_p",
    ],
    "fig9": lambda r: ["--summary", r / "runs.csv", "--experiment", "vary_lr_wd"],
    "sensitivity": lambda r: ["--sensitivity", r / "sensitivity.csv"],
    "theory_vs_measurement": lambda r: [
        "--summary",
        r / "runs.csv",
        "--rank-checks",
        r / "rank_checks.csv",
        "--experiments",
        "vary_p",
        "vary_p",
    ],
    "diagnostics": lambda r: [
        "--loss-data",
        r / "base" / "loss_data.csv",
        "--params",
        r / "base" / "params.csv",
        "--experiment",
        "baseline",
        "--traces",
        r / "base" / "traces.npz",
        "--checkpoints",
        "3",
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_figure_draws_a_pdf_and_png(name, tables, tmp_path):
    pdf, png = draw(name, tables, tmp_path, *CASES[name](tables))
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 5000
    height, width, _ = matplotlib.image.imread(png).shape
    assert width >= 3.0 * DPI and height >= 2.0 * DPI  # at least a column-width figure
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_missing_column_is_named(tables, tmp_path, capsys):
    summary = pd.read_csv(tables / "runs.csv").drop(columns=["final_llc"])
    summary.to_csv(tmp_path / "runs.csv", index=False)
    error = refused(capsys, "fig1a", tables, tmp_path, "--summary", tmp_path / "runs.csv", "--experiment", "vary_p")
    assert "summary/runs.csv: missing columns ['final_llc']" in error


def test_a_missing_run_is_named(tables, tmp_path, capsys):
    error = refused(
        capsys,
        "fig2",
        tables,
        tmp_path,
        "--summary",
        tables / "runs.csv",
        "--loss-data",
        tables / "base" / "loss_data.csv",
        tables / "seed1" / "loss_data.csv",
        "--experiment",
        "baseline",
        "--band-experiment",
        "seeds",
    )
    assert "run 'seed2' is missing" in error


def test_a_missing_experiment_and_file_are_named(tables, tmp_path, capsys):
    error = refused(capsys, "fig1b", tables, tmp_path, "--summary", tables / "runs.csv", "--experiment", "vary_K")
    assert "no runs of experiment 'vary_K'" in error
    error = refused(capsys, "sensitivity", tables, tmp_path, "--sensitivity", tmp_path / "nope.csv")
    assert "--sensitivity" in error and "nope.csv: input file is missing" in error


def test_an_all_empty_column_is_refused(tables, tmp_path, capsys):
    summary = pd.read_csv(tables / "runs.csv")
    summary["gsm"] = np.nan
    summary.to_csv(tmp_path / "runs.csv", index=False)
    error = refused(capsys, "fig9", tables, tmp_path, "--summary", tmp_path / "runs.csv", "--experiment", "vary_lr_wd")
    assert "columns ['gsm'] hold no values" in error

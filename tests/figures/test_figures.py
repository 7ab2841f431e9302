"""Every figure drawn from small synthetic tables; missing inputs fail with a message naming them."""

from __future__ import annotations

from argparse import Namespace

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from figure_support import loss_table, sealed

from grokslt.analysis.scorecard import COLUMNS as SCORECARD_COLUMNS
from grokslt.cli import main
from grokslt.figures import style
from grokslt.figures.accuracy import point_title
from grokslt.figures.inputs import Tables
from grokslt.figures.scorecard import scorecard
from grokslt.figures.trajectory import fig2

DPI = 50


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
        sealed(root / run / "loss_data.csv")
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
                "final_mcse": 0.5,
                "peak_llc": table.llc.max(),
                "peak_converged": True,
                "peak_local": True,
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
            "converged": True,
            "local": [True, True, False, True, False, False],
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
    points = ["p5_K16_adam_lr1e-02_wd0_bs20_s0@3050", "p5_K16_adam_lr1e-02_wd0_bs20_s0@init"]
    rules = ["interpolating minimum", "not a critical point"]
    pd.DataFrame(
        [
            {"point": point, "method": method, "nbeta": nbeta, "estimate": 10.0, "spread": 1.0, "reference": 11.0,
             "reference_mcse": 0.1, "bias": -1.0, "relative_bias": -0.1 * (m + 1), "truth": truth, "truth_rule": rule}
            for point, truth, rule in zip(points, [47.5, np.nan], rules, strict=True)
            for m, method in enumerate(["sgld", "sgnht"])
            for nbeta in (10.0, 30.0, 100.0)
        ]
    ).to_csv(root / "accuracy.csv", index=False)  # fmt: skip
    pd.DataFrame(
        {
            "experiment": ["baseline", "baseline", "vary_p", "vary_p"],
            "run": ["base", "base", "p5K8", "worst"],
            "metric": ["grok_step_50", "final LLC", "grok_step_50", "grok_step_50"],
            "relative_deviation": [0.05, -0.1, 0.2, 0.2],
            "note": ["", "", "", "of 2 runs; p5K8"],
        }
    ).to_csv(root / "scorecard.csv", index=False)
    np.savez(
        root / "base" / "traces.npz",
        steps=np.arange(50, 550, 50),
        loss_trace=0.01 + 0.001 * rng.random((10, 3, 40)).cumsum(axis=2),
    )
    sealed(root / "base" / "traces.npz")
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
    "estimator_accuracy": lambda r: ["--accuracy", r / "accuracy.csv"],
    "scorecard": lambda r: ["--scorecard", r / "scorecard.csv"],
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


def test_figure_9_adds_the_certified_peaks_where_the_runs_have_them(tables, tmp_path):
    """A third row: each run's smoothed certified peak (a rolling mean over 5 estimates, not the raw maximum),
    hollow where one of its estimates is not trusted; without certified tables, two rows."""
    from types import SimpleNamespace

    from grokslt.figures.severity import fig9

    runs = pd.read_csv(tables / "runs.csv")
    lr_runs = runs[(runs["experiments"] == "vary_lr_wd") & (runs["status"] != "diverged")]
    llc = np.array([10.0, 20.0, 30.0, 90.0, 30.0, 20.0, 10.0])  # a spike: the smoothed peak is 38, not 90
    certified = {
        run: pd.DataFrame(
            {
                "step": np.arange(1, 8) * 100,
                "llc_mean": llc + number,
                "mcse": 0.1,
                "local": True,
                "converged": [number > 0] + [True] * 6,
                "preset": "local",
            }
        )  # fmt: skip
        for number, run in enumerate(lr_runs["run"])
    }

    def drawn(certified):
        read = SimpleNamespace(summary=runs, authors_runs=lambda: [], certified=certified)
        return fig9(read, "vary_lr_wd").axes

    assert len(drawn({})) == 2
    axes = drawn(certified)
    assert len(axes) == 3 and "certified: local" in axes[2].get_ylabel()
    decay = sorted(lr_runs["weight_decay"].unique())[0]
    first = lr_runs[lr_runs["weight_decay"] == decay].sort_values("lr")
    line, hollow = axes[2].get_lines()[:2]
    offsets = [list(lr_runs["run"]).index(run) for run in first["run"]]
    assert list(line.get_xdata()) == list(first["lr"])
    assert np.allclose(line.get_ydata(), [38.0 + offset for offset in offsets])
    assert list(hollow.get_xdata()) == [lr for lr, offset in zip(first["lr"], offsets, strict=True) if offset == 0]
    labels = [text.get_text() for legend in axes[0].figure.legends for text in legend.get_texts()]
    assert any(label.startswith("bottom: an estimate not local") for label in labels)
    paths = []
    for run, table in certified.items():
        (tmp_path / run).mkdir()
        paths.append(tmp_path / run / "certified.csv")
        table.to_csv(paths[-1], index=False)
        sealed(paths[-1])
    pdf, _ = draw("fig9", tables, tmp_path, *CASES["fig9"](tables), "--certified", *paths)
    assert pdf.stat().st_size > 5000


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


def test_accuracy_panels_are_titled_in_words():
    assert point_title("p5_K16_adam_lr1e-02_wd0_bs20_s0_T10000@3050") == "trained minimum (p = 5, K = 16, step 3,050)"
    assert point_title("p5_K16_adam_lr1e-02_wd0_bs20_s0_T10000@init") == "random initial point (p = 5, K = 16)"


def test_a_scorecard_without_matches_says_so_in_words(tmp_path):
    rows = pd.DataFrame({"experiment": ["baseline", "vary_p"], "run": ["a", "b"],
                         "note": ["no authors' run with these settings"] * 2}, columns=SCORECARD_COLUMNS)  # fmt: skip
    rows.to_csv(tmp_path / "scorecard.csv", index=False)
    style.apply()
    fig = scorecard(Tables(Namespace(scorecard=tmp_path / "scorecard.csv", reference=None)))
    text = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "No run of this config matches an authors' run" in text
    assert "reference/authors/" in text and "config/paper_subset.yaml" in text and "2 runs of this config" in text


def test_the_offset_corrected_accuracy_is_drawn_beside_the_raw_one(tables, tmp_path):
    table = pd.read_csv(tables / "base" / "loss_data.csv")
    table["train_acc"] = np.where(table["step"] > 400, 0.9, table["train_acc"])  # raw accuracy falls
    table["train_acc_offset"] = np.minimum(1, table["step"] / 100)  # corrected one stays at 1
    (tmp_path / "base").mkdir()
    table.to_csv(tmp_path / "base" / "loss_data.csv", index=False)
    sealed(tmp_path / "base" / "loss_data.csv")
    style.apply()
    loss_data = [tmp_path / "base" / "loss_data.csv"]
    read = Tables(Namespace(summary=tables / "runs.csv", loss_data=loss_data, reference=None))
    fig = fig2(read, "baseline", None)
    acc_ax = fig.axes[1]
    dashed = [line for line in acc_ax.get_lines() if line.get_linestyle() != "-" and len(line.get_xdata()) > 1]
    assert any(np.allclose(line.get_ydata(), table["train_acc_offset"]) for line in dashed)
    assert "offset-corrected" in " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "not forgetting" in fig.legends[0].get_title().get_text() and not acc_ax.get_title()  # under, not between
    assert fig.get_suptitle().startswith("The baseline run\n(p 7, K 16, lr 0.01")  # words, not the run id


def test_close_transitions_move_their_labels_apart():
    """The long baseline's val 95% and saturation (steps 14,200 and 15,000 on a 40,000-step axis) drew their
    labels over each other: the second now sits right of its line; marks far apart keep theirs left of their line,
    and three at one step share one label."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2))
    ax.plot([0, 40_000], [0, 1])
    steps = {"memorisation_step": 700, "grok_step_50": 12_400, "grok_step_95": 14_200, "saturation_step": 15_000}
    style.mark_transitions(ax, pd.Series(steps))
    placed = [(text.get_text(), text.get_horizontalalignment()) for text in ax.texts]
    assert placed == [("memorised", "right"), ("val 50%", "right"), ("val 95%", "right"), ("saturated", "left")]
    assert len(ax.lines) == 1 + 4  # every transition keeps its line
    at_once = [(300, "memorised"), (300, "val 50%"), (300, "val 95%"), (30_000, "saturated")]
    assert style.placed_labels(ax, at_once) == [
        (300, "memorised, val 50%, val 95%", "right"),
        (30_000, "saturated", "right"),
    ]
    plt.close(figure)

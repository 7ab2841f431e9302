"""Layout defects a reader in a talk meets, tested on what is drawn: labels off the curves, no sentence between
panels, no blank cell, readable ticks, markers that do not hide each other, one panel per nbeta."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from figure_support import STEPS, loss_table, reads, summary_row

from grokslt.figures import style
from grokslt.figures.calibration import calibration
from grokslt.figures.diagnostics import rhat_panel
from grokslt.figures.trajectory import small_multiples


@pytest.fixture(autouse=True)
def _style():
    style.apply()
    yield
    plt.close("all")


def test_transition_labels_sit_above_the_axes_off_the_curves():
    figure, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2))
    ax.plot([0, 1000], [0, 1])
    style.mark_transitions(ax, pd.Series({"memorisation_step": 100, "grok_step_95": 700}))
    figure.canvas.draw()
    top = ax.get_window_extent().y1
    for text in ax.texts:
        assert text.get_window_extent().y0 >= top  # wholly above the data area


def test_trajectories_fill_the_spare_cell_with_the_key_and_label_both_axes():
    primes = (3, 5, 7, 11, 13)
    tables = {f"p{p}": loss_table(STEPS, 10.0 * p) for p in primes}
    summary = [summary_row(f"p{p}", "vary_p", p=p) for p in primes]
    fig = small_multiples(reads(summary, tables), "vary_p")
    axes = fig.axes
    spare = [ax for ax in axes if not ax.axison]
    assert len(spare) == 3 and spare[0].get_legend() is not None  # 5 runs in 4 columns: the 6th cell is the key
    keys = [text.get_text() for text in spare[0].get_legend().get_texts()]
    assert {"LLC (left axis)", "train accuracy", "validation accuracy", "not local"} <= set(keys)
    twins = [ax for ax in axes if ax.axison and ax.get_ylabel() == "accuracy"]
    assert len(twins) == 5
    sizes = {label.get_fontsize() for ax in axes if ax.axison for label in ax.get_yticklabels()}
    assert min(sizes) >= 6


def test_honest_and_minibatch_r_hat_markers_sit_side_by_side():
    table = pd.DataFrame({"step": [100, 200, 300], "r_hat": [1.02, 1.005, 1.001],
                          "r_hat_minibatch": [1.02, 1.005, 1.001]})  # fmt: skip
    figure, ax = plt.subplots()
    rhat_panel(ax, table)
    honest, minibatch = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert (np.asarray(honest.get_xdata()) < table["step"]).all()
    assert (np.asarray(minibatch.get_xdata()) > table["step"]).all()


def test_calibration_draws_one_row_of_panels_per_nbeta():
    grid = pd.DataFrame([{"step": step, "step_size": eps, "nbeta": nbeta, "localization": gamma,
                          "llc_mean": 10.0 + eps * 1e4, "mcse": 0.5, "passes": True, "local": True, "chosen": False}
                         for step in (100, 200) for nbeta in (3.0, 30.0) for gamma in (1.0, 100.0)
                         for eps in (1e-4, 2e-4)])  # fmt: skip
    fig = calibration(SimpleNamespace(csv=lambda kind: grid))
    panels = [ax for ax in fig.axes if ax.get_xscale() == "log"]
    assert len(panels) == 4  # 2 nbetas x 2 checkpoints
    for ax in panels:  # one line per localization, each point filled (passes)
        assert len([line for line in ax.get_lines() if line.get_marker() == "o" and len(line.get_xdata())]) == 2
    assert "30" in fig.axes[2].get_ylabel()  # the second row names its nbeta


def test_a_run_is_titled_by_its_settings_in_words_not_its_id():
    assert style.run_words("p53_K1024_adam_lr1e-02_wd1e-04_bs128_s0_noes") == (
        "p 53, K 1024, lr 0.01, wd 0.0001, batch 128, seed 0"
    )
    assert style.run_words("my_run") == "my_run"

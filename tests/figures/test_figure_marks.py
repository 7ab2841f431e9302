"""What the figures draw for the estimates a reader must not take at face value: chains that descend below
L_n(w*), runs that never reached val 95%, and every LLC's mark (the drawn data, not the pictures)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from figure_support import STEPS, loss_table, reads, summary_row

from grokslt.figures import style
from grokslt.figures.scaling import fig1b
from grokslt.figures.sensitivity import sensitivity
from grokslt.figures.severity import fig9
from grokslt.figures.theory import theory_vs_measurement
from grokslt.figures.trajectory import fig2


def marked(ax, marker: str) -> list:
    return [line for line in ax.get_lines() if line.get_marker() == marker and len(line.get_xdata())]


def test_a_descending_estimate_is_marked_at_the_edge_and_does_not_stretch_the_llc_axis():
    """The transformer's step-50 estimate (-740, chains below L_n(w*)) was drawn as a plain point at -740."""
    style.apply()
    table = loss_table(STEPS, 30.0).assign(descends=False)
    table.loc[0, ["llc", "local", "descends"]] = [-740.0, False, True]
    read = reads([summary_row("base", "baseline")], {"base": table})
    llc_ax = fig2(read, "baseline", None).axes[2]
    assert llc_ax.get_ylim()[0] > -50  # the other estimates fill the axis
    (edge,) = marked(llc_ax, "v")
    assert list(edge.get_xdata()) == [50] and list(edge.get_ydata()) == [style.EDGE]  # the bottom, in axes fraction
    crosses = [x for line in marked(llc_ax, "x") for x in line.get_xdata()]
    assert 50 not in crosses


def test_figure_2s_seed_band_leaves_out_the_seeds_that_never_grokked_and_says_how_many():
    style.apply()
    tables = {run: loss_table(STEPS, peak) for run, peak in (("base", 30.0), ("s1", 30.0), ("s2", 300.0))}
    summary = [summary_row("base", "baseline;seeds"), summary_row("s1", "seeds"),
               summary_row("s2", "seeds", grokked=False)]  # fmt: skip
    fig = fig2(reads(summary, tables), "baseline", "seeds")
    (band,) = fig.axes[2].collections[:1]
    top = band.get_paths()[0].vertices[:, 1].max()
    assert top < 40  # the never-grokked seed's LLCs (up to ~300) are not in the band
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert any("1 of 3 never reached val 95%: left out" in label for label in labels)


def test_figure_1b_fits_only_runs_that_grokked_and_its_legend_shows_the_drawn_marks():
    style.apply()
    summary = [summary_row(f"K{k}", "vary_K", hidden=k, final_llc=float(k), final_local=k != 32) for k in (8, 16, 32)]
    summary.append(summary_row("K64", "vary_K", grokked=False, hidden=64, final_llc=500.0))
    ax = fig1b(reads(summary), "vary_K").axes[0]
    fits = [line for line in ax.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata()) == 50]
    assert len(fits) == 1 and fits[0].get_xdata().max() == 32  # the K-64 run is not in the fit
    (never,) = marked(ax, "s")
    assert list(never.get_xdata()) == [64] and never.get_markerfacecolor() == "none"
    assert ax.get_ylim()[1] < 100 and never.get_ydata()[0] == ax.get_ylim()[1]  # 500 sits at the edge, off scale
    entries = ax.get_legend()
    legend = {text.get_text(): handle for text, handle in zip(entries.get_texts(), entries.legend_handles, strict=True)}
    assert legend["not local"].get_marker() == "x" and legend["local, converged"].get_marker() == "o"
    assert legend["p = 7 (R$^2$ = 1.000)"].get_marker() in ("None", "", None)  # a line, no circle the data lack
    assert "fitted: the 3 of 4 runs that reached val 95%" in ax.get_title()
    (bars,) = ax.containers  # +-MCSE where local and converged: not at K 32 (not local)
    segments = bars.lines[2][0].get_segments()
    assert [(s[0][0], s[0][1], s[1][1]) for s in segments] == [(8, 7.5, 8.5), (16, 15.5, 16.5)]


def test_figure_9_draws_no_gsm_for_runs_that_never_reached_val_95_and_marks_every_peak():
    style.apply()
    summary = [summary_row(f"lr{lr}", "vary_lr_wd", lr=lr, gsm=0.5, peak_converged=lr != 1e-2) for lr in (1e-3, 1e-2)]
    summary.append(summary_row("lr0.1", "vary_lr_wd", grokked=False, lr=0.1, gsm=0.0, peak_local=False))
    fig = fig9(reads(summary), "vary_lr_wd")
    gsm_ax, peak_ax = fig.axes[:2]
    (line,) = marked(gsm_ax, "o")
    assert list(line.get_xdata()) == [1e-3, 1e-2]  # no GSM = 0 at lr 0.1 that reads as "no delay"
    (censored,) = marked(gsm_ax, "^")
    assert list(censored.get_xdata()) == [0.1]
    assert [list(line.get_xdata()) for line in marked(peak_ax, "x")] == [[0.1]]
    hollow = [line for line in marked(peak_ax, "o") if line.get_markerfacecolor() == "none"]
    assert [list(line.get_xdata()) for line in hollow] == [[1e-2]]
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "never reached val 95%: no GSM (censored)" in labels and "peak LLC not local" in labels


def test_the_sensitivity_grid_marks_each_estimate():
    style.apply()
    grid = pd.DataFrame({"step": 500, "step_size": np.repeat([1e-4, 1e-3], 2), "localization": [1.0, 10.0] * 2,
                         "llc_mean": [50.0, 30.0, 90.0, 50.0], "llc_std": 2.0, "converged": [True, False, True, True],
                         "local": [True, True, False, False]})  # fmt: skip
    ax = sensitivity(reads([], sensitivity=grid)).axes[0]
    assert sorted(x for line in marked(ax, "x") for x in line.get_xdata()) == [1.0, 10.0]
    hollow = [line for line in marked(ax, "o") if line.get_markerfacecolor() == "none"]
    assert [list(line.get_xdata()) for line in hollow] == [[10.0]]
    assert "2 of 4 estimates not local" in ax.get_title()


def test_theory_vs_measurement_marks_the_measured_llcs_and_leaves_out_runs_that_never_grokked():
    style.apply()
    summary = [summary_row(f"p{p}", "vary_p", p=p, final_llc=10.0 * p, final_local=p != 11) for p in (5, 7, 11)]
    summary.append(summary_row("p13", "vary_p", grokked=False, p=13, final_llc=1000.0))
    checks = pd.DataFrame({"generic_llc": [4.0], "parameter_map_llc": [4.0], "data_llc": [3.5], "defective": [False]})
    p_ax = theory_vs_measurement(reads(summary, rank_checks=checks), ["vary_p"]).axes[0]
    assert [list(line.get_xdata()) for line in marked(p_ax, "x")] == [[11]]
    assert [list(line.get_xdata()) for line in marked(p_ax, "o") if line.get_linestyle() == "None"] == [[5, 7]]
    assert "1 of 4 runs never reached val 95%" in p_ax.get_title()


@pytest.fixture(autouse=True)
def _close():
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_figures_draw_when_no_run_grokked():
    """The tiny config's vary_p runs never reach val 95%: an all-blank grok_step_95 is an answer, not an error."""
    summary = [summary_row(f"K{k}", "vary_K", grokked=False, hidden=k, final_llc=float(k)) for k in (8, 16)]
    ax = fig1b(reads(summary), "vary_K").axes[0]
    assert "fitted: the 0 of 2 runs that reached val 95%" in ax.get_title()
    assert [list(line.get_xdata()) for line in marked(ax, "s")] == [[8, 16]]
    summary = [summary_row(f"lr{lr}", "vary_lr_wd", grokked=False, lr=lr) for lr in (1e-3, 1e-2)]
    assert [list(line.get_xdata()) for line in marked(fig9(reads(summary), "vary_lr_wd").axes[0], "^")] == [
        [1e-3, 1e-2]
    ]

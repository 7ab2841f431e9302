"""Figure 2 shows the estimate to trust beside the authors' sampler: a run's certified estimates (the quick
config's local preset) in a fourth panel, marked local/converged, with an MCSE only where it is honest."""

from __future__ import annotations

from argparse import Namespace

import numpy as np
import pandas as pd
import pytest
from figure_support import sealed

from grokslt.cli import main
from grokslt.figures import style
from grokslt.figures.inputs import Tables
from grokslt.figures.trajectory import fig2

STEPS = np.arange(50, 1050, 50)


@pytest.fixture
def run(tmp_path):
    """A baseline run's summary and loss table (the authors' sampler: every estimate not local), and its
    certified estimates at every 4th checkpoint: local, the first one not converged."""
    grok = 1 / (1 + np.exp(-(STEPS - 500) / 50))
    llc = 100 * (1 - np.exp(-STEPS / 100)) * (1 - 0.3 * grok)
    loss = pd.DataFrame(
        {
            "step": STEPS,
            "train_loss": 1e-3 + np.exp(-STEPS / 50),
            "val_loss": 0.5 - 0.4 * grok,
            "train_acc": np.minimum(1, STEPS / 100),
            "val_acc": grok,
            "llc": llc,
            "llc_std": 0.05 * llc,
            "trace_hutchinson": 2 * llc,
            "diverged": False,
            "converged": False,
            "local": False,
        }
    )
    (tmp_path / "base").mkdir()
    loss.to_csv(tmp_path / "base" / "loss_data.csv", index=False)
    sealed(tmp_path / "base" / "loss_data.csv")
    summary = {
        "run": "base",
        "experiments": "baseline",
        "status": "early_stop",
        "p": 7,
        "hidden": 16,
        "llc_preset": "paper_code",
        "memorisation_step": 100,
        "grok_step_50": 500,
        "grok_step_95": 650,
    }
    pd.DataFrame([summary]).to_csv(tmp_path / "runs.csv", index=False)
    chosen = STEPS[::4]
    certified = pd.DataFrame(
        {
            "step": chosen,
            "llc_mean": 0.4 * llc[::4],
            "mcse": 0.5,
            "local": True,
            "converged": chosen > STEPS[0],
            "preset": "local",
            "nbeta": 1e4,
            "localization": 1e4,
        }
    )
    certified.to_csv(tmp_path / "base" / "certified.csv", index=False)
    sealed(tmp_path / "base" / "certified.csv")
    return tmp_path


def read(root, certified: bool) -> Tables:
    paths = [root / "base" / "certified.csv"] if certified else []
    return Tables(
        Namespace(
            summary=root / "runs.csv", loss_data=[root / "base" / "loss_data.csv"], reference=None, certified=paths
        )
    )


def test_certified_estimates_add_a_fourth_panel_marked_like_every_llc(run):
    style.apply()
    assert len(fig2(read(run, certified=False), "baseline", None).axes) == 4  # three panels and the trace's axis
    fig = fig2(read(run, certified=True), "baseline", None)
    trusted = fig.axes[3]
    assert trusted.get_ylabel() == "LLC, local preset\n($n\\beta$ 10000, $\\gamma$ 10000)"
    assert trusted.get_xlabel() == "training step" and fig.axes[2].get_xlabel() == ""
    certified = pd.read_csv(run / "base" / "certified.csv")
    line = trusted.get_lines()[0]
    assert np.allclose(line.get_xdata(), certified["step"]) and np.allclose(line.get_ydata(), certified["llc_mean"])
    filled = [ln for ln in trusted.get_lines() if ln.get_marker() == "o" and ln.get_markerfacecolor() != "none"]
    hollow = [ln for ln in trusted.get_lines() if ln.get_marker() == "o" and ln.get_markerfacecolor() == "none"]
    assert list(filled[0].get_xdata()) == list(certified["step"][1:]) and list(hollow[0].get_xdata()) == [50]
    bars = trusted.containers[0]  # the MCSE, at the converged estimates only
    assert len(bars.lines[2][0].get_segments()) == len(certified) - 1
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "LLC, certified sampler" in labels and "MCSE (converged only)" in labels


def test_the_figure_command_draws_fig2_with_the_certified_tables(run, tmp_path):
    out = tmp_path / "fig2"
    main(
        [
            "figure",
            "fig2",
            "--summary",
            str(run / "runs.csv"),
            "--loss-data",
            str(run / "base" / "loss_data.csv"),
            "--certified",
            str(run / "base" / "certified.csv"),
            "--experiment",
            "baseline",
            "--dpi",
            "50",
            "--out",
            str(out),
        ]
    )
    assert out.with_suffix(".png").stat().st_size > 5000

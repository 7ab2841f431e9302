"""The paper's figures, each drawn from tables alone (never from checkpoints) by its own module.

`draw(name, args)` reads the inputs a figure needs, checks them, draws it and saves PDF and PNG.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

FIGURES = ("fig1a", "fig1b", "fig2", "trajectories", "fig9", "sensitivity", "theory_vs_measurement", "diagnostics")


def _csv(path, what: str) -> pd.DataFrame:
    if path is None or not Path(path).exists():
        raise ValueError(f"{what}: input file {path} is missing")
    return pd.read_csv(path)


def draw(name: str, args) -> None:
    from grokslt.figures import diagnostics, scaling, sensitivity, severity, style, theory, trajectory

    if name not in FIGURES:
        raise ValueError(f"figure = {name!r}: expected one of {FIGURES}")
    style.apply()
    summary = None if name in ("sensitivity", "diagnostics") else _csv(args.summary, "--summary")
    if name == "fig1a":
        fig = scaling.fig1a(summary, args.experiment)
    elif name == "fig1b":
        fig = scaling.fig1b(summary, args.experiment)
    elif name == "fig2":
        fig = trajectory.fig2(summary, style.read_loss_tables(args.loss_data), args.experiment, args.band_experiment)
    elif name == "trajectories":
        fig = trajectory.small_multiples(summary, style.read_loss_tables(args.loss_data), args.experiment)
    elif name == "fig9":
        fig = severity.fig9(summary, args.experiment)
    elif name == "sensitivity":
        fig = sensitivity.sensitivity(_csv(args.sensitivity, "--sensitivity"))
    elif name == "theory_vs_measurement":
        fig = theory.theory_vs_measurement(summary, _csv(args.rank_checks, "--rank-checks"), args.experiments)
    else:
        [loss] = args.loss_data
        table = _csv(loss, "--loss-data")
        params = _csv(Path(loss).with_name("params.csv"), "params.csv")
        fig = diagnostics.diagnostics(args.traces, table, params, args.checkpoints)
    if summary is not None and name != "trajectories":  # small multiples show diverged runs as panels
        style.note_diverged(fig, summary, [args.experiment, *args.experiments, args.band_experiment])
    style.save(fig, args.out, args.dpi)

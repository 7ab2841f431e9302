"""Drawing one figure of `grokslt.figures.FIGURES` from the tables the command line names."""

from __future__ import annotations

from grokslt.errors import BadInput
from grokslt.figures import FIGURES, experiment_settings, style
from grokslt.figures.inputs import Tables


def draw(name: str, args) -> None:
    """Draw figure `name` from the tables in `args` with its settings there; save PDF and PNG."""
    if name not in FIGURES:
        raise BadInput(f"figure = {name!r}: expected one of {list(FIGURES)}")
    figure = FIGURES[name]
    style.apply()
    tables = Tables(args)
    keys = ["experiment"] if figure.per_experiment else list(figure.settings)
    settings = {key: getattr(args, key) for key in keys}
    fig = figure.function()(tables, **settings)
    if "summary" in figure.reads and not figure.per_experiment:  # small multiples show diverged runs as panels
        style.note_diverged(fig, tables.summary, experiment_settings(settings))
    style.save(fig, args.out, args.dpi)

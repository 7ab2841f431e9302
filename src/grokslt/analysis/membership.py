"""Which experiments a run belongs to, as the summary's `experiments` column holds them: the names joined by
`;`, since runs that two experiments share are trained once. Every reader of that column asks here."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

SEPARATOR = ";"


def experiments_cell(experiments: Iterable[str]) -> str:
    """The `experiments` cell of a run that belongs to these experiments."""
    return SEPARATOR.join(sorted(experiments))


def experiment_names(cell) -> list[str]:
    """The experiments an `experiments` cell names (none for a blank cell)."""
    return [name for name in cell.split(SEPARATOR) if name] if isinstance(cell, str) else []


def in_experiments(summary: pd.DataFrame, experiments: str | Iterable[str]) -> pd.Series:
    """True for the summary's rows whose run belongs to any of `experiments` (one name or several)."""
    wanted = {experiments} if isinstance(experiments, str) else set(experiments)
    return summary["experiments"].apply(lambda cell: bool(wanted & set(experiment_names(cell)))).astype(bool)

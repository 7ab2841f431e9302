"""What figures read: their input tables, checked before anything is drawn."""

from __future__ import annotations

import io
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import pandas as pd

from grokslt.analysis.membership import in_experiments
from grokslt.analysis.summary import parse_membership, summary_text
from grokslt.artefacts import COEFFICIENT_TABLE, LLC_TABLE, LOSS_DATA, read_table
from grokslt.errors import BadInput
from grokslt.figures import READS


class Tables:
    """A figure's inputs, read when first used; a missing or empty one is an error naming its flag."""

    def __init__(self, args):
        self.args = args

    def path(self, kind: str):
        value = getattr(self.args, kind)
        flag = READS[kind][0]
        if not value:
            raise BadInput(f"{flag}: the figure needs {READS[kind][2]}")
        for path in value if isinstance(value, list) else [value]:
            if not Path(path).exists():
                raise BadInput(f"{flag} {path}: input file is missing")
        return value

    def authors_runs(self) -> list:
        """The authors' logged runs for overlays, or [] where the figure was given none."""
        from grokslt.analysis.reference import load_reference

        path = getattr(self.args, "reference", None)
        return load_reference(Path(path).parent) if path else []

    def csv(self, kind: str) -> pd.DataFrame:
        return pd.read_csv(self.path(kind))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """summary/runs.csv as given, or (with `--membership`, as the workflow passes them) the summary of the
        figure's runs put together from their rows."""
        paths, membership = self.path("summary"), getattr(self.args, "membership", None)
        paths = paths if isinstance(paths, list) else [paths]
        if membership is None:
            if len(paths) != 1:
                raise BadInput("--summary: one summary/runs.csv, or the runs' summary.csv rows with --membership")
            return pd.read_csv(paths[0])
        rows = {Path(path).parent.name: Path(path) for path in paths}
        return pd.read_csv(io.StringIO(summary_text(rows, parse_membership(membership, rows, "--membership"))))

    @property
    def loss_data(self) -> dict[str, pd.DataFrame]:
        return read_loss_tables(self.path("loss_data"))

    @property
    def certified(self) -> dict[str, pd.DataFrame]:
        """{run id: certified.csv}, empty where the figure was given none (an optional read)."""
        if not getattr(self.args, "certified", None):
            return {}
        return {Path(path).parent.name: read_table(path, LLC_TABLE) for path in self.path("certified")}

    @property
    def coefficient(self) -> dict[str, pd.DataFrame]:
        """{run id: coefficient.csv} (`grokslt coefficient`), empty where the figure was given none (an optional
        read)."""
        if not getattr(self.args, "coefficient", None):
            return {}
        return {Path(path).parent.name: read_table(path, COEFFICIENT_TABLE) for path in self.path("coefficient")}


def require_columns(table: pd.DataFrame, columns: Iterable[str], source: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{source}: missing columns {missing}")
    empty = [c for c in columns if table[c].isna().all()]
    if empty:
        raise ValueError(f"{source}: columns {empty} hold no values")


def experiment_rows(summary: pd.DataFrame, experiment: str, source: str, diverged: bool = False) -> pd.DataFrame:
    """The summary rows of an experiment's runs; those whose training diverged only if asked."""
    require_columns(summary, ["run", "experiments", "status"], source)
    member = in_experiments(summary, experiment)
    rows = summary[member if diverged else member & (summary["status"] != "diverged")]
    if rows.empty:
        raise ValueError(f"{source}: no runs of experiment {experiment!r} (that did not diverge)")
    return rows


def read_loss_tables(paths: Iterable[str | Path]) -> dict[str, pd.DataFrame]:
    """{run id: loss_data.csv} keyed by the run directory's name, without the evaluation at which a
    run's training diverged."""
    tables = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"{path}: missing loss table of run {path.parent.name}")
        table = read_table(path, LOSS_DATA)
        tables[path.parent.name] = table[~table["diverged"]]
    return tables


def estimated(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a loss table that carry an LLC estimate: every checkpoint, or those a thinned trajectory
    (`llc: every`) chose."""
    return table[table["llc"].notna()]


def loss_table(tables: dict[str, pd.DataFrame], run: str, columns: Iterable[str]) -> pd.DataFrame:
    if run not in tables:
        raise ValueError(f"loss tables: run {run!r} is missing (have {sorted(tables)[:5]}...)")
    require_columns(tables[run], columns, f"runs/{run}/loss_data.csv")
    return tables[run]


def grokked(rows: pd.DataFrame) -> pd.Series:
    """Whether each summary row's run reached validation accuracy 95% (`grok_step_95`): a final LLC of a run
    that never generalised is not the paper's final LLC."""
    if "grok_step_95" not in rows:
        raise ValueError("summary/runs.csv: missing columns ['grok_step_95']")
    return rows["grok_step_95"].notna()

"""The summary table, one row per run (`summary/runs.csv`), put together without torch: each run's row as `grokslt
tables` wrote and sealed it beside the run's tables (`runs/RUN/summary.csv`), and the experiments the config puts
the run in, which only the config knows (so that a new experiment rewrites no run's tables). A figure's job puts
together the rows of its own runs in memory, so no job exists only to write a figure's summary."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from grokslt.analysis.membership import experiments_cell
from grokslt.artefacts import REBUILD, config_digest, unsealed
from grokslt.errors import BadInput
from grokslt.io import write_text

ROW_FILE = "summary.csv"  # a run's row, beside its params.csv and loss_data.csv


def parse_membership(items: Iterable[str], runs: Iterable[str], flag: str) -> dict[str, list[str]]:
    """{experiment: [run ids]} from `name=run1,run2` words, each run among `runs`."""
    known, membership = set(runs), {}
    for item in items:
        name, _, members = item.partition("=")
        membership[name] = [m for m in members.split(",") if m]
        unknown = sorted(set(membership[name]) - known)
        if unknown:
            raise BadInput(f"{flag} {name}: runs {unknown} are not among the runs given")
    return membership


def membership_words(membership: Mapping[str, list[str]]) -> list[str]:
    """`name=run1,run2` for every experiment with runs: what `parse_membership` reads."""
    return [f"{name}={','.join(runs)}" for name, runs in membership.items() if runs]


def run_row(path: Path, run: str | None = None) -> tuple[list[str], list[str]]:
    """The header and cells of a run's sealed row, as text (so that the summary repeats them byte for byte)."""
    data, stamp = unsealed(path, run)
    lines = list(csv.reader(io.StringIO(data.decode())))
    if len(lines) != 2 or len(lines[0]) != len(lines[1]):
        raise BadInput(f"{path}: not a header and one row of equal length; {REBUILD.format(writer=stamp['writer'])}")
    return lines[0], lines[1]


def summary_text(rows: Mapping[str, Path], membership: Mapping[str, list[str]], identities=None) -> str:
    """summary/runs.csv of the runs whose rows are at `rows` ({run id: path}), in order of run id; `identities`
    ({run id: config digest}) ties each row to its run's record where given."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = None
    for run, path in sorted(rows.items()):
        names, cells = run_row(Path(path), identities[run] if identities else None)
        if cells[0] != run:
            raise BadInput(f"{path}: the summary row of run {cells[0]!r}, given as {run!r}")
        if header is None:
            header = names
            writer.writerow([names[0], "experiments", *names[1:]])
        elif names != header:
            raise BadInput(f"{path}: columns differ from {rows[min(rows)]}'s; rerun `grokslt tables` on both runs")
        writer.writerow([run, experiments_cell(e for e, members in membership.items() if run in members), *cells[1:]])
    return buffer.getvalue() if header else "run\n"


def run_identity(run_dir: Path) -> str:
    """The run's identity (`config_digest`) from its run.json, read as text: no torch is needed to check a row."""
    try:
        return config_digest(json.loads((run_dir / "run.json").read_text())["config"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
        raise BadInput(f"{run_dir / 'run.json'}: missing or not a run record; train the run again") from None


def write_summary(runs: Mapping[str, Path], membership: Mapping[str, list[str]], out) -> None:
    """summary/runs.csv of the run directories `runs` ({run id: directory}), each with its row (`grokslt tables`)."""
    for run_dir in runs.values():
        if not (Path(run_dir) / ROW_FILE).exists():
            raise BadInput(f"{Path(run_dir) / ROW_FILE}: missing; run `grokslt tables --run {run_dir}` (it writes the "
                           "row beside params.csv)")  # fmt: skip
    identities = {run: run_identity(Path(run_dir)) for run, run_dir in runs.items()}
    write_text(out, summary_text({run: Path(d) / ROW_FILE for run, d in runs.items()}, membership, identities))

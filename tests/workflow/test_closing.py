"""What a person reads while and after the workflow runs: the progress bar and the closing note."""

import logging

import pandas as pd
import pytest
from snakemake.logging import DefaultFilter, DefaultFormatter
from snakemake.settings.enums import Quietness
from snakemake_interface_logger_plugins.common import LogEvent

from grokslt.workflow.closing import closing_note
from grokslt.workflow.progress import ProgressBar, bar


def test_the_bar_fills_with_the_jobs_done():
    assert bar(0, 10, 5) == "[" + "." * 30 + "] 0 of 10 jobs (0%), 5 s"
    assert bar(5, 10, 192) == "[" + "#" * 15 + "." * 15 + "] 5 of 10 jobs (50%), 3 min 12 s"
    assert bar(10, 10, 60).startswith("[" + "#" * 30 + "] 10 of 10 jobs (100%)")


def progress_record(done: int, total: int) -> logging.LogRecord:
    record = logging.LogRecord("snakemake.logging", logging.INFO, __file__, 1, None, (), None)
    record.event, record.done, record.total = LogEvent.PROGRESS, done, total
    return record


def test_snakemakes_formatter_prints_the_progress_record_as_a_bar():
    clock = iter([100.0, 165.0])
    record = progress_record(3, 12)
    assert DefaultFormatter().format(record) == "3 of 12 steps (25%) done"  # Snakemake's own line, before
    ProgressBar(LogEvent.PROGRESS, Quietness.PROGRESS, clock=lambda: next(clock)).filter(record)
    assert DefaultFormatter().format(record) == bar(3, 12, 65)


@pytest.mark.parametrize("quiet, shown", [(set(), True), ({Quietness.PROGRESS}, False)])
def test_quiet_progress_still_silences_the_bar(quiet, shown):
    record = progress_record(1, 2)
    ProgressBar(LogEvent.PROGRESS, Quietness.PROGRESS).filter(record)
    shows = DefaultFilter(quiet, debug_dag=False, verbose=False, dryrun=False, printshellcmds=False).filter(record)
    assert shows is shown


def test_other_records_pass_unchanged():
    record = logging.LogRecord("snakemake.logging", logging.INFO, __file__, 1, "Select jobs to execute...", (), None)
    assert ProgressBar(LogEvent.PROGRESS, Quietness.PROGRESS).filter(record)
    assert record.getMessage() == "Select jobs to execute..." and not hasattr(record, "quietness")


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


@pytest.fixture
def finished(tmp_path):
    """A results directory of three runs: one grokked, one memorised only, one diverged; two figures; claims."""
    results = tmp_path / "results"
    runs = [
        {"run": "grokked", "status": "early_stop", "grok_step_95": 3000, "llc_preset": "paper_code"},
        {"run": "memorised", "status": "max_steps", "grok_step_95": None, "llc_preset": "paper_code"},
        {"run": "blewup", "status": "diverged", "grok_step_95": None, "llc_preset": "paper_code"},
    ]
    write(results / "summary" / "runs.csv", runs)
    estimates = [{"step": s, "llc": 50.0, "local": False, "converged": s == 100} for s in (100, 200, 300)]
    write(results / "runs" / "grokked" / "loss_data.csv", estimates)
    write(results / "runs" / "memorised" / "loss_data.csv", [e | {"llc": None} for e in estimates[:1]] + estimates)
    certified = [{"step": 100, "llc_mean": 3.0, "local": True, "converged": True, "preset": "local"},
                 {"step": 300, "llc_mean": 2.0, "local": True, "converged": False, "preset": "local"}]  # fmt: skip
    write(results / "runs" / "grokked" / "certified.csv", certified)
    for name in ("fig2", "fig1a"):
        (results / "figures").mkdir(exist_ok=True)
        (results / "figures" / f"{name}.png").write_bytes(b"png")
    claims = [
        {"claim": "fig2_peak", "preset": "certified", "verdict": "holds", "note": "smoke test: ...; 3 of 3"},
        {"claim": "fig1a_linear", "preset": "paper_code", "verdict": "inconclusive", "note": "smoke test: ...; x"},
        {"claim": "fig2_mirror", "preset": "paper_code", "verdict": "fails", "note": "smoke test: ...; r 0.1"},
    ]
    write(results / "claims" / "claims.csv", claims)
    return results


def test_the_closing_note_says_what_ran_where_the_figures_are_what_to_trust_and_what_was_decided(finished):
    note = closing_note(finished, "config/quick.yaml").splitlines()
    assert note[0] == f"grokslt: the workflow finished; its results are in {finished}/"
    assert note[1] == (
        "  runs: 3 trained (summary/runs.csv): 1 reached val 95%; 1 ended below val 95% (memorised only: their "
        "final LLC is not the paper's); 1 diverged (blewup)"
    )
    assert note[2] == f"  figures: 2 in {finished}/figures/ (PNG and PDF): fig1a, fig2"
    report = "snakemake --configfile config/quick.yaml --report report.html"
    assert note[3] == f"    with their captions in one page: {report}"
    assert note[5] == (
        "    paper_code: 6 estimates in 2 runs: 6 not local, 4 not converged; none trusted: read them as the paper's "
        "numbers, not as LLCs"
    )
    assert note[6] == "    certified (local): 2 estimates in 1 runs: 0 not local, 1 not converged; 1 trusted"
    assert note[7].endswith("; a smoke test of the pipeline, no evidence): 2 of 3 rows decided, 1 inconclusive")
    assert note[8:] == ["    fig2_peak (certified): holds", "    fig2_mirror (paper_code): fails"]


def test_a_partial_workflow_gets_the_lines_of_what_it_built(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "fig1a.png").write_bytes(b"png")
    note = closing_note(tmp_path).splitlines()
    assert note[1:] == [
        f"  figures: 1 in {tmp_path}/figures/ (PNG and PDF): fig1a",
        "    with their captions in one page: snakemake --report report.html",
    ]


@pytest.mark.slow
def test_the_tiny_workflow_closes_with_its_note(finished_tiny):
    from workflow_support import TINY_RESULTS

    note = closing_note(finished_tiny.root / TINY_RESULTS)
    assert "diverged (" in note  # the tiny config's lr 1e3 run
    assert "figures: " in note and "claims (" in note and "paper_code: " in note

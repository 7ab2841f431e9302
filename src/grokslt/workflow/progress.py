"""The workflow's progress as a bar: Snakemake's "N of M steps (P%) done" line, drawn with the time since the
jobs started. M grows while trainings finish: each one adds its run's LLC jobs (a checkpoint)."""

from __future__ import annotations

import logging
import time

WIDTH = 30


def bar(done: int, total: int, elapsed: float) -> str:
    """`[#########.....]  45 of 147 jobs (31%), 3 min 12 s`."""
    filled = WIDTH * done // total if total else WIDTH
    share = f"{100 * done / total:.0f}%" if total else "-"
    return f"[{'#' * filled}{'.' * (WIDTH - filled)}] {done} of {total} jobs ({share}), {duration(elapsed)}"


def duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


class ProgressBar(logging.Filter):
    """Rewrites Snakemake's progress records (`event` PROGRESS, with `done` and `total`) into a bar line, which
    the default formatter prints as their message; `--quiet progress` still silences it (`quietness`)."""

    def __init__(self, progress_event, quietness, clock=time.monotonic):
        super().__init__()
        self.progress_event, self.quietness, self.clock, self.start = progress_event, quietness, clock, clock()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "event", None) == self.progress_event:
            record.msg, record.args = bar(record.done, record.total, self.clock() - self.start), ()
            record.event, record.quietness = None, self.quietness
        return True


def show_progress_bar() -> None:
    """From now on, the main Snakemake process prints its progress lines as bars."""
    from snakemake.logging import logger
    from snakemake.settings.enums import Quietness
    from snakemake_interface_logger_plugins.common import LogEvent

    if not any(isinstance(f, ProgressBar) for f in logger.filters):
        logger.addFilter(ProgressBar(LogEvent.PROGRESS, Quietness.PROGRESS))

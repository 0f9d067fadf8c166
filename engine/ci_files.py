"""Writing a `CIReport` where a command was asked to (``--junit FILE``, ``--summary-md FILE``),
shared by ``eval``, ``calibrate`` and ``compare``; the help texts of those flags. Imported by the
CLI at startup, so the writers are imported when a report is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ci_report import CIReport

JUNIT_HELP = ("Write a JUnit XML report: a test case per item and scorer (failed → error, not scorable → skipped, "
              "worse than --item-cutoff → failure) and one per threshold.")
SUMMARY_MD_HELP = ("Write a Markdown summary (table, thresholds, worst items); appended when FILE is "
                   "$GITHUB_STEP_SUMMARY.")
ITEM_CUTOFF_HELP = ("ID=VALUE: an item whose score is worse than VALUE (by the scorer's direction) is a failure in "
                    "the reports and exits 1 (repeatable; ID is a scorer's label or id).")


def write_reports(report: CIReport, *, junit: str | os.PathLike[str] | None = None,
                  summary_md: str | os.PathLike[str] | None = None) -> list[str]:
    """Write the JUnit file and/or the Markdown summary; returns ``["junit PATH", "summary PATH"]``
    for what was written. Raises `OSError` when a file cannot be written."""
    from .junit import write_junit
    from .summary_md import write_summary_md

    written = []
    if junit is not None:
        written.append(f"junit {write_junit(report, junit)}")
    if summary_md is not None:
        written.append(f"summary {write_summary_md(report, Path(summary_md))}")
    return written


def cutoff_note(report: CIReport) -> str | None:
    """``3 item(s) worse than their item cut-off (exit 1)`` when any is, else None."""
    misses = report.cutoff_misses
    if not misses:
        return None
    return f"{misses} item(s) worse than their item cut-off" + (" (exit 1)" if report.exit_code == 1 else "")


__all__ = ["write_reports", "cutoff_note", "JUNIT_HELP", "SUMMARY_MD_HELP", "ITEM_CUTOFF_HELP"]

"""``scorespec report RUN [--compare RUN_B] -o FILE``: a run's HTML report (`engine.report.html`),
and what ``--report FILE`` on ``eval`` and ``calibrate`` shares with it.

Registered on `engine.cli.app.app` when imported (`engine.cli.eval` imports it, which
`engine.cli.main.main` imports for the batch commands). Imports little itself: the report's modules,
altair and vl-convert are imported when a report is written. Exit codes: 0 written; 2 errors (no
such run, an unreadable out file, altair or vl-convert missing, a file that cannot be written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .app import app, fail

REPORT_HELP = ("Also write the run's HTML report to FILE: one self-contained file (charts, every item's "
               "prompts and answers) that opens in any browser (needs scorespec[report]).")

__all__ = ["REPORT_HELP", "report_cmd", "check_report_dependencies", "write_run_report"]


def check_report_dependencies() -> None:
    """Exit with a clear message when the report's chart libraries are missing (a command
    given ``--report`` calls this before it runs anything)."""
    from ..report.charts import ReportDependencyError, chart_libraries

    try:
        chart_libraries()
    except ReportDependencyError as exc:
        fail(str(exc))


def write_run_report(path: Path, db: Any, run_id: str, other_id: Optional[str] = None,
                     agreement: Optional[dict[str, Any]] = None) -> None:
    """Write the report of the stored run `run_id` of `db` (a `Store`) to `path`, set against
    the run `other_id` when given (`agreement`: each compared version's agreement with the human
    labels, by its label: `engine.report.html.render_report`), and say so on stderr; exits with a
    message when it cannot."""
    from ..report.data import ReportError, load_run

    try:
        run = load_run(run_id, db)
        other = load_run(other_id, db) if other_id is not None else None
    except ReportError as exc:
        fail(str(exc))
    _write(path, run, other, agreement)


def _write(path: Path, run: Any, other: Any, agreement: Optional[dict[str, Any]] = None) -> None:
    from ..report.charts import ReportDependencyError
    from ..report.html import write_report
    from .output import err_console

    try:
        size = write_report(path, run, other, agreement)
    except ReportDependencyError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the report {path}: {exc.strerror or exc}")
    err_console().print(f"report: {path} ({_size(size)})", markup=False, highlight=False, soft_wrap=True)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


@app.command("report")
def report_cmd(
    run: str = typer.Argument(..., metavar="RUN", help="A run id (a unique prefix is enough) or a run's JSONL out "
                              "file."),
    compare: Optional[str] = typer.Option(None, "--compare", metavar="RUN_B", help="A second run (id, prefix or out "
                                          "file) to set against RUN item by item: a scatter of scores, the paired "
                                          "difference, the items that moved."),
    output: Path = typer.Option(Path("report.html"), "-o", "--output", metavar="FILE", help="The HTML file to "
                                "write."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
) -> None:
    """Write a run's HTML report: one file, everything inline, that opens from disk in any
    browser — header, per-scorer histograms and statistics, ROC and confusion matrix for a
    calibrate run, A-vs-B with --compare, and a table of every item (sortable, filterable;
    a row opens the item's prompts, answers, reasons and errors)."""
    from ..report.data import ReportError, load_run
    from ..run.store import Store, default_store_path

    check_report_dependencies()
    path = store or default_store_path()
    db = Store(path) if Path(path).exists() else None  # an out file needs no store: none is created
    try:
        try:
            first = load_run(run, db)
            second = load_run(compare, db) if compare is not None else None
        except ReportError as exc:
            fail(str(exc))
        _write(output, first, second)
    finally:
        if db is not None:
            db.close()

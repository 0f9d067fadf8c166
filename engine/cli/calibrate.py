"""The CLI's calibration commands: ``scorespec calibrate`` (a scorer's agreement with human labels,
`engine.analysis.calibration`) and ``scorespec calibrations`` (the stored figures, newest first).

Registered on `engine.cli.app.app` when imported (the command group imports it when ``calibrate``
or ``calibrations`` is asked for); its judge, run and out-file flags are the groups of
`engine.cli.flags`. Exit codes
of ``calibrate``: 0; 2 on errors (failed items included: resume to retry them); 3 when the
``--max-cost`` budget stopped it (the figures cover the items scored); 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import EXIT_BUDGET, app, fail
from .cache import cache_line
from .errors import run_async
from .flags import JudgeFlags, OutFlags, RunFlags, build_settings, with_flag_groups
from .html import check_report_dependencies, write_run_report
from .label_files import LabelsFile, labelled_data
from .options import (
    AsJson,
    Cutoff,
    FiguresJson,
    LabelField,
    LabelsJunit,
    Negative,
    Positive,
    Quiet,
    Report,
    StorePath,
    SubScore,
    SummaryMd,
    Top,
)
from .runs import open_store
from .stats_options import Confidence

__all__ = ["calibrate_cmd", "calibrations_cmd"]


@app.command("calibrate")
@with_flag_groups
def calibrate_cmd(
    scorer: Annotated[str, typer.Argument(metavar="SCORER", help="A scorer id or spec file (LABEL=SPEC: under a "
                                                                  "label).")],
    data: Annotated[Path, typer.Option("--data", help="JSONL, CSV or JSON-array file of labelled items.")],
    label_field: LabelField = "label",
    labels_file: LabelsFile = None,
    positive: Positive = [],
    negative: Negative = [],
    cutoff: Cutoff = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Deprecated: the old name of --cutoff "
                                                       "(eval's --threshold bounds a mean instead).")] = None,
    not_scorable_score: Annotated[Optional[float], typer.Option(
        "--not-scorable-score", help="Score given to not scorable items [default: left out of the figures].")] = None,
    top: Top = 5,
    score: SubScore = None,
    judge: JudgeFlags = JudgeFlags(),
    run: RunFlags = RunFlags(),
    out: OutFlags = OutFlags(),
    store: StorePath = None,
    quiet: Quiet = False,
    as_json: FiguresJson = False,
    junit: LabelsJunit = None,
    summary_md: SummaryMd = None,
    report_file: Report = None,
    confidence: Confidence = 0.95,
) -> None:
    """Measure a scorer's agreement with human labels: balanced accuracy, ROC AUC and the
    confusion matrix for binary labels (--positive), Spearman and Pearson for graded ones, and for
    a scorer with a label result the confusion matrix, per-class precision and recall, accuracy,
    macro F1 and Cohen's kappa over any number of classes; the
    items it disagrees with most, with the judge's reasons. Exit 0, 2 on errors (failed items
    included: resume to retry them), or 3 when the --max-cost budget stopped it (the figures
    cover the items scored)."""
    from ..analysis.calibration import CalibrationSettings
    from .loading import load_scorers

    if not data.is_file():
        fail(f"--data {data}: no such file")
    if negative and not positive:
        fail("--negative needs --positive too")
    if out.resume and out.out is None:
        fail("--resume needs --out FILE")
    cutoff = _cutoff(cutoff, threshold)
    if report_file is not None:
        check_report_dependencies()
    labels = CalibrationSettings(label_field=label_field or "label", positive=positive or None,
                                 negative=negative or None, cutoff=cutoff, not_scorable_score=not_scorable_score,
                                 top=top, confidence=confidence, score=score)
    settings, judge_settings = build_settings(judge, run, out)
    choice = {"command": "calibrate", "scorers": [scorer], "data": str(data.resolve()), "options": judge.option,
              "model": judge.model, "base_url": judge.base_url}
    db = open_store(store)
    try:
        (loaded,) = load_scorers([scorer], judge_settings, judge.option, settings.samples)
        report = _calibrate(loaded, labelled_data(data, labels_file, label_field or "label"), labels, settings, db,
                            quiet, choice)
        _print_calibration(report, as_json)
        if junit or summary_md:
            from ..report.ci import calibration_report
            from .ci_files import write_reports_or_exit

            write_reports_or_exit(calibration_report(report, db.results(report.run_id)), junit, summary_md)
        if report_file is not None:
            write_run_report(report_file, db, report.run_id)
        raise typer.Exit(EXIT_BUDGET if report.stopped else 2 if report.failed else 0)
    finally:
        db.close()


def _cutoff(cutoff: Optional[float], threshold: Optional[float]) -> Optional[float]:
    """The score cut-off: --cutoff, or the deprecated --threshold (with a warning)."""
    if threshold is None:
        return cutoff
    if cutoff is not None:
        fail("--threshold is the old name of --cutoff: give only --cutoff")
    from .output import err_console

    err_console().print(f"warning: calibrate --threshold is deprecated and will be removed: use --cutoff "
                        f"{threshold:g} (a score cut-off; eval's --threshold bounds a mean)", markup=False,
                        highlight=False, soft_wrap=True, style="yellow")
    return threshold


def _calibrate(loaded: Any, data: Path, labels: Any, run: Any, db: Any, quiet: bool, choice: dict[str, Any]) -> Any:
    """`engine.api.acalibrate` on the terminal."""
    from ..api import acalibrate
    from .output import ConsoleReporter

    return run_async(acalibrate(loaded, data, labels, run, store=db, progress=ConsoleReporter(quiet=quiet, per_item=False),
                                config={"cli": choice}),
                     "interrupted: every completed result is saved; run the same command with --out FILE --resume "
                     "to continue")


def _print_calibration(report: Any, as_json: bool) -> None:
    """The figures for people (on stderr with --json, which prints them as JSON on stdout)."""
    from .output import calibration_table, calibration_usage_lines, err_console, fmt, out_console

    console = err_console() if as_json else out_console()
    name = report.scorer if report.label in (None, report.scorer) else f"{report.label} ({report.scorer})"
    console.print(f"calibration of {name} · {report.direction.replace('_', ' ')} · model {report.model or '—'} "
                  f"· spec {report.spec_hash or '—'} · run {report.run_id}", markup=False, highlight=False,
                  soft_wrap=True)
    console.print(calibration_table(report))
    if report.judge_calls or report.cache_hits:
        items = report.scored + report.not_scorable + report.failed
        console.print(cache_line(report.scorer, items, report.judge_calls, report.cache_hits), markup=False,
                      highlight=False)
    for line in calibration_usage_lines(report):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True, style="yellow")
    if report.disagreements:
        console.print("largest disagreements:", markup=False)
        for d in report.disagreements:
            reason = " ".join(str(d.reason or "").split())[:300]
            console.print(f"  {d.id}: label {d.label!r}, score {fmt(d.score)} — {reason}", markup=False,
                          highlight=False, soft_wrap=True)
    if report.stopped:
        console.print(f"stopped: {report.stopped}; run the same command with --out FILE --resume and a larger "
                      "--max-cost to finish", markup=False, highlight=False, soft_wrap=True, style="yellow")
    if as_json:
        sys.stdout.write(json.dumps(report.to_json_dict(), ensure_ascii=False) + "\n")


@app.command("calibrations")
def calibrations_cmd(
    scorer: Optional[str] = typer.Argument(None, metavar="[SCORER]", help="Only this scorer's calibrations."),
    store: StorePath = None,
    as_json: AsJson = False,
) -> None:
    """Stored calibrations, newest first: compare two versions of a prompt (spec hash) or two
    judges side by side."""
    from rich.table import Table

    from ..analysis.judge_stats import figure_value
    from .output import err_console, fmt, out_console

    db = open_store(store)
    try:
        rows = db.calibrations(scorer)
    finally:
        db.close()
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return
    if not rows:
        err_console().print("no calibration stored" + (f" for {scorer}" if scorer else ""), markup=False)
        return
    table = Table("when", "run", "scorer", "spec", "model", "used", "balanced acc.", "ROC AUC", "Spearman",
                  box=None, pad_edge=False)
    for row in rows:
        f = row["figures"]
        table.add_row(row["created_at"][:19], row["run_id"], row["scorer"], (row["spec_hash"] or "—")[:12],
                      row["model"] or "—", str(f.get("used")), fmt(figure_value(f.get("balancedAccuracy"))),
                      fmt(f.get("rocAuc")), fmt(figure_value(f.get("spearman"))))
    out_console().print(table)

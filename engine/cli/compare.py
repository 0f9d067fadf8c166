"""``scorespec compare``: versions of a scorer side by side, with evidence (`engine.analysis.compare`).

Registered on `engine.cli.app.app` when imported (the command group imports it when ``compare`` is
asked for). ``compare A B [C…] --data FILE`` runs every version in one batch run (the judge, run
and out-file flags of `engine.cli.flags`, as eval has them);
``compare --runs RUN_A RUN_B`` reads finished runs. The result (`engine.analysis.comparison.Comparison`)
is printed as tables, or as JSON with ``--json``. Exit codes: 0; 1 when ``--fail-if-worse
DELTA`` finds a version worse than the baseline by more than DELTA with its interval excluding
zero; 2 errors (a failed result, an unreadable record, bad arguments); 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import app, fail
from .ci_files import write_reports_or_exit
from .errors import run_async
from .flags import JudgeFlags, RunFlags, StoredRunFlags, build_settings, with_flag_groups
from .html import check_report_dependencies, write_run_report
from .label_files import LabelsFile, labelled_data
from .options import (
    CompareCutoff,
    CompareLabelField,
    CompareTop,
    ComparisonJson,
    LabelsJunit,
    Negative,
    Positive,
    Quiet,
    Report,
    StorePath,
    SubScore,
    SummaryMd,
)
from .stats_options import (
    CompareCalibrations,
    Confidence,
    compare_loaded_or_exit,
    comparison_corrected_lines,
    correct_comparison_or_exit,
)

__all__ = ["compare_cmd", "print_comparison", "usage_text"]

SHOWN_CHANGES = 20  # status changes listed on the terminal (--json lists all)


@app.command("compare")
@with_flag_groups
def compare_cmd(
    versions: Annotated[Optional[list[str]], typer.Argument(
        metavar="VERSION...", help="Scorer ids or spec files, the first the baseline; LABEL=SPEC names a version "
        "(e.g. faithfulness faithfulness@draft=my_specs/faith.yaml). With --runs: RUN or RUN/LABEL.")] = None,
    runs: Annotated[bool, typer.Option(
        "--runs", help="Compare finished runs (the arguments are run ids, RUN/LABEL to pick one label of a run) "
        "instead of running versions.")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", help="JSONL, CSV or JSON-array file of items (with "
                                                                "--runs: only for human labels).")] = None,
    judge: JudgeFlags = JudgeFlags(),
    run: RunFlags = RunFlags(),
    stored: StoredRunFlags = StoredRunFlags(),
    store: StorePath = None,
    label_field: CompareLabelField = None,
    labels_file: LabelsFile = None,
    positive: Positive = [],
    negative: Negative = [],
    cutoff: CompareCutoff = None,
    top: CompareTop = 5,
    score: SubScore = None,
    seed: Annotated[int, typer.Option("--seed", help="The bootstrap's random seed.")] = 0,
    fail_if_worse: Annotated[Optional[float], typer.Option(
        "--fail-if-worse", min=0, metavar="DELTA", help="Exit 1 when a version is worse than the baseline by more "
        "than DELTA (by direction) with its 95% interval excluding zero.")] = None,
    quiet: Quiet = False,
    as_json: ComparisonJson = False,
    junit: LabelsJunit = None,
    summary_md: SummaryMd = None,
    report_file: Report = None,
    calibration: CompareCalibrations = [],
    confidence: Confidence = 0.95,
) -> None:
    """Compare versions of a scorer, the first the baseline: counts and means, the paired
    difference with a 95% interval, wins and losses, the signed-rank test, status changes, the
    items that moved most, and with labels each version's agreement and McNemar's test."""
    from ..analysis.compare import CompareSettings
    from .runs import open_store

    names = list(versions or [])
    if report_file is not None:
        check_report_dependencies()
    if negative and not positive:
        fail("--negative needs --positive too")
    if data is not None and not data.is_file():
        fail(f"--data {data}: no such file")
    settings = CompareSettings(runs=tuple(names) if runs else None, top=top, seed=seed, cutoff=cutoff, score=score,
                               label_field="label" if (positive or labels_file) and label_field is None else label_field,
                               positive=positive or None, negative=negative or None)
    db = open_store(store)
    try:
        call = _comparison_call(names, (data, labels_file), settings, (judge, run, stored), db, quiet)
        calibrations = compare_loaded_or_exit(calibration, db)
        comparison = run_async(call, "interrupted: every completed result is saved; run the same command with "
                                     "--resume to continue")
        correct_comparison_or_exit(comparison, calibrations, confidence, db)
        exit_code = _print_and_write(comparison, db, as_json, fail_if_worse, (junit, summary_md, report_file))
    finally:
        db.close()
    raise typer.Exit(exit_code)


def _comparison_call(names: list[str], files: tuple[Optional[Path], Optional[Path]], settings: Any,
                     flags: tuple[Any, Any, Any], db: Any, quiet: bool) -> Any:
    """The `engine.api.acompare` coroutine: of finished runs, or of the versions loaded with the
    judge, run and out-file flags (`flags`) and run over the data of `files` (``--data``, with the
    labels of ``--labels``); exits (2) on bad arguments."""
    from ..api import acompare
    from .loading import load_scorers
    from .output import ConsoleReporter

    judge, run_flags, stored = flags
    data, labels_file = files
    items = labelled_data(data, labels_file, settings.label_field or "label")
    if settings.runs is not None:
        if len(names) < 1:
            fail("give the runs to compare: scorespec compare --runs RUN_A RUN_B (see `scorespec runs`)")
        return acompare(None, items, settings, build_settings(judge, run_flags, stored)[0], store=db)
    if len(names) < 2:
        fail("give at least two versions, the first the baseline (e.g. scorespec compare faithfulness "
             "faithfulness@draft=my_specs/faith.yaml --data items.jsonl), or --runs RUN_A RUN_B")
    if data is None:
        fail("--data FILE is required (or compare finished runs with --runs)")
    if stored.resume and stored.out is None and stored.run_id is None:
        fail("--resume needs --out FILE or --run-id ID (see `scorespec runs`)")
    run, judge_settings = build_settings(judge, run_flags, stored)
    scorers = load_scorers(names, judge_settings, judge.option, run.samples)
    choice = {"command": "compare", "scorers": names, "data": str(data.resolve()), "options": judge.option,
              "model": judge.model, "base_url": judge.base_url}
    return acompare(scorers, items, settings, run, store=db, progress=ConsoleReporter(quiet=quiet, per_item=False),
                    config={"cli": choice})


def _print_and_write(comparison: Any, db: Any, as_json: bool, fail_if_worse: Optional[float],
                     files: tuple[Optional[Path], Optional[Path], Optional[Path]]) -> int:
    """Print the comparison (as JSON on stdout with --json), write the CI files (``--junit``,
    ``--summary-md``) and the HTML report; the exit code."""
    from .output import err_console, out_console

    junit, summary_md, report_file = files
    print_comparison(comparison, err_console() if as_json else out_console(), fail_if_worse)
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json_dict(), ensure_ascii=False) + "\n")
    exit_code = comparison.exit_code(fail_if_worse)
    if junit or summary_md:
        from ..report.ci import comparison_report

        lines = [line for run in comparison.run_ids for line in db.results(run)]
        gate = fail_if_worse is None or not comparison.worse(fail_if_worse)
        report = comparison_report(comparison.headline, gate, comparison.summaries(), lines,
                                   run_id=",".join(comparison.run_ids),
                                   directions={v.label: v.direction for v in comparison.versions.values()},
                                   seconds=comparison.seconds)
        write_reports_or_exit(report, junit, summary_md)
        exit_code = max(exit_code, report.exit_code)
    if report_file is not None:  # a run of the versions, or the first finished run set against the second
        ids = comparison.run_ids
        write_run_report(report_file, db, ids[0], other_id=ids[1] if len(ids) > 1 else None,
                         agreement=_agreement_views(comparison))
    return exit_code


def _agreement_views(comparison: Any) -> dict[str, dict[str, Any]]:
    """Each version's agreement with the human labels beside the baseline's, by version label,
    for the HTML report (the figures the terminal shows)."""
    from .output import fmt

    views = {}
    for c in comparison.comparisons:
        lab = c.labels
        if lab is not None:
            views[c.label] = {"head": lab.headline(fmt), "baseline": c.baseline, "version": c.label,
                              "rows": [(title, fmt(a), fmt(b)) for title, a, b in lab.rows()],
                              "notes": lab.notes(), "test": lab.test_line(c.baseline, c.label)}
    return views


# --- the terminal report -----------------------------------------------------------------------


def _say(console: Any, text: str, style: str | None = None) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True, style=style)


def _one_line(text: Any, limit: int = 300) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= limit else words[:limit - 1] + "…"


def print_comparison(comparison: Any, console: Any, fail_if_worse: float | None = None) -> None:
    """A `Comparison` for people: the versions table, then per version against the baseline the
    paired difference in words, status changes, movers and label figures; then the gate."""
    from rich.markup import escape
    from rich.table import Table

    from ..core.direction import words
    from .output import fmt

    _say(console, f"compare · baseline {comparison.baseline} · {words(comparison.direction)} · run "
         f"{', '.join(comparison.run_ids) or '—'} · {comparison.items} item(s), {comparison.common} scored by every "
         "version (the means below are over those)")
    table = Table("version", "scorer", "spec", "scored", "not scorable", "failed", "mean", "median", "judge usage",
                  box=None, pad_edge=False)
    for v in comparison.versions.values():
        used = usage_text(v)
        table.add_row(escape(v.label), escape(v.scorer), (v.spec_hash or "—")[:12], str(v.scored), str(v.not_scorable),
                      f"[red]{v.failed}[/red]" if v.failed else "0", fmt(v.mean), fmt(v.median), escape(used))
    console.print(table)
    if comparison.stopped:
        _say(console, f"stopped: {comparison.stopped} (exit 3; --resume with a larger --max-cost continues)", "yellow")
    for note in comparison.notes:
        _say(console, f"note: {note}", "yellow")
    for c in comparison.comparisons:
        p = c.paired
        _say(console, f"\n{c.label} vs {comparison.baseline}", "bold")
        _say(console, f"  {c.words}")
        if p.n:
            _say(console, f"  {p.n} pair(s) · wins {p.wins} · ties {p.ties} · losses {p.losses} · Wilcoxon signed-rank "
                 f"test · bootstrap interval, seed {comparison.seed}", "dim")
        _print_changes(console, c)
        _print_movers(console, c, comparison.baseline)
        if c.labels is not None:
            _print_labels(console, c, comparison.baseline)
        elif p.n:
            _say(console, "  no human labels: this says the scores differ, not which version agrees better with "
                 "people (give the items human labels and --positive to compare agreement)", "yellow")
    for line in comparison_corrected_lines(comparison):
        _say(console, line)
    if fail_if_worse is not None:
        worse = comparison.worse(fail_if_worse)
        if worse:
            _say(console, f"\nworse than {comparison.baseline} by more than {fail_if_worse:g}: {', '.join(worse)} "
                 "(exit 1)", "red")
        else:
            _say(console, f"\nno version is worse than {comparison.baseline} by more than {fail_if_worse:g} with its "
                 "interval excluding zero", "green")
    if comparison.failed:
        _say(console, f"{comparison.failed} failed result(s): they are status changes or left out; resume the run to "
             "retry them (exit 2)", "red")
    if comparison.dataset_problems:
        _say(console, f"{comparison.dataset_problems} dataset record(s) unreadable (exit 2)", "red")


def usage_text(v: Any) -> str:
    """A version's judge usage for the table: its tokens and cost (with the cache hits), ``all
    answers from the cache (N hits)`` when the cache answered every call, else ``—``."""
    from .output import tokens_text

    if v.tokens_in or v.tokens_out:
        return tokens_text(v.tokens_in, v.tokens_out, v.cost_usd, v.cache_hits)
    if v.cache_hits and not v.judge_calls:
        return f"all answers from the cache ({v.cache_hits} hit{'s' if v.cache_hits != 1 else ''})"
    if v.judge_calls:
        return f"{v.judge_calls} judge call{'s' if v.judge_calls != 1 else ''} (no token counts)"
    return "—"


def _print_changes(console: Any, c: Any) -> None:
    from .output import fmt

    if not c.status_changes:
        return
    _say(console, f"  status changed on {len(c.status_changes)} item(s) (not in the means):")
    for change in c.status_changes[:SHOWN_CHANGES]:
        def side(status: str, score: float | None) -> str:
            return f"scored {fmt(score)}" if status == "scored" else status.replace("_", " ")

        detail = change.detail if change.status in ("failed", "not_scorable") else change.baseline_detail
        _say(console, f"    {change.id}: {side(change.baseline_status, change.baseline_score)} → "
             f"{side(change.status, change.score)}" + (f" — {_one_line(detail, 200)}" if detail else ""))
    if len(c.status_changes) > SHOWN_CHANGES:
        _say(console, f"    … and {len(c.status_changes) - SHOWN_CHANGES} more (--json lists all)")


def _print_movers(console: Any, c: Any, baseline: str) -> None:
    from .output import fmt

    if not c.movers:
        return
    _say(console, "  moved most:")
    for m in c.movers:
        where = f"first differing stage {m.first_differing_stage}" if m.first_differing_stage else \
            "every stage answered the same"
        _say(console, f"    {m.id}: {fmt(m.baseline_score)} → {fmt(m.score)} ({m.difference:+.4g}) · {where}")
        for name, reason in ((baseline, m.baseline_reason), (c.label, m.reason)):
            if reason:
                _say(console, f"      {name}: {_one_line(reason)}", "dim")


def _print_labels(console: Any, c: Any, baseline: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    from .output import fmt

    lab = c.labels
    _say(console, "  " + lab.headline(fmt))
    table = Table("  figure", escape(baseline), escape(c.label), box=None, pad_edge=False)
    for title, ours, theirs in lab.rows():
        table.add_row(f"  {title}", fmt(ours), fmt(theirs))
    console.print(table)
    for note in lab.notes():
        _say(console, f"  note: {note}", "yellow")
    test = lab.test_line(baseline, c.label)
    if test is not None:
        _say(console, "  " + test)

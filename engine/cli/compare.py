"""``scorespec compare``: versions of a scorer side by side, with evidence (`engine.analysis.compare`).

Registered on `engine.cli.app.app` when imported (`engine.cli.main.main` does so with the batch
commands). ``compare A B [C…] --data FILE`` runs every version in one batch run (eval's flags);
``compare --runs RUN_A RUN_B`` reads finished runs. The result (`engine.analysis.comparison.Comparison`)
is printed as tables, or as JSON with ``--json``. Exit codes: 0; 1 when ``--fail-if-worse
DELTA`` finds a version worse than the baseline by more than DELTA with its interval excluding
zero; 2 errors (a failed result, an unreadable record, bad arguments); 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .app import MODEL_HELP, app, fail
from .cache import CACHE_HELP, NO_CACHE_HELP, REFRESH_HELP, command_cache
from .ci_files import JUNIT_HELP, SUMMARY_MD_HELP, write_reports_or_exit
from .eval import MAX_COST_HELP, PRICES_HELP, SAMPLES_HELP
from .html import REPORT_HELP, check_report_dependencies, write_run_report

__all__ = ["compare_cmd", "print_comparison"]

SHOWN_CHANGES = 20  # status changes listed on the terminal (--json lists all)


@app.command("compare")
def compare_cmd(
    versions: Optional[list[str]] = typer.Argument(None, metavar="VERSION...", help="Scorer ids or spec files, the "
                                                   "first the baseline; LABEL=SPEC names a version (e.g. faithfulness "
                                                   "faithfulness@draft=my_specs/faith.yaml). With --runs: RUN or "
                                                   "RUN/LABEL."),
    runs: bool = typer.Option(False, "--runs", help="Compare finished runs (the arguments are run ids, RUN/LABEL to "
                              "pick one label of a run) instead of running versions."),
    data: Optional[Path] = typer.Option(None, "--data", help="JSONL, CSV or JSON-array file of items (with --runs: "
                                        "only for human labels)."),
    field: list[str] = typer.Option([], "--field", help="name=column: read a run field from another column."),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="An OpenAI-compatible server's URL."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="Scorer runs (judge requests) at "
                                              "once [default: 8; 1 on an embedded model]."),
    rate_limit: Optional[float] = typer.Option(None, "--rate-limit", help="Judge requests per second, at most."),
    option: list[str] = typer.Option([], "--option", help="LABEL.key=value (one version), ID.key=value (every "
                                     "version of spec ID) or key=value (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", help="JSONL file receiving one line per item and version."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run of --out (or of --run-id)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="The run's id (to resume a run without --out)."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    label_field: Optional[str] = typer.Option(None, "--label-field", help="The items' human label (dots reach "
                                              "inside) [default with --positive: label]."),
    positive: list[str] = typer.Option([], "--positive", help="A label value of the class that should score high "
                                       "(repeatable). Without it, labels are graded numbers."),
    negative: list[str] = typer.Option([], "--negative", help="A label value of the other class (repeatable); "
                                       "default: every other label."),
    cutoff: Optional[float] = typer.Option(None, "--cutoff", help="A decision is positive when score ≥ this "
                                           "[default: half the scale]."),
    top: int = typer.Option(5, "--top", min=0, help="List the N items whose score moved most."),
    seed: int = typer.Option(0, "--seed", help="The bootstrap's random seed."),
    fail_if_worse: Optional[float] = typer.Option(None, "--fail-if-worse", min=0, metavar="DELTA", help="Exit 1 "
                                                  "when a version is worse than the baseline by more than DELTA "
                                                  "(by direction) with its 95% interval excluding zero."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar, no per-item lines (for CI)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON on stdout."),
    cache: Optional[str] = typer.Option(None, "--cache", metavar="PATH|URL", help=CACHE_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
    refresh: bool = typer.Option(False, "--refresh", help=REFRESH_HELP),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", help=JUNIT_HELP),
    summary_md: Optional[Path] = typer.Option(None, "--summary-md", metavar="FILE", help=SUMMARY_MD_HELP),
    report_file: Optional[Path] = typer.Option(None, "--report", metavar="FILE", help=REPORT_HELP),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=50, help=SAMPLES_HELP),
    prices: Optional[Path] = typer.Option(None, "--prices", help=PRICES_HELP),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", metavar="USD", help=MAX_COST_HELP),
) -> None:
    """Compare versions of a scorer, the first the baseline: counts and means, the paired
    difference with a 95% interval, wins and losses, the signed-rank test, status changes, the
    items that moved most, and with labels each version's agreement and McNemar's test."""
    import asyncio

    from ..analysis.compare import acompare
    from ..run.items import DatasetError
    from .eval import EXIT_INTERRUPTED, _load_scorers, _open_store
    from .output import ConsoleReporter, err_console, out_console

    names = list(versions or [])
    if report_file is not None:
        check_report_dependencies()
    if positive and label_field is None:
        label_field = "label"
    if negative and not positive:
        fail("--negative needs --positive too")
    if data is not None and not data.is_file():
        fail(f"--data {data}: no such file")
    labels = dict(label_field=label_field, positive=positive or None, negative=negative or None, cutoff=cutoff,
                  top=top, seed=seed, fields=field)
    db = _open_store(store)
    try:
        if runs:
            if len(names) < 1:
                fail("give the runs to compare: scorespec compare --runs RUN_A RUN_B (see `scorespec runs`)")
            call = acompare(runs=names, data=data, store=db, **labels)
        else:
            if len(names) < 2:
                fail("give at least two versions, the first the baseline (e.g. scorespec compare faithfulness "
                     "faithfulness@draft=my_specs/faith.yaml --data items.jsonl), or --runs RUN_A RUN_B")
            if data is None:
                fail("--data FILE is required (or compare finished runs with --runs)")
            if resume and out is None and run_id is None:
                fail("--resume needs --out FILE or --run-id ID (see `scorespec runs`)")
            scorers = _load_scorers(names, model, base_url, option, command_cache(cache, no_cache, refresh), refresh,
                                    samples)
            run_options = dict(concurrency=concurrency, rate_limit=rate_limit, out=out, resume=resume, run_id=run_id,
                               prices=prices, max_cost=max_cost,
                               progress=ConsoleReporter(quiet=quiet, per_item=False),
                               config={"cli": {"command": "compare", "scorers": names, "data": str(data.resolve()),
                                               "fields": field, "options": option, "model": model,
                                               "base_url": base_url}})
            call = acompare(scorers, data, store=db, **labels, **run_options)
        try:
            comparison = asyncio.run(call)
        except KeyboardInterrupt:
            err_console().print("interrupted: every completed result is saved; run the same command with --resume "
                                "to continue", markup=False)
            raise typer.Exit(EXIT_INTERRUPTED)
        except (ValueError, FileExistsError, DatasetError) as exc:
            fail(str(exc))
        print_comparison(comparison, err_console() if as_json else out_console(), fail_if_worse)
        if as_json:
            sys.stdout.write(json.dumps(comparison.to_json_dict(), ensure_ascii=False) + "\n")
        exit_code = comparison.exit_code(fail_if_worse)
        if junit or summary_md:
            from ..report.ci import comparison_report

            lines = [line for run in comparison.run_ids for line in db.results(run)]
            report = comparison_report(comparison.headline, fail_if_worse is None or not comparison.worse(fail_if_worse),
                                       comparison.summaries(), lines, run_id=",".join(comparison.run_ids),
                                       directions={v.label: v.direction for v in comparison.versions.values()},
                                       seconds=comparison.seconds)
            write_reports_or_exit(report, junit, summary_md)
            exit_code = max(exit_code, report.exit_code)
        if report_file is not None:  # a run of the versions, or the first finished run set against the second
            ids = comparison.run_ids
            write_run_report(report_file, db, ids[0], other_id=ids[1] if len(ids) > 1 else None)
    finally:
        db.close()
    raise typer.Exit(exit_code)


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
    from .output import tokens_text

    table = Table("version", "scorer", "spec", "scored", "not scorable", "failed", "mean", "median", "judge usage",
                  box=None, pad_edge=False)
    for v in comparison.versions.values():
        used = tokens_text(v.tokens_in, v.tokens_out, v.cost_usd) if v.tokens_in or v.tokens_out else "—"
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

    from ..analysis.compare_stats import p_text
    from .output import fmt

    lab = c.labels
    head = f"  human labels ({lab.kind}) on {lab.n} item(s) both scored"
    if lab.cutoff is not None:
        head += f", decision: score ≥ {fmt(lab.cutoff)}"
    if lab.left_out:
        head += f"; {lab.left_out} without a usable label left out"
    _say(console, head)
    table = Table("  figure", escape(baseline), escape(c.label), box=None, pad_edge=False)
    rows = ([("balanced accuracy", "balanced_accuracy"), ("accuracy", "accuracy"), ("ROC AUC", "roc_auc")]
            if lab.kind == "binary" else [("Spearman", "spearman"), ("Pearson", "pearson")])
    for title, key in rows:
        table.add_row(f"  {title}", fmt(getattr(lab.baseline, key)), fmt(getattr(lab.version, key)))
    console.print(table)
    for note in dict.fromkeys((*lab.baseline.notes, *lab.version.notes)):
        _say(console, f"  note: {note}", "yellow")
    test = lab.mcnemar
    if test is not None:
        result = p_text(test.p_value) if test.p_value is not None else test.note
        _say(console, f"  McNemar (exact): {test.baseline_only} item(s) only {baseline} decided right, "
             f"{test.version_only} only {c.label} · {result}")

"""Terminal output of the batch commands (``scorespec eval``, ``show``): rich consoles, the
progress reporter, the summary table. Imported when a batch command runs, not at startup, since it
needs the whole eval machinery (pydantic result models among it)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from ..core.result import ScoreResult
from ..run.items import DatasetProblem, Item
from ..run.reporting import EvalReporter, RunState, answers_text
from ..run.summary import EvalSummary, ScorerSummary


def _console(stderr: bool) -> Any:
    """A rich console; when not a terminal (CI logs, pipes), wide enough for the tables."""
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, highlight=False, width=160)
    return console


def err_console() -> Any:
    """A rich console on stderr (progress, problems, failures)."""
    return _console(True)


def out_console() -> Any:
    """A rich console on stdout (tables, summaries)."""
    return _console(False)


# --- terminal reporting -------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    """A figure for the terminal: up to 4 decimals, trailing zeros dropped (0.9997, not 1)."""
    return "—" if value is None else f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "—"


def _result_text(result: ScoreResult) -> str:
    if result.not_scorable is not None:
        return "not scorable"
    return fmt(result.score)


def failure_line(item_id: Any, result: ScoreResult) -> str:
    """``item 2: faithfulness failed at stage preprocess (transport): …`` — one line, naming the
    scorer by its label in the run."""
    e = result.error
    assert e is not None
    where = f" at stage {e.stage}" if e.stage else ""
    message = " ".join(str(e.message).split())
    return f"item {item_id}: {result.label} failed{where} ({e.kind}): {message[:400]}"


PLAIN_LINES = 10  # without a terminal: a progress line per tenth of the items (and at the end)
PLAIN_EVERY_S = 30.0  # … and at least this often while judge answers come in


class ConsoleReporter(EvalReporter):
    """Progress on stderr: a rich bar with ETA, the judge answers so far (they move while an item
    is in flight: an embedded judge may take a minute an item) and the running mean per scorer,
    one line per item (unless `quiet` or not `per_item`), and — always — dataset problems and one
    line per failed result.

    Without a terminal (a CI log, a pipe: no bar can be drawn) and not `quiet`, plain lines stand
    in for the bar when items get no line of their own (not `per_item`): ``12/20 item(s) done ·
    24 judge answer(s) · faithfulness 0.75`` every tenth of the items (`PLAIN_LINES`; every 10
    items when the total is unknown), at least every `PLAIN_EVERY_S` seconds while judge answers
    come in, and at the end."""

    def __init__(self, *, quiet: bool = False, per_item: bool = True, console: Any = None):
        self.quiet = quiet
        self.per_item = per_item and not quiet
        self.console = console or err_console()
        self._progress: Any = None
        self._task: Any = None
        self._plain = False  # plain progress lines instead of the bar
        self._every = 10
        self._said: tuple[int, int, float] = (0, 0, 0.0)  # items done and answers at the last plain line, when

    def start(self, run: RunState) -> None:
        verb = "resuming run" if run.resuming else "run"
        where = []
        if run.out:
            where.append(f"out {run.out}")
        if run.store:
            where.append(f"store {run.store}")
        self.console.print(f"{verb} {run.run_id} · scorers {', '.join(run.labels)}"
                           + (f" · {run.total} item(s)" if run.total is not None else "")
                           + (" · " + " · ".join(where) if where else ""), markup=False, highlight=False,
                           soft_wrap=True)
        if self.quiet:
            return
        if not self.console.is_terminal:
            self._plain = True
            self._every = max(1, -(-run.total // PLAIN_LINES)) if run.total else 10
            self._said = (0, 0, time.perf_counter())
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            SpinnerColumn(), BarColumn(), MofNCompleteColumn(), TextColumn("eta"), TimeRemainingColumn(),
            TimeElapsedColumn(), TextColumn("{task.description}"), console=self.console, transient=False,
            refresh_per_second=4)
        self._progress.start()
        self._task = self._progress.add_task(self._means(run), total=run.total)

    def _means(self, run: RunState) -> str:
        parts = [answers_text(run, plural=True)] if run.answers or run.failed_calls else []
        for sid in run.labels:
            stats = run.stats[sid]
            text = f"{sid} {fmt(stats.running_mean)}"
            if stats.failed:
                text += f" ({stats.failed} failed)"
            parts.append(text)
        return " · ".join(parts)

    def _print(self, text: str, style: str | None = None) -> None:
        target = self._progress.console if self._progress is not None else self.console
        target.print(text, markup=False, highlight=False, soft_wrap=True, style=style)

    def problem(self, problem: DatasetProblem) -> None:
        self._print(problem.render(), style="yellow")

    def note(self, message: str) -> None:
        self._print(message, style="dim")

    def _plain_line(self, run: RunState, *, at_end: bool = False) -> None:
        """A plain progress line (no terminal) when the items done reach the next multiple of
        `_every`, when `PLAIN_EVERY_S` passed since the last one, or at the end; never twice for
        the same items and answers."""
        if not self._plain or self.per_item and not at_end:
            return
        from ..run.reporting import progress_line

        done = run.done_items + run.resumed
        last_done, last_answers, last_time = self._said
        due = at_end or done // self._every > last_done // self._every or \
            time.perf_counter() - last_time >= PLAIN_EVERY_S
        if due and (done, run.answers + run.failed_calls) != (last_done, last_answers):
            self._said = (done, run.answers + run.failed_calls, time.perf_counter())
            self._print(progress_line(run))

    def skipped(self, run: RunState, count: int) -> None:
        self._plain_line(run)
        if self._progress is not None:
            self._progress.update(self._task, advance=count, description=self._means(run))

    def item_done(self, run: RunState, item: Item, results: Mapping[str, ScoreResult]) -> None:
        for result in results.values():
            if result.error is not None:
                self._print(failure_line(item["id"], result), style="red")
        shown = {sid: r for sid, r in results.items() if r.error is None}  # a failure has its own line
        if self.per_item and shown:
            self._print(f"{item['id']}: " + " · ".join(f"{sid} {_result_text(r)}" for sid, r in shown.items()),
                        style="dim")
        self._plain_line(run)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=self._means(run))

    def judge_answered(self, run: RunState) -> None:
        self._plain_line(run)
        if self._progress is not None:
            self._progress.update(self._task, description=self._means(run))

    def finish(self, run: RunState, summary: EvalSummary | None) -> None:
        self._plain_line(run, at_end=True)
        if self._progress is not None:
            if summary is not None:  # the estimate counted unreadable records too
                done = run.done_items + run.resumed
                self._progress.update(self._task, total=done, completed=done, description=self._means(run))
            self._progress.stop()
            self._progress = None


def summary_table(scorers: Mapping[str, ScorerSummary]) -> Any:
    """The summaries as a rich table, a row per scorer named by its label (and its id when the
    two differ); an ``agreement`` column (the mean agreement of sampled results) when a scorer
    has one."""
    from rich.markup import escape
    from rich.table import Table

    from ..core.direction import short

    sampled = any(s.agreement is not None for s in scorers.values())
    columns = ["scorer", "better", "scored", "not scorable", "failed", "mean", "min", "median", "max"]
    table = Table(*columns, *(["agreement"] if sampled else []), "threshold", box=None, pad_edge=False)
    for s in scorers.values():
        if s.threshold is None:
            limit = ""
        else:
            limit = f"{s.threshold} " + ("[green]met[/green]" if s.threshold_met else "[red]missed[/red]")
        name = s.label if s.label == s.scorer or s.label.startswith(f"{s.scorer}.") else f"{s.label} ({s.scorer})"
        table.add_row(escape(name), short(s.direction), str(s.scored), str(s.not_scorable),
                      f"[red]{s.failed}[/red]" if s.failed else "0",
                      fmt(s.mean), fmt(s.min), fmt(s.median), fmt(s.max),
                      *([fmt(s.agreement)] if sampled else []), limit)
    return table


VERDICT_TEXT = {"passed": "[green]passed[/green]", "below_threshold": "[red]below threshold[/red]",
                "errors": "[red]errors[/red]", "budget_reached": "[yellow]budget reached[/yellow]"}


def tokens_text(tokens_in: int, tokens_out: int, usd: float | None, hits: int = 0, *, reasoning: int = 0,
                unreported: int = 0) -> str:
    """``12,345 tokens in · 678 out (512 reasoning) · $0.0023 · 4 cache hits (free)``; the cost
    left out when unknown (no price); `unreported` calls (no usage reported) make the tokens
    ``unknown for N call(s)``, never a silent 0."""
    from ..run.prices import usd_text

    text = f"{tokens_in:,} tokens in · {tokens_out:,} out"
    if reasoning:
        text += f" ({reasoning:,} reasoning)"
    if unreported:
        text += f" · tokens unknown for {unreported} call{'s' if unreported != 1 else ''} (no usage reported)"
    if usd is not None:
        text += f" · {usd_text(usd)}"
    if hits:
        text += f" · {hits} cache hit{'s' if hits != 1 else ''} (free)"
    return text


def usage_lines(summary: EvalSummary) -> list[str]:
    """What the attempt's judge calls used and cost: a line per judge model, the total with
    where the prices came from, the budget, and a note for a model without a price."""
    from ..run.prices import usd_text

    lines = []
    cost = summary.cost
    for model, usage in summary.usage_by_model.items():
        if usage.calls or usage.cache_hits:
            usd = cost.by_model.get(model) if cost is not None else None
            lines.append(f"{model}: " + tokens_text(usage.tokens_in, usage.tokens_out, usd, usage.cache_hits,
                                                    reasoning=usage.reasoning_tokens, unreported=usage.unreported))
    if cost is not None and cost.by_model:
        lines.append(f"cost: {usd_text(cost.usd)}" + ("" if cost.complete else " (incomplete)" if cost.unreported
                                                       else " (priced models only)")
                     + f" · {cost.prices}")
    if summary.budget is not None:
        budget = summary.budget
        before = f", {usd_text(budget['spentBeforeUsd'])} of it in earlier attempts" if budget["spentBeforeUsd"] else ""
        lines.append(f"budget: {usd_text(budget['spentUsd'])} of {usd_text(budget['maxUsd'])} spent{before}")
    if cost is not None and cost.note:
        lines.append(f"note: {cost.note}")
    return lines


def calibration_usage_lines(report: Any) -> list[str]:
    """A calibration's tokens, cost and agreement (nothing when it asked no judge)."""
    lines = []
    if report.tokens_in or report.tokens_out:
        lines.append(f"{report.model or 'judge'}: " + tokens_text(report.tokens_in, report.tokens_out,
                                                                    report.cost_usd, report.cache_hits))
        if report.cost_usd is None:
            lines.append(f"note: no price for {report.model}: tokens only (add it to a price table: --prices FILE)")
    if report.agreement is not None:
        lines.append(f"agreement between samples: {fmt(report.agreement)}")
    return lines


def jury_lines(summary: EvalSummary) -> list[str]:
    """A line per scorer with a jury: per stage the share of questions its jurors agreed on and
    Fleiss' kappa, then the questions each juror was left out of (`engine.run.jury_stats`)."""
    lines = []
    for label, stats in summary.scorers.items():
        jury = getattr(stats, "jury", None)
        if not jury:
            continue
        parts = [f"{stage} agreeing {fmt(figures['agreeing'])}" + (f" · kappa {fmt(figures['kappa'])}"
                                                                    if figures["kappa"] is not None else "")
                 for stage, figures in jury["stages"].items()]
        out = [f"{model} {n}" for model, n in jury["failed"].items() if n]
        lines.append(f"jury of {label}: " + "; ".join(parts) + (f"; left out: {', '.join(out)}" if out else ""))
    return lines


def print_summary(summary: EvalSummary, console: Any) -> None:
    from ..run.pairwise_stats import pairwise_text
    from .cache import cache_line

    from ..run.summary import flat_summaries

    console.print(summary_table(flat_summaries(summary.scorers)))
    for label, stats in summary.scorers.items():
        if stats.pairwise is not None:
            console.print(f"pairwise: {label}: {pairwise_text(stats.pairwise)}", markup=False, highlight=False,
                          soft_wrap=True)
        if stats.labels:
            counts = " · ".join(f"{value} {n}" for value, n in stats.labels.items())
            console.print(f"labels: {label}: {counts}", markup=False, highlight=False, soft_wrap=True)
        if stats.warned:
            console.print(f"warning: {label}: {stats.warned} result(s) with a warning, the first: "
                          f"{stats.first_warning}", markup=False, highlight=False, soft_wrap=True, style="yellow")
    for sid, usage in summary.usage.items():  # scorers that asked a judge in this attempt
        if usage.calls or usage.cache_hits or usage.cache_misses:
            console.print(cache_line(sid, summary.scorers[sid].total, usage.calls, usage.cache_hits), markup=False,
                          highlight=False)
    for line in usage_lines(summary) + jury_lines(summary):
        console.print(line, markup=False, highlight=False, soft_wrap=True,
                      style="yellow" if line.startswith("note:") else None)
    from .stats_options import corrected_lines

    for line in corrected_lines(summary):
        console.print(line, markup=False, highlight=False, soft_wrap=True,
                      style="yellow" if line.startswith("warning:") or "below" in line else None)
    if summary.stopped:
        by_budget = bool(summary.budget and summary.budget.get("stopped"))
        finish = "a larger --max-cost" if by_budget else "settings the judge accepts"
        console.print(f"stopped: {summary.stopped}; {summary.left} item(s) left: run it again with --resume and "
                      f"{finish} to finish", markup=False, highlight=False, soft_wrap=True, style="yellow")
    extra = ""
    if summary.dataset_problems:
        extra += f" · {summary.dataset_problems} dataset record(s) unreadable"
    if summary.failed:
        extra += f" · {summary.failed} failed result(s)"
    if summary.items == 0:
        extra += " · the dataset has no items"
    console.print(f"verdict: {VERDICT_TEXT[summary.verdict]} (exit {summary.exit_code}) · {summary.items} item(s)"
                  + (f", {summary.resumed} done earlier" if summary.resumed else "")
                  + f" in {summary.seconds:.1f}s{extra}", soft_wrap=True)
    where = [f"run {summary.run_id}"]
    if summary.out:
        where.append(f"out {summary.out}")
    if summary.store:
        where.append(f"store {summary.store}")
    console.print("results: " + " · ".join(where), markup=False, highlight=False, soft_wrap=True)


def left_out_text(report: Any) -> str:
    """Why items were left out of a calibration, e.g. `` · 3 left out: 1 with no label, 2 with a
    label neither positive nor negative ('generic' 2)``; empty when none was."""
    if not report.left_out:
        return ""
    parts = []
    if report.unlabelled:
        parts.append(f"{report.unlabelled} with no label")
    if report.other_labels:
        shown = sorted(report.other_labels.items(), key=lambda kv: (-kv[1], kv[0]))
        labels = ", ".join(f"{label!r} {n}" for label, n in shown[:5]) + (", …" if len(shown) > 5 else "")
        parts.append(f"{sum(report.other_labels.values())} with a label neither positive nor negative ({labels})")
    return f" · {report.left_out} left out: " + ", ".join(parts)


def estimate_text(estimate: Any) -> str:
    """An `engine.analysis.judge_stats.Estimate` for the terminal: ``0.9 [0.786, 0.957]`` (the
    interval at the estimate's confidence), ``—`` when undefined."""
    if estimate is None or estimate.value is None:
        return "—"
    if estimate.ci is None:
        return fmt(estimate.value)
    return f"{fmt(estimate.value)} [{estimate.ci[0]:.3f}, {estimate.ci[1]:.3f}]"


def _length_bias_text(bias: Any) -> str | None:
    if not bias or bias.get("spearman") is None:
        return None
    text = f"Spearman {fmt(bias['spearman'])} (p {bias['pValue']:.3g}, {bias['n']} items)"
    within = [f"{label} {fmt(b['spearman'])}" for label, b in (bias.get("byLabel") or {}).items()
              if b.get("spearman") is not None]
    return text + (" · within each label: " + ", ".join(within) if within else "")


_JUROR_FIGURES = {"balancedAccuracy": "balanced accuracy", "cohenKappa": "Cohen's kappa", "rocAuc": "ROC AUC",
                  "spearman": "Spearman"}


def _label_rows(table: Any, figures: Mapping[str, Any]) -> None:
    """A label calibration's rows: accuracy, macro F1, Cohen's kappa, per-class precision and recall,
    and the confusion matrix a row per gold class (``gold → judge: a 8 · b 1 · c 1``)."""
    table.add_row("accuracy", fmt(figures.get("accuracy")))
    table.add_row("macro F1", fmt(figures.get("macroF1")))
    table.add_row("Cohen's kappa", fmt(figures.get("cohenKappa")))
    classes = figures.get("classes") or []
    for name, row in zip(classes, figures.get("confusion") or []):
        per = (figures.get("perClass") or {}).get(name, {})
        table.add_row(f"class {name}", f"precision {fmt(per.get('precision'))} · recall {fmt(per.get('recall'))} · "
                      f"{per.get('support', 0)} gold")
        table.add_row(f"  gold {name} → judge", " · ".join(f"{c} {n}" for c, n in zip(classes, row)))


def calibration_table(report: Any) -> Any:
    """The figures of an `engine.analysis.calibration.Calibration` as a rich table."""
    from rich.table import Table

    table = Table("figure", "value", box=None, pad_edge=False)
    table.add_row("items", f"{report.labelled} labelled · {report.scored} scored · {report.not_scorable} not "
                  f"scorable · {report.failed} failed" + left_out_text(report))
    table.add_row("used in the figures", str(report.used))
    if report.kind == "binary":
        table.add_row("positive / negative", f"{report.positives} / {report.negatives}")
        level = f"{report.confidence * 100:g} %"
        table.add_row(f"balanced accuracy (score ≥ {fmt(report.cutoff)})",
                      estimate_text(report.balanced_accuracy_ci) if report.balanced_accuracy_ci is not None
                      else fmt(report.balanced_accuracy))
        table.add_row(f"accuracy (score ≥ {fmt(report.cutoff)})", fmt(report.accuracy))
        table.add_row(f"true-positive rate [{level} Wilson]", estimate_text(report.true_positive_rate))
        table.add_row(f"true-negative rate [{level} Wilson]", estimate_text(report.true_negative_rate))
        table.add_row(f"Cohen's kappa [{level} bootstrap]", estimate_text(report.cohen_kappa))
        table.add_row("base rate (share of positive labels)", fmt(report.base_rate))
        c = report.confusion
        if c:
            table.add_row("confusion", f"tp {c['tp']} · fp {c['fp']} · tn {c['tn']} · fn {c['fn']}")
        table.add_row("ROC AUC", fmt(report.roc_auc))
        if report.best_cutoff is not None:
            table.add_row(f"best cut-off (fitted on this data): score ≥ {fmt(report.best_cutoff)}",
                          f"balanced accuracy {fmt(report.best_balanced_accuracy)} · accuracy "
                          f"{fmt(report.best_accuracy)}")
    elif report.kind == "pairwise" and report.pairwise is not None:
        p = report.pairwise
        table.add_row("accuracy without ties", f"{fmt(p['accuracyWithoutTies'])} of {p['decided']} decided by both")
        table.add_row("accuracy (A / B / tie)", fmt(p["accuracy"]))
        table.add_row("Cohen's kappa (three classes)", fmt(p["cohenKappa"]))
        table.add_row("position consistency", f"{fmt(p['positionConsistency'])} of {p['bothOrders']}")
    elif report.kind == "labels":
        _label_rows(table, report.label_figures or {})
    else:
        table.add_row("Spearman", estimate_text(report.spearman_ci) if report.spearman_ci is not None
                      else fmt(report.spearman))
        table.add_row("Pearson", fmt(report.pearson))
    bias = _length_bias_text(report.length_bias)
    if bias:
        table.add_row("score against output length", bias)
    for model, figures in (getattr(report, "jurors", None) or {}).items():
        shown = " · ".join(f"{_JUROR_FIGURES.get(name, name)} {fmt(value)}" for name, value in figures.items()
                           if name != "items")
        table.add_row(f"juror {model} ({figures['items']} items)", shown)
    return table

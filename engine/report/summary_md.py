"""A `CIReport` as Markdown, for a pull-request comment or GitHub's job summary.

In order: a title with the verdict; the headline when there is one (compare's paired difference
and verdict, calibrate's figures) in one line; the summary table, a row per scorer label
(scored, not scorable, failed, mean, min, median, max, threshold and whether it was met); the
checks (each threshold and the other gates, passed or not); the worst items per scorer — failed
items first with their stage, kind and message, then the lowest scores (by the scorer's
direction) with their reasons, and cut-off misses marked; then a footer with the run id, the
items, how many were below their item cut-off (only when a cut-off was set) and the seconds.

User text (labels, item ids, reasons, messages) is made safe for a table cell by `md_cell`:
whitespace runs (newlines included) become one space, control characters are dropped, and the
characters Markdown or a table would act on (``| ` * _ [ ] < > ~ \\``, and ``&``) are escaped,
so no text can end a cell, open a code span, a link or an HTML tag.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..core import environment
from ..core.direction import worst_first_key
from ..run.pairwise_stats import pairwise_text
from .ci import CIReport, ItemOutcome, corrected_text

CELL_CHARS = 300
DEFAULT_TOP = 5
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~])")
VERDICT_TITLE = {"passed": "passed ✅", "below_threshold": "below threshold ❌", "errors": "errors ❌"}


def md_cell(text: object, limit: int = CELL_CHARS) -> str:
    """`text` on one line, at most `limit` characters (then ``…``), escaped for a Markdown table cell."""
    flat = " ".join(_CONTROL.sub("", str(text)).split())
    if len(flat) > limit:
        flat = flat[:limit - 1] + "…"
    return _MARKDOWN.sub(r"\\\1", flat.replace("&", "&amp;"))


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _summary_table(report: CIReport) -> list[str]:
    lines = ["| scorer | scored | not scorable | failed | mean | min | median | max | threshold |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for label, s in report.summaries.items():
        same = label == s.scorer or label.startswith(f"{s.scorer}.")  # the scorer itself, or a sub-score of it
        name = md_cell(label) + ("" if same else f" ({md_cell(s.scorer)})")
        limit = ""
        if s.threshold is not None:
            limit = f"{md_cell(s.threshold)} " + ("✅ met" if s.threshold_met else "❌ missed")
        lines.append(f"| {name} | {s.scored} | {s.not_scorable} | {s.failed} | {_fmt(s.mean)} | {_fmt(s.min)} | "
                     f"{_fmt(s.median)} | {_fmt(s.max)} | {limit} |")
    return lines


def _checks(report: CIReport) -> list[str]:
    if not report.gates:
        return []
    mark = {"passed": "✅", "failure": "❌", "error": "❌"}
    lines = ["", "**Checks**", ""]
    lines += [f"- {mark[g.kind]} {md_cell(g.name)}: {md_cell(g.message)}" for g in report.gates]
    return lines


def worst_items(report: CIReport, top: int = DEFAULT_TOP) -> list[ItemOutcome]:
    """Per scorer label, up to `top` items: the failed ones first (in run order), then the
    lowest scores by the scorer's direction (ties in run order)."""
    chosen: list[ItemOutcome] = []
    labels = list(dict.fromkeys([*report.summaries, *(o.label for o in report.outcomes)]))
    for label in labels:
        mine = [o for o in report.outcomes if o.label == label]
        failed = [o for o in mine if o.status == "failed"]
        scored = sorted((o for o in mine if o.status == "scored" and o.score is not None),
                        key=lambda o: worst_first_key(o.score, o.direction))  # type: ignore[arg-type]
        chosen += (failed + scored)[:top]
    return chosen


def _result_cell(o: ItemOutcome) -> str:
    if o.status == "failed":
        where = f" at stage {md_cell(o.error_stage)}" if o.error_stage else ""
        return f"failed{where} ({md_cell(o.error_kind)})"
    text = _fmt(o.score)
    return text + (f" ❌ worse than the cut-off {_fmt(o.cutoff)}" if o.missed_cutoff else "")


def _worst(report: CIReport, top: int) -> list[str]:
    items = worst_items(report, top)
    if not items:
        return []
    lines = ["", f"**Worst items** (up to {top} per scorer)", "", "| scorer | item | result | reason |",
             "| --- | --- | --- | --- |"]
    for o in items:
        why = o.error_message if o.status == "failed" else o.reason
        lines.append(f"| {md_cell(o.label)} | {md_cell(o.item_id)} | {_result_cell(o)} | {md_cell(why or '—')} |")
    return lines


def summary_markdown(report: CIReport, top: int = DEFAULT_TOP) -> str:
    """The report as Markdown text (ends with a newline). top: worst items shown per scorer."""
    lines = [f"### scorespec {report.command}: {VERDICT_TITLE[report.verdict]}", ""]
    if report.headline:
        lines += [f"**{md_cell(report.headline, 1000)}**", ""]
    lines += _summary_table(report)
    corrected = [(label, s.corrected_pass_rate) for label, s in report.summaries.items() if s.corrected_pass_rate]
    if corrected:
        lines += ["", "**Pass rates corrected for the judge's errors** (Rogan-Gladen)", ""]
        lines += [f"- {md_cell(label)}: {md_cell(corrected_text(c))}" for label, c in corrected]
    paired = [(label, s.pairwise) for label, s in report.summaries.items() if s.pairwise]
    if paired:
        lines += ["", "**Pairwise** (output_a against output_b, both orders; ties count half)", ""]
        lines += [f"- {md_cell(label)}: {md_cell(pairwise_text(figures))}" for label, figures in paired]
    lines += _checks(report)
    lines += _worst(report, top)
    footer = f"{len({o.item_id for o in report.outcomes})} item(s)"
    if any(o.cutoff is not None for o in report.outcomes):  # no cut-off set: nothing to count
        footer += f" · {report.counts()['failure']} below the item cut-off"
    if report.run_id:
        footer = f"run {md_cell(report.run_id)} · " + footer
    lines += ["", footer + f" · {report.seconds:.1f} s", ""]
    return "\n".join(lines)


def is_step_summary(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is the file ``$GITHUB_STEP_SUMMARY`` names (which is appended to)."""
    env = environment.value("GITHUB_STEP_SUMMARY")
    return bool(env) and os.path.abspath(env) == os.path.abspath(path)


def write_summary_md(report: CIReport, path: str | os.PathLike[str], *, top: int = DEFAULT_TOP,
                     append: bool | None = None) -> Path:
    """Write `summary_markdown(report)` to `path`: appended when `append` is True, or by default
    when `path` is ``$GITHUB_STEP_SUMMARY`` (other steps write there too); else the file is
    replaced. Returns the path; raises `OSError` when it cannot be written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = summary_markdown(report, top)
    if append if append is not None else is_step_summary(target):
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)
    else:
        target.write_text(text, encoding="utf-8")
    return target


__all__ = ["summary_markdown", "write_summary_md", "md_cell", "worst_items", "is_step_summary", "DEFAULT_TOP"]

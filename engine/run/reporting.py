"""What a run reports as it goes: the `EvalReporter` hooks and the `RunState` they see.

The runner calls a reporter at the run's start, for each unreadable dataset record, for notes
(a repaired out file), for items skipped on resume, after each judge answer (`RunState.answers`
counts them, `RunState.cached_answers` those the judge-call cache gave), after each item, and at
the end. The
library's own reporter, `StderrReporter`, writes plain lines to stderr; the terminal's progress
bar and tables are `engine.cli.output.ConsoleReporter`, which the CLI passes in.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.result import ScoreResult, Usage
from .items import DatasetProblem, Item
from .summary import EvalSummary, ScorerStats

PROGRESS_EVERY_S = 5.0


@dataclass
class RunState:
    """A run in progress, as reporters see it. `total`: items the dataset holds when cheap to
    know (else None); `items`: items read so far; `resumed`: items whose every result came from
    an earlier attempt; `done_items`: items scored in this attempt; `problems`: the first
    unreadable records, rendered (`problem_count` counts them all). `labels`: the scorers'
    labels (their ids unless given), in order; `stats`: by label. `usage` is by label,
    `usage_by_model` by judge model. `stopped`: why the run stopped before the end of the data,
    None while it has not (its budget, `engine.run.budget`, or a judge that refused the
    credentials); `left`: items it then left unscored."""

    run_id: str
    labels: list[str]
    stats: dict[str, ScorerStats]
    total: int | None
    out: str | None
    store: str | None
    resuming: bool = False
    items: int = 0
    resumed: int = 0
    done_items: int = 0
    judge_calls: int = 0
    answers: int = 0  # judge answers so far, items in flight included (cache hits too; failed calls not)
    failed_calls: int = 0  # judge calls that ended with no answer (after their retries)
    cached_answers: int = 0  # of those, the answers the judge-call cache gave
    usage: dict[str, Usage] = field(default_factory=dict)  # per label
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    usage_by_label_model: dict[str, dict[str, Usage]] = field(default_factory=dict)  # a jury's models apart
    jury: dict[str, Any] = field(default_factory=dict)  # per label: its `engine.run.jury_stats.JuryStats`
    stopped: str | None = None
    left: int = 0
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    started: float = field(default_factory=time.perf_counter)


class EvalReporter:
    """Presentation hooks for a run; every method is a no-op here. Subclass it and override
    what you need (`engine.cli.output.ConsoleReporter` is the terminal's)."""

    def start(self, run: RunState) -> None: ...
    def problem(self, problem: DatasetProblem) -> None: ...
    def note(self, message: str) -> None: ...
    def skipped(self, run: RunState, count: int) -> None: ...
    def item_done(self, run: RunState, item: Item, results: Mapping[str, ScoreResult]) -> None: ...
    def judge_answered(self, run: RunState) -> None: ...
    def finish(self, run: RunState, summary: EvalSummary | None) -> None: ...


class StderrReporter(EvalReporter):
    """Plain lines on stderr: unreadable records and notes; with `progress`, also a line when
    the run starts, one at most every `PROGRESS_EVERY_S` seconds (items done, judge answers,
    running mean per scorer) and one at the end."""

    def __init__(self, *, progress: bool = False):
        self.progress = progress
        self._shown = 0.0

    def _say(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def problem(self, problem: DatasetProblem) -> None:
        self._say(problem.render())

    def note(self, message: str) -> None:
        self._say(message)

    def start(self, run: RunState) -> None:
        if self.progress:
            self._shown = time.perf_counter()
            verb = "resuming run" if run.resuming else "run"
            total = f" · {run.total} item(s)" if run.total is not None else ""
            self._say(f"{verb} {run.run_id} · scorers {', '.join(run.labels)}{total}")

    def skipped(self, run: RunState, count: int) -> None:
        self._tick(run)

    def item_done(self, run: RunState, item: Item, results: Mapping[str, ScoreResult]) -> None:
        self._tick(run)

    def judge_answered(self, run: RunState) -> None:
        self._tick(run)

    def finish(self, run: RunState, summary: EvalSummary | None) -> None:
        if self.progress:
            self._say(self._line(run) + ("" if summary is not None else " · interrupted"))

    def _tick(self, run: RunState) -> None:
        if self.progress and time.perf_counter() - self._shown >= PROGRESS_EVERY_S:
            self._shown = time.perf_counter()
            self._say(self._line(run))

    @staticmethod
    def _line(run: RunState) -> str:
        return progress_line(run)


def progress_line(run: RunState) -> str:
    """``12/20 item(s) done · 24 judge answer(s) (4 from the cache) · faithfulness 0.75`` (and
    ``· 2 failed judge call(s)`` after the answers when calls failed): the
    run's progress on one plain line (the total left out when unknown, ``—`` for no mean yet)."""
    done = run.done_items + run.resumed
    of = f"/{run.total}" if run.total is not None else ""
    means = []
    for label in run.labels:
        mean = run.stats[label].running_mean
        means.append(f"{label} {'—' if mean is None else f'{mean:.4g}'}")
    answers = f" · {answers_text(run)}" if run.answers or run.failed_calls else ""
    return f"{done}{of} item(s) done{answers} · " + " · ".join(means)


def answers_text(run: RunState, *, plural: bool = False) -> str:
    """``24 judge answer(s) (4 from the cache) · 2 failed judge call(s)``: the judge answers so
    far, and apart from them the calls that failed (a failure is no answer). plural: the word
    made singular or plural by the count (``1 judge answer``, ``24 judge answers``)."""
    def words(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}" if plural else f"{n} {word}(s)"

    text = words(run.answers, "judge answer") + cached_text(run)
    return text + (f" · {words(run.failed_calls, 'failed judge call')}" if run.failed_calls else "")


def cached_text(run: RunState) -> str:
    """`` (15 from the cache)`` after the count of judge answers, when the cache gave any."""
    return f" ({run.cached_answers} from the cache)" if run.cached_answers else ""


__all__ = ["EvalReporter", "RunState", "StderrReporter", "PROGRESS_EVERY_S", "cached_text", "progress_line"]

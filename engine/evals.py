"""Batch evaluation: many items × several scorers, concurrent, failure-isolated, resumable.

`run_evals(data, scorers, ...)` (or ``await arun_evals(...)``) is the seed's ``runEvals``
(data, scorers, target, onItemComplete → a mean score per scorer), extended:

- **Concurrency**: items are streamed from `data` (never all in memory) into ``concurrency``
  workers; an item's scorers run concurrently; at most ``concurrency`` scorer runs (hence judge
  requests, each run asks its stages one after another) are in flight at once. A rule-only
  scorer runs synchronously, without a slot. ``rate_limit`` caps judge requests per second
  (a token bucket shared by every scorer; re-asks and transport retries inside one stage are
  not counted separately).
- **Failure isolation** (case C18): a failed item is a result with ``error`` (stage, kind,
  message); it never stops the others and never counts as a low score. A target that raises
  fails every scorer of its item with kind ``target``.
- **Summary** per scorer: counts of scored / not scorable / failed items; mean, min, median and
  max over the *scored* items only (None, never NaN, when there are none). Means are computed
  on the scores' decimal forms (0.7 and 0.9 average to exactly 0.8).
- **Thresholds**: ``{"faithfulness": 0.8}`` (mean ≥ 0.8) or ``{"faithfulness": (0.2, 0.9)}``
  (0.2 ≤ mean ≤ 0.9; either bound may be None). A threshold on a scorer with no scored item
  is missed.
- **Verdict** (and the CLI's exit code): ``errors`` (2) when any result failed or any dataset
  record could not be read (or the dataset had no item); else ``below_threshold`` (1) when any
  threshold was missed; else ``passed`` (0).
- **Nothing lost**: each result is written as it completes — appended to the ``out`` JSONL file
  (written and flushed per line, fsync'd at least every `engine.store.FSYNC_INTERVAL_S` and at
  the end) and
  committed to the SQLite store (`engine.store`). A killed process loses only results that had
  not completed.
- **Resume**: a run is identified by its ``out`` file (an empty or missing one, as a kill
  before the first result leaves it, by the run the store recorded for that file) or, without
  one, by its run id in the store. ``resume=True`` skips every (item, scorer) already scored or
  not scorable, retries the failed ones, repairs a torn last line left by a kill, brings the
  store in line with the out file, and at the end rewrites the out file compactly if retried
  results left older lines, so it holds exactly one line per (item, scorer). The summary of a resumed run covers the whole
  run (earlier results included).

Each out-file line is ``{"id": <item id>, "scorer": <scorer id>, …}`` followed by the result's
fields as `ScoreResult.to_json_dict()` gives them (``runId`` is the eval's run id).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
import secrets
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from .datasets import DatasetProblem, Item, data_len, item_key, iter_items, parse_fields
from .judge_rate_limit import RateLimiter
from .result import ItemError, ScoreResult, Usage
from .store import OutWriter, PriorResults, Store, compact_out_file, iter_out_lines, scan_out_file
from .sync import run_sync

MAX_PROBLEMS_KEPT = 100
VERDICT_EXIT = {"passed": 0, "below_threshold": 1, "errors": 2}


# --- thresholds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    """Bounds on a scorer's mean: ``min ≤ mean ≤ max`` (a None bound is open)."""

    min: float | None = None
    max: float | None = None

    def met(self, mean: float | None) -> bool:
        if mean is None:
            return False
        return (self.min is None or mean >= self.min) and (self.max is None or mean <= self.max)

    def __str__(self) -> str:
        if self.max is None:
            return f"≥ {self.min:g}" if self.min is not None else "any"
        if self.min is None:
            return f"≤ {self.max:g}"
        return f"{self.min:g}..{self.max:g}"

    def to_json_dict(self) -> dict[str, float | None]:
        return {"min": self.min, "max": self.max}

    @classmethod
    def parse(cls, value: Any) -> "Threshold":
        """A number (the minimum mean), a (min, max) pair, ``"0.8"``, ``"0.2:0.9"``, ``":0.9"``
        or ``"0.2:"``. Raises `ValueError`."""
        if isinstance(value, Threshold):
            return value
        if isinstance(value, bool):
            raise ValueError(f"threshold {value!r} is not a number")
        if isinstance(value, (int, float)):
            return cls(float(value), None)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            low, high = (None if v is None else float(v) for v in value)
            if low is not None and high is not None and low > high:
                raise ValueError(f"threshold {value!r}: min is above max")
            return cls(low, high)
        if isinstance(value, str):
            text = value.strip()
            low_text, sep, high_text = text.partition(":")
            try:
                low = float(low_text) if low_text.strip() else None
                high = float(high_text) if sep and high_text.strip() else None
            except ValueError:
                raise ValueError(f"threshold {value!r}: expected a number, min:max, :max or min:") from None
            if low is None and high is None:
                raise ValueError(f"threshold {value!r}: give a minimum, a maximum or both")
            return cls.parse((low, high))
        raise ValueError(f"threshold {value!r}: expected a number or a (min, max) pair")


def parse_thresholds(thresholds: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Threshold]:
    """``{"id": 0.8 | (min, max) | "min:max"}`` or ``["id=0.8", "id=0.2:0.9"]`` → thresholds."""
    if not thresholds:
        return {}
    if isinstance(thresholds, Mapping):
        return {str(k): Threshold.parse(v) for k, v in thresholds.items()}
    out: dict[str, Threshold] = {}
    for pair in thresholds:
        name, sep, value = str(pair).partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--threshold {pair!r}: expected ID=min or ID=min:max (e.g. faithfulness=0.8)")
        out[name.strip()] = Threshold.parse(value)
    return out


# --- statistics and the summary -----------------------------------------------------------------


def _exact_mean(values: Iterable[float], n: int) -> float:
    return float(sum((Decimal(repr(v)) for v in values), Decimal(0)) / n)


class ScorerStats:
    """Counts and the scores of one scorer (scores in a compact float array, for the median)."""

    def __init__(self, scorer: str):
        self.scorer = scorer
        self.scored = 0
        self.not_scorable = 0
        self.failed = 0
        self.scores = array("d")
        self._sum = 0.0

    def add(self, status: str, score: float | None) -> None:
        if status == "scored" and score is not None:
            self.scored += 1
            self.scores.append(score)
            self._sum += score
        elif status == "not_scorable":
            self.not_scorable += 1
        else:
            self.failed += 1

    @property
    def running_mean(self) -> float | None:
        """A cheap mean for progress displays (the summary's mean is exact)."""
        return self._sum / self.scored if self.scored else None

    def summary(self, threshold: Threshold | None) -> "ScorerSummary":
        values = sorted(self.scores)
        n = len(values)
        mean = median = low = high = None
        if n:
            mean = _exact_mean(values, n)
            low, high = values[0], values[-1]
            mid = n // 2
            median = values[mid] if n % 2 else _exact_mean(values[mid - 1: mid + 1], 2)
        return ScorerSummary(self.scorer, self.scored, self.not_scorable, self.failed, mean, low, median, high,
                             threshold, None if threshold is None else threshold.met(mean))


@dataclass
class ScorerSummary:
    """One scorer over a run. Statistics are over scored items only; None when there are none."""

    scorer: str
    scored: int = 0
    not_scorable: int = 0
    failed: int = 0
    mean: float | None = None
    min: float | None = None
    median: float | None = None
    max: float | None = None
    threshold: Threshold | None = None
    threshold_met: bool | None = None

    @property
    def total(self) -> int:
        return self.scored + self.not_scorable + self.failed

    def to_json_dict(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "scored": self.scored, "notScorable": self.not_scorable,
                "failed": self.failed, "mean": self.mean, "min": self.min, "median": self.median,
                "max": self.max, "threshold": self.threshold.to_json_dict() if self.threshold else None,
                "thresholdMet": self.threshold_met}


@dataclass
class EvalSummary:
    """What a batch run returns (and ``scorespec eval --json`` prints).

    scorers: per scorer id, a `ScorerSummary`. scores: per scorer id, the mean (the seed's
    ``runEvals`` result). verdict: ``passed`` | ``below_threshold`` | ``errors`` (see the
    module docstring); exit_code: 0 | 1 | 2. items: items in the dataset that were read;
    resumed: items whose every result came from an earlier attempt of the run.
    """

    run_id: str
    verdict: str
    scorers: dict[str, ScorerSummary]
    items: int = 0
    resumed: int = 0
    dataset_problems: int = 0
    problems: list[str] = field(default_factory=list)
    out: str | None = None
    store: str | None = None
    seconds: float = 0.0
    judge_calls: int = 0
    usage: dict[str, Usage] = field(default_factory=dict)  # per scorer: judge usage of this attempt

    @property
    def scores(self) -> dict[str, float | None]:
        return {sid: s.mean for sid, s in self.scorers.items()}

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.scorers.values())

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id, "verdict": self.verdict, "exitCode": self.exit_code,
            "scores": self.scores,
            "scorers": {sid: s.to_json_dict() for sid, s in self.scorers.items()},
            "items": self.items, "resumed": self.resumed, "datasetProblems": self.dataset_problems,
            "problems": self.problems, "out": self.out, "store": self.store,
            "seconds": round(self.seconds, 3), "judgeCalls": self.judge_calls,
            "usage": {sid: u.model_dump(mode="json", by_alias=True) for sid, u in self.usage.items()},
        }


def verdict_of(scorers: Mapping[str, ScorerSummary], dataset_problems: int, items: int) -> str:
    if dataset_problems or items == 0 or any(s.failed for s in scorers.values()):
        return "errors"
    if any(s.threshold_met is False for s in scorers.values()):
        return "below_threshold"
    return "passed"


# --- the run ------------------------------------------------------------------------------------


class EvalReporter:
    """Presentation hooks for a run; every method is a no-op here. `engine.cli_report` has the
    terminal one (progress bar, per-item lines, failures, the summary table)."""

    def start(self, run: "RunState") -> None: ...
    def problem(self, problem: DatasetProblem) -> None: ...
    def note(self, message: str) -> None: ...
    def skipped(self, run: "RunState", count: int) -> None: ...
    def item_done(self, run: "RunState", item: Item, results: Mapping[str, ScoreResult]) -> None: ...
    def finish(self, run: "RunState", summary: EvalSummary | None) -> None: ...


class _StderrReporter(EvalReporter):
    def problem(self, problem: DatasetProblem) -> None:
        print(problem.render(), file=sys.stderr, flush=True)

    def note(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)


@dataclass
class RunState:
    """A run in progress, as reporters see it."""

    run_id: str
    scorer_ids: list[str]
    stats: dict[str, ScorerStats]
    total: int | None
    out: str | None
    store: str | None
    resuming: bool = False
    items: int = 0
    resumed: int = 0
    done_items: int = 0
    judge_calls: int = 0
    usage: dict[str, Usage] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    started: float = field(default_factory=time.perf_counter)


def new_run_id() -> str:
    """A sortable, readable run id: ``20250614-103015-3fa2c1``."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def _resolve_scorers(scorers: Any) -> list[Any]:
    from .scorer import Scorer, load_scorer

    if isinstance(scorers, (str, Scorer)):
        scorers = [scorers]
    resolved = [load_scorer(s) if isinstance(s, str) else s for s in scorers]
    if not resolved:
        raise ValueError("give at least one scorer")
    seen: set[str] = set()
    for scorer in resolved:
        if scorer.id in seen:
            raise ValueError(f"scorer {scorer.id!r} is given twice; each scorer id may appear once per run")
        seen.add(scorer.id)
    return resolved


def _failed_result(scorer: Any, kind: str, message: str, run_id: str) -> ScoreResult:
    plan = getattr(scorer, "plan", None)
    return ScoreResult(run_id=run_id, scorer=scorer.id,
                       spec_version=plan.version if plan is not None else 0,
                       spec_hash=plan.hash if plan is not None else "",
                       model=getattr(scorer, "model", None),
                       error=ItemError(kind=kind, message=message))


DEFAULT_CONCURRENCY = 8


def default_concurrency(scorers: list[Any]) -> int:
    """8, or 1 when every scorer that uses a judge runs on an embedded model (one call at a
    time: a higher concurrency only interleaves items, so none finishes until the end)."""
    from .judge_model import is_local

    models = [str(getattr(s, "model", "") or "") for s in scorers if _uses_judge(s)]
    local = models and all(is_local(m) for m in models)
    return 1 if local else DEFAULT_CONCURRENCY


def _uses_judge(scorer: Any) -> bool:
    plan = getattr(scorer, "plan", None)
    return bool(getattr(plan, "uses_judge", True))


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _apply_target_output(item: Item, produced: Any) -> Item:
    """The item with the target's output. A mapping with an ``output`` key also sets
    ``context`` / ``ground_truth`` when it has them (e.g. an agent's retrieved passages)."""
    from .datasets import coerce_context

    updated = dict(item)
    if isinstance(produced, Mapping) and "output" in produced:
        updated["output"] = produced["output"]
        if "context" in produced:
            updated["context"] = coerce_context(produced["context"])
        if "ground_truth" in produced:
            updated["ground_truth"] = produced["ground_truth"]
    else:
        updated["output"] = produced
    return updated


async def arun_evals(
    data: Any,
    scorers: Any,
    *,
    target: Callable[[Any], Any] | None = None,
    concurrency: int | None = None,
    on_item_complete: Callable[[Item, dict[str, ScoreResult]], Any] | None = None,
    thresholds: Mapping[str, Any] | Iterable[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    run_id: str | None = None,
    rate_limit: float | None = None,
    store: Store | str | os.PathLike[str] | bool | None = None,
    progress: bool | EvalReporter = False,
    fields: Mapping[str, str] | Iterable[str] | None = None,
    config: Mapping[str, Any] | None = None,
    cache: Any = None,
    refresh: bool = False,
) -> EvalSummary:
    """Score every item of `data` with every scorer; see the module docstring.

    data: a JSONL / CSV / JSON-array path, a list (or iterable) of dicts, or a pandas DataFrame
    (`engine.datasets`). scorers: `Scorer` objects or spec ids. target: an optional sync or
    async callable taking an item's ``input`` and returning its ``output``. concurrency: at
    most this many scorer runs at once (≥ 1); by default 8, or 1 when every judge is an
    embedded model (it answers one call at a time, so items then finish one after another). on_item_complete(item, {scorer id: ScoreResult}):
    called (awaited if async) after each item's scorers finished, with the results made in this
    attempt; an exception from it stops the run (every completed result is already saved).
    thresholds: ``{id: min | (min, max)}``. out: the JSONL file results are appended to.
    resume: continue the run of `out` (or of `run_id` in the store). run_id: the id of a new
    run (default: a fresh one). rate_limit: judge requests per second. store: a `Store`, a path,
    None for the default store (``$SCORESPEC_STORE`` or ``.scorespec/store.sqlite``), or False
    for none. progress: True for a terminal progress bar on stderr, or an `EvalReporter`.
    fields: a field mapping ``{"output": "answer"}`` or ``["output=answer"]``. config: extra
    data recorded with the run in the store (the CLI records its arguments to resume from).
    cache: the judge-call cache for every scorer's judge (`engine.judge_cache_layer.open_cache`:
    True for the default file, a path, a `JudgeCache`; False takes the scorers' cache off);
    None leaves each scorer's judge as it was built (`load_scorer(..., cache=...)`). refresh:
    with `cache`, ask every call again and overwrite its entry.

    Returns an `EvalSummary`. Raises `ValueError` for bad arguments (unknown threshold ids,
    concurrency < 1, resuming a run that does not exist), `FileExistsError` when `out` already
    holds results and `resume` is False, `engine.datasets.DatasetError` for an unreadable file.
    """
    scorer_list = _resolve_scorers(scorers)
    if cache is not None:
        from .judge_cache_layer import scorers_with_cache

        scorer_list = scorers_with_cache(scorer_list, cache, refresh=refresh)
    if concurrency is None:
        concurrency = default_concurrency(scorer_list)
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, not {concurrency}")
    scorer_ids = [s.id for s in scorer_list]
    limits = parse_thresholds(thresholds)
    unknown = [t for t in limits if t not in scorer_ids]
    if unknown:
        raise ValueError(f"threshold for {', '.join(map(repr, unknown))}, which is not among the scorers "
                         f"({', '.join(scorer_ids)})")
    field_map = parse_fields(fields) if fields is not None and not isinstance(fields, Mapping) else dict(fields or {})
    reporter: EvalReporter
    if isinstance(progress, EvalReporter):
        reporter = progress
    elif progress:
        from .cli_report import ConsoleReporter

        reporter = ConsoleReporter(per_item=False)
    else:
        reporter = _StderrReporter()

    own_store = False
    db: Store | None
    if store is None or store is True:
        db, own_store = Store(), True
    elif store is False:
        db = None
    elif isinstance(store, Store):
        db = store
    else:
        db, own_store = Store(store), True

    out_path = Path(out).resolve() if out is not None else None
    try:
        prior = PriorResults()
        resuming = False
        if out_path is not None and out_path.exists() and out_path.stat().st_size > 0:
            if not resume:
                raise FileExistsError(f"{out}: already holds results; resume the run (--resume) or choose "
                                      "another file")
            prior = scan_out_file(out_path)
            resuming = True
            if prior.repaired:
                reporter.note(prior.repaired)
            if run_id is not None and prior.run_id is not None and run_id != prior.run_id:
                raise ValueError(f"{out} holds run {prior.run_id}, not {run_id}")
            run_id = prior.run_id or run_id or (db.run_for_out(str(out_path)) if db else None)
            if db is not None and run_id is not None:
                _sync_store(db, run_id, out_path, prior)
        elif resume and out_path is not None:
            # killed before its first result line: keep the run id recorded for this out file
            # (else the store would keep an empty run marked running forever); every item is
            # scored again, since the out file must hold every result
            found = db.run_for_out(str(out_path)) if db is not None and run_id is None else None
            run_id, resuming = (found, True) if found is not None else (run_id, False)
        elif resume and out_path is None:
            if run_id is None:
                raise ValueError("resume needs the run's out file or its run id")
            if db is None or db.get_run(run_id) is None:
                raise ValueError(f"no run {run_id!r} in the store {db or '(none)'} to resume")
            run_id = db.get_run(run_id)["run_id"]  # type: ignore[index]
            for item_id, scorer_id, status, score in db.statuses(run_id):
                prior.records[(item_id, scorer_id)] = (status, score)
            resuming = True
        run_id = run_id or new_run_id()

        stats = {sid: ScorerStats(sid) for sid in scorer_ids}
        state = RunState(run_id, scorer_ids, stats, data_len(data), str(out_path) if out_path else None,
                         str(db) if db else None, resuming=resuming)

        def on_problem(problem: DatasetProblem) -> None:
            state.problem_count += 1
            if len(state.problems) < MAX_PROBLEMS_KEPT:
                state.problems.append(problem.render())
            reporter.problem(problem)

        items = iter_items(data, field_map, on_problem)
        first = next(items, None)  # a file unusable as a whole fails here, before the run is recorded
        if first is not None:
            items = itertools.chain([first], items)
        if db is not None:
            db.begin_run(run_id, data=str(Path(data).resolve()) if isinstance(data, (str, os.PathLike)) else None,
                         out=str(out_path) if out_path else None, scorers=scorer_ids,
                         config={**(config or {}), "concurrency": concurrency,
                                 "thresholds": {k: v.to_json_dict() for k, v in limits.items()}})
        writer = OutWriter(out_path) if out_path is not None else None
        runner = _Runner(scorer_list, state, prior, writer, db, reporter, target, on_item_complete, concurrency,
                         RateLimiter(rate_limit) if rate_limit else None)
        reporter.start(state)
        status = "interrupted"
        summary: EvalSummary | None = None
        try:
            await runner.run(items)
            status = "finished"
        finally:
            if writer is not None:
                writer.close()
            runner.close()
            for scorer in scorer_list:  # HTTP connections belong to this event loop
                close = getattr(scorer, "aclose", None)
                if close is not None:
                    await close()
            if status == "finished":
                if out_path is not None and (prior.untidy or runner.rewrote):
                    compact_out_file(out_path)
                summaries = {sid: stats[sid].summary(limits.get(sid)) for sid in scorer_ids}
                summary = EvalSummary(
                    run_id=run_id, verdict=verdict_of(summaries, state.problem_count, state.items),
                    scorers=summaries, items=state.items, resumed=state.resumed,
                    dataset_problems=state.problem_count, problems=list(state.problems),
                    out=str(out_path) if out_path else None, store=str(db) if db else None,
                    seconds=time.perf_counter() - state.started, judge_calls=state.judge_calls,
                    usage=state.usage)
                if state.items == 0 and not state.problem_count:
                    summary.problems.append("the dataset has no items")
            if db is not None:
                db.finish_run(run_id, status=status, summary=summary.to_json_dict() if summary else None,
                              verdict=summary.verdict if summary else None)
            reporter.finish(state, summary)
        assert summary is not None
        return summary
    finally:
        if own_store and db is not None:
            db.close()


def _sync_store(db: Store, run_id: str, out_path: Path, prior: PriorResults) -> None:
    """Make the store hold the out file's last result per (item, scorer): a kill between the
    out-file write and the store commit leaves the store one result behind."""
    stored = {(i, s): (st, sc) for i, s, st, sc in db.statuses(run_id)}
    missing = {key for key, value in prior.records.items() if stored.get(key) != value}
    if not missing:
        return
    rows: dict[tuple[str, str], tuple[str, str, dict[str, Any], None]] = {}
    for key, _raw, record in iter_out_lines(out_path):
        if key in missing:
            result = {k: v for k, v in record.items() if k not in ("id", "scorer")}
            result["scorer"] = record["scorer"]
            rows[key] = (key[0], key[1], result, None)
    db.record_results(run_id, list(rows.values()))


class _Runner:
    """The concurrent part of a run: a producer streaming items into a bounded queue, workers
    scoring them, every result written as it completes."""

    def __init__(self, scorers: list[Any], state: RunState, prior: PriorResults, writer: OutWriter | None,
                 db: Store | None, reporter: EvalReporter, target: Any, on_item_complete: Any,
                 concurrency: int, limiter: RateLimiter | None):
        self.scorers = scorers
        self.state = state
        self.prior = prior
        self.writer = writer
        self.db = db
        self.reporter = reporter
        self.target = target
        self.on_item_complete = on_item_complete
        self.concurrency = concurrency
        self.limiter = limiter
        self.rewrote = False
        self._pool: ThreadPoolExecutor | None = None
        self._position = 0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _rate_limited(self, scorer: Any) -> Any:
        """`scorer` asking its judge through the run's shared limiter (the scorer itself is left
        as it is); unchanged without a limit, for a rule-only scorer, or when the judge cannot be
        built (that failure then shows on each item)."""
        if self.limiter is None or not _uses_judge(scorer) or not hasattr(scorer, "with_judge"):
            return scorer
        try:
            judge = scorer.judge
        except Exception:
            return scorer
        from .judge import with_rate_limit

        return scorer.with_judge(with_rate_limit(judge, self.limiter))

    async def run(self, items: Iterator[Item]) -> None:
        self.scorers = [self._rate_limited(scorer) for scorer in self.scorers]
        self._sem = asyncio.Semaphore(self.concurrency)
        queue: asyncio.Queue = asyncio.Queue(maxsize=self.concurrency)
        workers = [asyncio.ensure_future(self._worker(queue)) for _ in range(self.concurrency)]
        producer = asyncio.ensure_future(self._produce(items, queue, len(workers)))
        tasks = [producer, *workers]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _produce(self, items: Iterator[Item], queue: asyncio.Queue, n_workers: int) -> None:
        skipped = 0
        for item in items:
            self.state.items += 1
            key = item_key(item["id"])
            todo = [s for s in self.scorers if not self.prior.done((key, s.id))]
            if len(todo) < len(self.scorers):
                for scorer in self.scorers:
                    found = self.prior.records.get((key, scorer.id))
                    if found is not None and found[0] != "failed":
                        self.state.stats[scorer.id].add(*found)
            if not todo:
                self.state.resumed += 1
                skipped += 1
                if skipped >= 256:
                    self.reporter.skipped(self.state, skipped)
                    skipped = 0
                    await asyncio.sleep(0)
                continue
            if skipped:
                self.reporter.skipped(self.state, skipped)
                skipped = 0
            await queue.put((item, todo))
        if skipped:
            self.reporter.skipped(self.state, skipped)
        for _ in range(n_workers):
            await queue.put(None)

    async def _worker(self, queue: asyncio.Queue) -> None:
        while True:
            entry = await queue.get()
            if entry is None:
                return
            await self._score_item(*entry)

    async def _score_item(self, item: Item, todo: list[Any]) -> None:
        run_id = self.state.run_id
        key = item_key(item["id"])
        self._position += 1
        if self.target is not None:
            try:
                async with self._sem:
                    produced = await self._call_target(item.get("input"))
                item = _apply_target_output(item, produced)
            except Exception as exc:
                if self.db is not None:
                    self.db.record_item(run_id, key, self._position, item)
                message = f"the target raised {type(exc).__name__}: {exc}"
                results = {s.id: _failed_result(s, "target", message, run_id) for s in todo}
                for scorer in todo:
                    self._save(item, key, scorer.id, results[scorer.id])
                await self._item_done(item, results)
                return
        if self.db is not None:
            self.db.record_item(run_id, key, self._position, item)
        if len(todo) == 1:
            results = {todo[0].id: await self._score(todo[0], item, key)}
        else:
            done = await asyncio.gather(*(self._score(s, item, key) for s in todo))
            results = {s.id: r for s, r in zip(todo, done)}
        await self._item_done(item, results)

    async def _call_target(self, value: Any) -> Any:
        if _is_async_callable(self.target):
            return await self.target(value)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="scorespec-target")
        produced = await asyncio.get_running_loop().run_in_executor(self._pool, self.target, value)
        if inspect.isawaitable(produced):
            produced = await produced
        return produced

    async def _score(self, scorer: Any, item: Item, key: str) -> ScoreResult:
        run_id = self.state.run_id
        kwargs = dict(output=item.get("output"), input=item.get("input"), ground_truth=item.get("ground_truth"),
                      context=item.get("context"), run_id=run_id)
        try:
            if not _uses_judge(scorer):
                result = scorer.run(**kwargs)
            else:
                async with self._sem:
                    result = await scorer.arun(**kwargs)
        except Exception as exc:  # the engine promises not to raise; keep the item isolated anyway
            result = _failed_result(scorer, "internal", f"{type(exc).__name__}: {exc}", run_id)
        self._save(item, key, scorer.id, result)
        return result

    def _save(self, item: Item, key: str, scorer_id: str, result: ScoreResult) -> None:
        data = result.to_json_dict()
        status = result.status
        line = {"id": item["id"], "scorer": scorer_id, **{k: v for k, v in data.items() if k != "scorer"}}
        if self.writer is not None:
            self.writer.write(line)
        if self.db is not None:
            self.db.record_result(self.state.run_id, key, scorer_id, data, status)
        if (key, scorer_id) in self.prior.records:
            self.rewrote = True
        self.state.stats[scorer_id].add(status, result.score)
        self.state.judge_calls += result.usage.calls
        self.state.usage.setdefault(scorer_id, Usage()).add(result.usage)

    async def _item_done(self, item: Item, results: dict[str, ScoreResult]) -> None:
        self.state.done_items += 1
        self.reporter.item_done(self.state, item, results)
        if self.on_item_complete is not None:
            outcome = self.on_item_complete(item, results)
            if inspect.isawaitable(outcome):
                await outcome


def run_evals(data: Any, scorers: Any, **kwargs: Any) -> EvalSummary:
    """Synchronous `arun_evals` (same arguments). Inside a running event loop (a notebook) the
    run happens on a private loop in a worker thread."""
    return run_sync(arun_evals(data, scorers, **kwargs), thread_name="scorespec-run-evals")


__all__ = ["run_evals", "arun_evals", "EvalSummary", "ScorerSummary", "Threshold", "parse_thresholds",
           "RateLimiter", "EvalReporter", "RunState", "new_run_id", "VERDICT_EXIT"]

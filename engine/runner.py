"""The concurrent part of a run: items streamed into workers, scored, each result saved at once.

- **Concurrency**: a producer streams items from the dataset (never all in memory) into a
  queue of ``concurrency`` places, read by ``concurrency`` workers; an item's scorers run
  concurrently; at most ``concurrency`` scorer runs are in flight at once. A run asks its
  stages one after another, and a `for_each` stage's elements as many at once as its judge
  serves (`engine.fan_out`: the embedded judge's slots, 1 for hosted judges). A rule-only
  scorer runs synchronously, without a slot. With a `RateLimiter`, every scorer's judge takes
  a token per request (one bucket for the run; re-asks and transport retries inside one stage
  are not counted apart).
- **Progress**: every scorer's judge reports each answer (`engine.judge_progress`), counted in
  `RunState.answers` and passed to the reporter, so progress moves per judge call.
- **Labels**: results are keyed by the scorer's label in the run (`label_of`: its id unless
  given), so two versions of one scorer can run side by side.
- **Failure isolation**: a failed item is a result with ``error`` (stage, kind, message); it
  never stops the others and never counts as a low score. A target that raises fails every
  scorer of its item with kind ``target``; a scorer that raises (it should not) fails its
  result with kind ``internal``.
- **Nothing lost**: each result is appended to the out file, then committed to the store, as
  it completes; items already done in an earlier attempt (`engine.resume.PriorResults`) are
  counted, not scored again.
- **Cost and budget**: with a price table (`engine.prices`) each result gets its cost
  (``costUsd``); with a `engine.budget.Budget`, a worker starts an item only when the budget
  admits it (so at most ``concurrency`` items are in flight). Once it does not, the items in
  flight finish and the rest of the data is only read (items done in an earlier attempt are
  still counted; the others are left, `RunState.left`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .datasets import Item, coerce_context, item_key
from .judge_rate_limit import RateLimiter
from .outfile import OutWriter, out_line
from .prices import PriceTable
from .reporting import EvalReporter, RunState
from .result import ItemError, ScoreResult, Usage
from .run_fields import RUN_FIELDS
from .resume import PriorResults
from .store import Store

SKIPPED_BATCH = 256  # items skipped on resume are reported (and the loop yields) in batches


def label_of(scorer: Any) -> str:
    """The scorer's label in a run: its ``label`` (`engine.scorer.Scorer.label`), else its id."""
    return getattr(scorer, "label", None) or scorer.id


def uses_judge(scorer: Any) -> bool:
    """Whether `scorer` asks a judge (a scorer without a plan is assumed to)."""
    plan = getattr(scorer, "plan", None)
    return bool(getattr(plan, "uses_judge", True))


def item_fields(scorer: Any, item: Item) -> dict[str, Any]:
    """What `scorer` is given of an item: its run fields (`engine.run_fields.RUN_FIELDS`), and
    the fields the scorer's spec declares that the item has."""
    fields = {name: item.get(name) for name in RUN_FIELDS}
    declared = getattr(getattr(scorer, "plan", None), "declared", None) or {}
    fields.update((name, item[name]) for name in declared if name in item)
    return fields


def declared_names(scorers: Iterable[Any]) -> list[str]:
    """The names of the fields the scorers' specs declare, each once, in order."""
    names: dict[str, None] = {}
    for scorer in scorers:
        names.update(dict.fromkeys(getattr(getattr(scorer, "plan", None), "declared", None) or {}))
    return list(names)


def failed_result(scorer: Any, kind: str, message: str, run_id: str) -> ScoreResult:
    """A failed result of `scorer` made by the runner itself (kind ``target`` or ``internal``)."""
    plan = getattr(scorer, "plan", None)
    return ScoreResult(run_id=run_id, scorer=scorer.id, label=label_of(scorer),
                       spec_version=plan.version if plan is not None else 0,
                       spec_hash=plan.hash if plan is not None else "",
                       model=getattr(scorer, "model", None),
                       error=ItemError(kind=kind, message=message))


def apply_target_output(item: Item, produced: Any) -> Item:
    """The item with the target's output. A mapping with an ``output`` key also sets
    ``context``, ``ground_truth``, ``system`` and ``tool_calls`` when it has them (e.g. an
    agent's retrieved passages and the tools it called)."""
    updated = dict(item)
    if isinstance(produced, Mapping) and "output" in produced:
        updated["output"] = produced["output"]
        if "context" in produced:
            updated["context"] = coerce_context(produced["context"])
        for name in ("ground_truth", "system", "tool_calls"):
            if name in produced:
                updated[name] = produced[name]
    else:
        updated["output"] = produced
    return updated


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


class Runner:
    """One attempt of a run: `await run(items)` scores every item not done yet, writing each
    result to the out file (`out`, appended) and the store as it completes, and reporting to
    `reporter`. `rewrote` tells afterwards whether a result of `prior` was replaced (the out
    file then holds an older line too). The out file, the target's threads and the scorers'
    judge connections are closed when `run` returns or raises. `prices`: the cost of each result
    is set from it; `budget`: admits each item (`engine.budget.Budget`)."""

    def __init__(self, scorers: list[Any], state: RunState, prior: PriorResults, out: Path | None,
                 db: Store | None, reporter: EvalReporter, target: Any, on_item_complete: Any,
                 concurrency: int, limiter: RateLimiter | None, *, prices: PriceTable | None = None,
                 budget: Any = None):
        self.given = scorers
        self.scorers = scorers
        self.state = state
        self.prior = prior
        self.out = out
        self.db = db
        self.reporter = reporter
        self.target = target
        self.on_item_complete = on_item_complete
        self.concurrency = concurrency
        self.limiter = limiter
        self.prices = prices
        self.budget = budget
        self.rewrote = False
        self._writer: OutWriter | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._position = 0

    async def run(self, items: Iterator[Item]) -> None:
        self._writer = OutWriter(self.out) if self.out is not None else None
        try:
            await self._run(items)
        finally:
            if self._writer is not None:
                self._writer.close()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            for scorer in self.given:  # HTTP connections belong to this event loop
                close = getattr(scorer, "aclose", None)
                if close is not None:
                    await close()

    async def _run(self, items: Iterator[Item]) -> None:
        self.scorers = [self._instrumented(scorer) for scorer in self.scorers]
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

    def _instrumented(self, scorer: Any) -> Any:
        """`scorer` asking its judge through the run's shared limiter, if any, and reporting each
        judge answer to the reporter (`engine.judge_progress`); the scorer itself is left as it
        is. Unchanged for a rule-only scorer, one without ``with_judge``, or when the judge
        cannot be built (that failure then shows on each item)."""
        if not uses_judge(scorer) or not hasattr(scorer, "with_judge"):
            return scorer
        try:
            judge = scorer.judge
        except Exception:
            return scorer
        from .judge import with_rate_limit
        from .judge_progress import ProgressJudge

        if self.limiter is not None:
            judge = with_rate_limit(judge, self.limiter)
        return scorer.with_judge(ProgressJudge(judge, self._answered))

    def _answered(self, call: Any) -> None:
        self.state.answers += 1
        self.reporter.judge_answered(self.state)

    # -- the producer and the workers -----------------------------------------------------------

    async def _produce(self, items: Iterator[Item], queue: asyncio.Queue, n_workers: int) -> None:
        skipped = 0
        for item in items:
            self.state.items += 1
            todo = self._todo(item_key(item["id"]))
            if todo and self.state.stopped:
                self.state.left += 1
                continue
            if todo:
                if skipped:
                    self.reporter.skipped(self.state, skipped)
                    skipped = 0
                await queue.put((item, todo))
                continue
            self.state.resumed += 1
            skipped += 1
            if skipped >= SKIPPED_BATCH:
                self.reporter.skipped(self.state, skipped)
                skipped = 0
                await asyncio.sleep(0)
        if skipped:
            self.reporter.skipped(self.state, skipped)
        for _ in range(n_workers):
            await queue.put(None)

    def _todo(self, key: str) -> list[Any]:
        """The scorers still to run on the item `key`; the earlier results of the others are
        counted in the statistics."""
        todo = [s for s in self.scorers if not self.prior.done((key, label_of(s)))]
        if len(todo) < len(self.scorers):
            for scorer in self.scorers:
                label = label_of(scorer)
                found = self.prior.records.get((key, label))
                if found is not None and found[0] != "failed":
                    self.state.stats[label].add(*found, self.prior.agreements.get((key, label)))
        return todo

    async def _worker(self, queue: asyncio.Queue) -> None:
        while True:
            entry = await queue.get()
            if entry is None:
                return
            if self.budget is not None and not await self._admit():
                self.state.left += 1
                continue
            await self._score_item(*entry)

    async def _admit(self) -> bool:
        """Whether the budget lets the next item start now (when not, the run stops)."""
        if self.state.stopped is None and await self.budget.admit():
            return True
        self.state.stopped = self.state.stopped or self.budget.stopped
        return False

    # -- one item -------------------------------------------------------------------------------

    async def _score_item(self, item: Item, todo: list[Any]) -> None:
        key = item_key(item["id"])
        self._position += 1
        if self.target is not None:
            try:
                async with self._sem:
                    produced = await self._call_target(item.get("input"))
                item = apply_target_output(item, produced)
            except Exception as exc:
                await self._target_failed(item, key, todo, exc)
                return
        if self.db is not None:
            self.db.record_item(self.state.run_id, key, self._position, item)
        if len(todo) == 1:
            results = {label_of(todo[0]): await self._score(todo[0], item, key)}
        else:
            done = await asyncio.gather(*(self._score(s, item, key) for s in todo))
            results = {label_of(s): r for s, r in zip(todo, done)}
        await self._item_done(item, results)

    async def _target_failed(self, item: Item, key: str, todo: list[Any], exc: Exception) -> None:
        if self.db is not None:
            self.db.record_item(self.state.run_id, key, self._position, item)
        message = f"the target raised {type(exc).__name__}: {exc}"
        results = {label_of(s): failed_result(s, "target", message, self.state.run_id) for s in todo}
        for label, result in results.items():
            self._save(item, key, label, result)
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
        kwargs = {**item_fields(scorer, item), "run_id": run_id}
        try:
            if not uses_judge(scorer):
                result = scorer.run(**kwargs)
            else:
                async with self._sem:
                    result = await scorer.arun(**kwargs)
        except Exception as exc:  # the engine promises not to raise; keep the item isolated anyway
            result = failed_result(scorer, "internal", f"{type(exc).__name__}: {exc}", run_id)
        label = label_of(scorer)
        if result.label != label:  # a scorer object that does not label its results
            result = result.model_copy(update={"label": label})
        self._save(item, key, label, result)
        return result

    def _save(self, item: Item, key: str, label: str, result: ScoreResult) -> None:
        if self.prices is not None and result.model:
            result.cost_usd = self.prices.cost(result.model, result.usage)
        data = result.to_json_dict()
        status = result.status
        if self._writer is not None:
            self._writer.write(out_line(item["id"], data))
        if self.db is not None:
            self.db.record_result(self.state.run_id, key, label, data, status)
        if (key, label) in self.prior.records:
            self.rewrote = True
        self.state.stats[label].add(status, result.score, result.agreement)
        self.state.judge_calls += result.usage.calls
        self.state.usage.setdefault(label, Usage()).add(result.usage)
        if result.model:
            self.state.usage_by_model.setdefault(result.model, Usage()).add(result.usage)

    async def _item_done(self, item: Item, results: dict[str, ScoreResult]) -> None:
        self.state.done_items += 1
        if self.budget is not None:
            self.budget.finished(sum(r.cost_usd or 0.0 for r in results.values()))
        self.reporter.item_done(self.state, item, results)
        if self.on_item_complete is not None:
            outcome = self.on_item_complete(item, results)
            if inspect.isawaitable(outcome):
                await outcome


__all__ = ["Runner", "declared_names", "item_fields", "label_of", "uses_judge", "failed_result", "apply_target_output", "SKIPPED_BATCH"]

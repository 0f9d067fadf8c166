"""The concurrent part of a run: items streamed into workers, scored, each result saved at once.

- **Concurrency**: a producer streams items from the dataset (never all in memory) into a
  queue of ``concurrency`` places, read by ``concurrency`` workers; an item's scorers run
  concurrently; at most ``concurrency`` scorer runs are in flight at once. A run asks its
  stages one after another, and a `for_each` stage's elements as many at once as its judge
  serves (`engine.interpret.fan_out`: the embedded judge's slots, 1 for hosted judges). A rule-only
  scorer runs synchronously, without a slot. With a `RateLimiter`, every scorer's judge takes
  a token per request (one bucket for the run; re-asks and transport retries inside one stage
  are not counted apart).
- **Progress**: every scorer's judge reports each answer (`engine.judge.progress`), counted in
  `RunState.answers` and passed to the reporter, so progress moves per judge call.
- **Labels**: results are keyed by the scorer's label in the run (`ScorerLike.label`: its id
  unless given), so two versions of one scorer can run side by side.
- **Failure isolation**: a failed item is a result with ``error`` (stage, kind, message); it
  never stops the others and never counts as a low score. A target that raises fails every
  scorer of its item with kind ``target``; a scorer that raises (it should not) fails its
  result with kind ``internal``.
- **Nothing lost**: each result is appended to the out file, then committed to the store, as
  it completes; items already done in an earlier attempt (`engine.run.resume.PriorResults`) are
  counted, not scored again.
- **Cost and budget**: with a price table (`engine.run.prices`) each result gets its cost
  (``costUsd``); with a `engine.run.budget.Budget`, a worker starts an item only when the budget
  admits it (so at most ``concurrency`` items are in flight). Once it does not, the items in
  flight finish and the rest of the data is only read (items done in an earlier attempt are
  still counted; the others are left, `RunState.left`).
- **The first judge answer goes alone**: until the run's judge has answered once (a cached answer
  counts) or its first item has ended, one item is in flight; then ``concurrency``. A judge that
  refuses the credentials (a result failed with kind ``auth``, HTTP 401/403) or the
  structured-output mode (kind ``unsupported``), or has no such path or model (kind ``not_found``,
  HTTP 404), fails every item the same way, so it stops the run
  as the budget does: that one item fails, the rest are left for ``--resume`` once it is fixed.

Scoring one item (target, slots, isolation) is `engine.run.item_scoring`, keeping its results
`engine.run.sink`: the Ray executor (`engine.ray.runner`) shares both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

from ..core.scorer_like import ScorerLike
from ..judge.rate_limit import RateLimiter
from ..judge.stack import JudgeParts
from .attempt import Destinations, RunContext
from .item_scoring import ItemScoring
from .items import Item, item_key
from .sink import ResultSink

SKIPPED_BATCH = 256  # items skipped on resume are reported (and the loop yields) in batches
# the error kinds that would fail every item the same way, and what the judge did: a run stops at the first
_STOPPING = {"auth": "refused the credentials", "unsupported": "refused the structured-output mode",
             "not_found": "has no such path or model"}


def declared_names(scorers: Iterable[ScorerLike]) -> list[str]:
    """The names of the fields the scorers' specs declare, each once, in order."""
    names: dict[str, None] = {}
    for scorer in scorers:
        names.update(dict.fromkeys(scorer.plan.declared))
    return list(names)


def rate_limited(scorer: ScorerLike, limiter: Any) -> ScorerLike:
    """`scorer` asking its judge through `limiter` (a `RateLimiter`, or any object with an
    async ``acquire()``), the scorer itself left as it is; unchanged without a limiter or for a
    rule-only scorer (`engine.bind.stack.for_run`)."""
    from ..bind.stack import for_run

    return scorer if limiter is None else for_run(scorer, JudgeParts(rate_limit=limiter))


class Runner:
    """One attempt of a run in this process: `await run(items)` scores every item not done yet
    with the scorers of `context` (`engine.run.attempt.RunContext`: ``concurrency`` at once, its
    rate limit one `RateLimiter` for every scorer, its price table costing each result, its
    budget admitting each item), keeping each result as it completes where `to` says
    (`engine.run.attempt.Destinations`, through `engine.run.sink.ResultSink`: out file, store,
    reporter). `rewrote` tells afterwards whether a result of the earlier attempts was replaced
    (the out file then holds an older line too). The out file, the target's threads and the
    scorers' judge connections are closed when `run` returns or raises."""

    def __init__(self, context: RunContext, to: Destinations):
        self.given = list(context.scorers)
        self.scorers = self.given
        self.state = context.state
        self.reporter = to.reporter
        self.concurrency = context.concurrency
        self.limiter = RateLimiter(context.rate_limit) if context.rate_limit else None
        self.budget = context.budget
        self.sink = ResultSink(context, to)
        self.scoring = ItemScoring(context.state.run_id, context.concurrency, context.target,
                                   context.against)
        # set once the run's judge has answered (or its first item ended): the other workers wait for it
        self.opened = asyncio.Event()
        self.leading = False  # a worker has taken the run's first item

    @property
    def rewrote(self) -> bool:
        return self.sink.rewrote

    async def run(self, items: Iterator[Item]) -> None:
        self.sink.open()
        try:
            await self._run(items)
        finally:
            self.sink.close()
            self.scoring.close()
            for scorer in {id(s): s for s in (*self.given, *self.scorers)}.values():  # HTTP connections belong to
                await scorer.aclose()  # this event loop

    async def _run(self, items: Iterator[Item]) -> None:
        from ..bind.stack import for_run

        # each scorer's judge built with the run's shared limiter, reporting each answer (progress)
        parts = JudgeParts(rate_limit=self.limiter, on_answer=self._answered)
        self.scorers = [for_run(scorer, parts) for scorer in self.scorers]
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

    def _answered(self, call: Any, answer: Any) -> None:
        if answer is None:  # a failed call: done, but no answer
            self.state.failed_calls += 1
        else:
            self.state.answers += 1
            self.opened.set()
        if answer is not None and answer.usage.cache_hits:
            self.state.cached_answers += 1
        self.reporter.judge_answered(self.state)

    # -- the producer and the workers -----------------------------------------------------------

    async def _produce(self, items: Iterator[Item], queue: asyncio.Queue, n_workers: int) -> None:
        skipped = 0
        for item in items:
            self.state.items += 1
            todo = self.sink.count_prior(item_key(item["id"]), self.scorers)
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

    async def _worker(self, queue: asyncio.Queue) -> None:
        while True:
            entry = await queue.get()
            if entry is None:
                return
            await self._first_answer()
            if self.state.stopped is not None or (self.budget is not None and not await self._admit()):
                self.state.left += 1
                self.opened.set()
                continue
            await self._score_item(*entry)

    async def _first_answer(self) -> None:
        """Return at once for the worker taking the run's first item; the others wait until the
        judge has answered once or that item has ended (a refused key then fails one item, not
        ``concurrency``)."""
        if self.opened.is_set():
            return
        if not self.leading:
            self.leading = True
            return
        await self.opened.wait()

    async def _admit(self) -> bool:
        """Whether the budget lets the next item start now (when not, the run stops)."""
        if self.state.stopped is None and await self.budget.admit():
            return True
        self.state.stopped = self.state.stopped or self.budget.stopped
        return False

    def _refused(self, results: dict[str, Any]) -> None:
        """Stop the run at the first result whose judge refused the credentials (kind ``auth``) or
        the structured-output mode (kind ``unsupported``), or has no such path or model (kind
        ``not_found``): every item would fail the same way."""
        if self.state.stopped is not None:
            return
        for result in results.values():
            error = getattr(result, "error", None)
            what = _STOPPING.get(error.kind) if error is not None else None
            if what is not None:
                said = error.message.splitlines()[0]
                # a refused key or mode says what was refused itself: not said twice
                self.state.stopped = (said if error.kind in ("auth", "unsupported") else f"the judge {what} ({said})"
                                      ) + "; every item would fail the same way"
                return

    async def _score_item(self, item: Item, todo: list[ScorerLike]) -> None:
        key = item_key(item["id"])
        item, results = await self.scoring.score_item(
            item, todo, lambda scored, label, result: self.sink.save(scored, key, label, result),
            ready=lambda scored: self.sink.record_item(key, scored))
        self._refused(results)
        self.opened.set()
        await self.sink.item_done(item, results)


__all__ = ["Runner", "declared_names", "rate_limited", "SKIPPED_BATCH"]

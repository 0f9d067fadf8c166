"""Scoring one item of a batch run: the target first, then each scorer still to run, isolated.

`ItemScoring` is what the local runner (`engine.run.runner`) and a Ray actor (`engine.ray.actor`)
both do with an item; where the results go is theirs to say (a ``save`` callback, called as
each result completes):

- **Target**: with a target (the system under test), its output (or ``{"output", "context",
  …}``) replaces the item's before any scorer runs (`apply_target_output`); with a second version
  (`against`), the two outputs become the pair ``output_a`` / ``output_b`` (`apply_pair_outputs`); a target that
  raises fails every scorer of the item with kind ``target``. A sync target runs in a thread
  pool of ``concurrency`` threads.
- **Slots**: a scorer that asks a judge, and the target, take one of ``concurrency`` slots
  while they run (so at most that many judge requests are in flight); a rule-only scorer runs
  synchronously, without a slot.
- **Isolation**: a scorer that raises (it should not) fails its result with kind
  ``internal``; a result is labelled with its scorer's label in the run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..core.result import ItemError, ScoreResult
from ..core.run_fields import LOOKED_FOR, RUN_FIELDS, coerce_context
from ..core.scorer_like import ScorerLike
from .items import Item

__all__ = ["ItemScoring", "Save", "apply_pair_outputs", "apply_target_output", "failed_result", "item_fields"]

#: ``save(item, label, result)``: called with each result as it completes (the item as scored).
Save = Callable[[Item, str, ScoreResult], None]


def failed_result(scorer: ScorerLike, kind: str, message: str, run_id: str) -> ScoreResult:
    """A failed result of `scorer` made by the runner itself (kind ``target`` or ``internal``)."""
    return ScoreResult(run_id=run_id, scorer=scorer.id, label=scorer.label, spec_version=scorer.plan.version,
                       spec_hash=scorer.plan.hash or "", model=scorer.model,
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


def apply_pair_outputs(item: Item, produced: Any, other: Any) -> Item:
    """The item with two versions' outputs as a pair: the first's (`produced`, applied as
    `apply_target_output` does, its context and the rest too) as ``output`` and ``output_a``, the
    second's output (`other`, or its ``output`` key) as ``output_b``."""
    updated = apply_target_output(item, produced)
    updated["output_a"] = updated["output"]
    updated["output_b"] = other["output"] if isinstance(other, Mapping) and "output" in other else other
    return updated


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def item_fields(scorer: ScorerLike, item: Item) -> dict[str, Any]:
    """What `scorer` is given of an item: its run fields (`engine.core.run_fields.RUN_FIELDS`), its
    ``language`` when it gives one, the fields the scorer's spec declares that the item has, and
    where its reader looked for the fields it lacks (`engine.core.run_fields.LOOKED_FOR`, when the
    reader says)."""
    fields = {name: item.get(name) for name in RUN_FIELDS}
    if item.get("language") is not None:
        fields["language"] = item["language"]
    fields.update((name, item[name]) for name in scorer.plan.declared if name in item)
    if item.get(LOOKED_FOR):
        fields[LOOKED_FOR] = item[LOOKED_FOR]
    return fields


class ItemScoring:
    """Scores items of run `run_id` (see the module docstring): at most `concurrency` (≥ 1)
    judge-asking scorer runs and target calls at once, over every item scored through this
    object. Use it inside one event loop; `close()` ends the target's threads."""

    def __init__(self, run_id: str, concurrency: int, target: Any = None, against: Any = None):
        self.run_id = run_id
        self.concurrency = concurrency
        self.target = target
        self.against = against
        self._slots: asyncio.Semaphore | None = None
        self._pool: ThreadPoolExecutor | None = None

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:  # made in the running loop
            self._slots = asyncio.Semaphore(self.concurrency)
        return self._slots

    async def score_item(self, item: Item, todo: list[ScorerLike], save: Save,
                         ready: Callable[[Item], None] | None = None) -> tuple[Item, dict[str, ScoreResult]]:
        """Score `item` with the scorers `todo`: the target's output first (when there is a
        target), then ``ready(item)`` with the item as it will be scored, then every scorer
        concurrently, each result passed to ``save`` as it completes. Returns the item as
        scored and its results by label. Never raises for a failing target or scorer."""
        failure = None
        if self.target is not None:
            try:
                item = await self._produced(item)
            except Exception as exc:
                failure = f"the target raised {type(exc).__name__}: {exc}"
        if ready is not None:
            ready(item)
        if failure is not None:
            results = {s.label: failed_result(s, "target", failure, self.run_id) for s in todo}
            for label, result in results.items():
                save(item, label, result)
            return item, results
        if len(todo) == 1:
            return item, {todo[0].label: await self._score(todo[0], item, save)}
        done = await asyncio.gather(*(self._score(s, item, save) for s in todo))
        return item, {s.label: r for s, r in zip(todo, done)}

    async def _produced(self, item: Item) -> Item:
        """The item with the target's output; with `against` too, the pair: the target's output as
        ``output_a`` and the other version's as ``output_b`` (`apply_pair_outputs`)."""
        async with self.slots:
            produced = await self._call_target(self.target, item.get("input"))
        if self.against is None:
            return apply_target_output(item, produced)
        async with self.slots:
            other = await self._call_target(self.against, item.get("input"))
        return apply_pair_outputs(item, produced, other)

    async def _call_target(self, target: Any, value: Any) -> Any:
        if _is_async_callable(target):
            return await target(value)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="scorespec-target")
        produced = await asyncio.get_running_loop().run_in_executor(self._pool, target, value)
        if inspect.isawaitable(produced):
            produced = await produced
        return produced

    async def _score(self, scorer: ScorerLike, item: Item, save: Save) -> ScoreResult:
        kwargs = {**item_fields(scorer, item), "run_id": self.run_id}
        try:
            if not scorer.plan.uses_judge:
                result = scorer.run(**kwargs)
            else:
                async with self.slots:
                    result = await scorer.arun(**kwargs)
        except Exception as exc:  # the engine promises not to raise; keep the item isolated anyway
            result = failed_result(scorer, "internal", f"{type(exc).__name__}: {exc}", self.run_id)
        label = scorer.label
        if result.label != label:  # a scorer object that does not label its results
            result = result.model_copy(update={"label": label})
        save(item, label, result)
        return result

    def close(self) -> None:
        """End the target's threads (waiting for none)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

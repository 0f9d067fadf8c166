"""Where a batch run's results go as they complete: the out file, the store, the statistics.

`ResultSink` is the one place a result of a run is kept, whichever executor made it (the local
runner, `engine.run.runner`, or the Ray driver, `engine.ray.runner`):

- `save`: the result's cost set from the price table (``costUsd``), a line appended to the out
  file (`engine.run.outfile.OutWriter`), then a row committed to the store, then the result counted
  in the run's statistics, judge calls and usage (per label and per judge model);
- `record_item`: the item's data in the store, with its position in this attempt;
- `count_prior`: the results an earlier attempt left for an item (`engine.run.resume.PriorResults`)
  counted in the statistics, and the scorers still to run on it;
- `item_done`: an item finished in this attempt, reported (`engine.run.reporting.EvalReporter`) and
  passed to the run's ``on_item_complete``.

`rewrote` tells afterwards whether a result of the earlier attempt was replaced (the out file
then holds an older line too, so the run compacts it at the end).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from ..core.result import ScoreResult, Usage
from ..core.scorer_like import ScorerLike
from .attempt import Destinations, RunContext
from .items import Item
from .jury_stats import JuryStats, jury_of
from .outfile import OutWriter, out_line
from .prices import PriceTable, priced_result, result_usage

__all__ = ["ResultSink", "priced"]


def priced(result: ScoreResult, prices: PriceTable | None) -> ScoreResult:
    """`result` with its cost (``costUsd``) set from `prices` when it has a judge model."""
    if prices is not None and result.model:
        priced_result(result, prices)
    return result


class ResultSink:
    """Keeps the results of one attempt (see the module docstring): the run's `context`
    (`engine.run.attempt.RunContext`: its state, the earlier attempts' results, the price table,
    the budget told what each finished item cost) and where results go, `to`
    (`engine.run.attempt.Destinations`: the out file, appended, opened by `open` and closed by
    `close`; the store; the reporter; ``on_item_complete``, awaited if async, an exception from
    it propagating)."""

    def __init__(self, context: RunContext, to: Destinations):
        self.state = context.state
        self.prior = context.prior
        self.prices = context.prices
        self.budget = context.budget
        self.out = to.out
        self.db = to.db
        self.reporter = to.reporter
        self.on_item_complete = to.on_item_complete
        self.rewrote = False
        self._writer: OutWriter | None = None
        self._position = 0

    def count_prior(self, key: str, scorers: Iterable[ScorerLike]) -> list[ScorerLike]:
        """The scorers still to run on the item `key` (those without a final result in the
        earlier attempts); the earlier results of the others are counted in the statistics."""
        scorers = list(scorers)
        todo = [s for s in scorers if not self.prior.done((key, s.label))]
        if len(todo) < len(scorers):
            for scorer in scorers:
                label = scorer.label
                found = self.prior.records.get((key, label))
                if found is not None and found[0] != "failed":
                    self.state.stats[label].add(*found, self.prior.agreements.get((key, label)),
                                                *self.prior.extras.get((key, label), (None, None)))
                    if found[0] == "scored":
                        self.state.stats[label].add_pair(self.prior.pairs.get((key, label)))
                    self._jury(label).add(self.prior.juries.get((key, label)))
        return todo

    def _jury(self, label: str) -> JuryStats:
        return self.state.jury.setdefault(label, JuryStats())

    def record_item(self, key: str, item: Item) -> None:
        """Keep the item's data in the store (its position: the order items start in this attempt)."""
        self._position += 1
        if self.db is not None:
            self.db.record_item(self.state.run_id, key, self._position, item)

    def save(self, item: Item, key: str, label: str, result: ScoreResult) -> None:
        """Keep one result: its cost, the out-file line, the store's row, the statistics."""
        priced(result, self.prices)
        data = result.to_json_dict()
        status = result.status
        if self._writer is not None:
            self._writer.write(out_line(item["id"], data))
        if self.db is not None:
            self.db.record_result(self.state.run_id, key, label, data, status)
        if (key, label) in self.prior.records:
            self.rewrote = True
        self.state.stats[label].add(status, result.score, result.agreement, result.scores, result.label_value)
        if result.jurors:
            self._jury(label).add(jury_of(data))
        self.state.stats[label].warn(result.warnings)
        if status == "scored" and result.pairwise is not None:
            self.state.stats[label].add_pair(data.get("pairwise"))
        self.state.judge_calls += result.usage.calls
        self.state.usage.setdefault(label, Usage()).add(result.usage)
        for model, usage in result_usage(result).items():
            self.state.usage_by_model.setdefault(model, Usage()).add(usage)
            self.state.usage_by_label_model.setdefault(label, {}).setdefault(model, Usage()).add(usage)

    async def item_done(self, item: Item, results: dict[str, ScoreResult]) -> None:
        """An item finished in this attempt: counted, its cost told to the budget, reported,
        and passed to ``on_item_complete``."""
        self.state.done_items += 1
        if self.budget is not None:
            unknown = [r for r in results.values() if r.model and r.usage.unreported and r.cost_usd is None]
            if unknown:
                self.budget.finished(None, f"{unknown[0].model} reported no token usage for "
                                           f"{unknown[0].usage.unreported} call(s)")
            else:
                self.budget.finished(sum(r.cost_usd or 0.0 for r in results.values()))
        self.reporter.item_done(self.state, item, results)
        if self.on_item_complete is not None:
            outcome = self.on_item_complete(item, results)
            if inspect.isawaitable(outcome):
                await outcome

    def open(self) -> None:
        """Open the out file for appending (created when missing)."""
        if self.out is not None and self._writer is None:
            self._writer = OutWriter(self.out)

    def close(self) -> None:
        """Close the out file (fsync'd)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

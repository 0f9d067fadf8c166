"""One attempt of a run as three named records, handed whole to its executor.

`engine.run.evals.arun_evals` resolves a run, then gives its executor (`engine.run.executor`) an
`Attempt`: what the attempt works with (`RunContext`), where its results go (`Destinations`) and
what it reads (`ItemSource`). The local runner (`engine.run.runner.Runner`), the Ray driver
(`engine.ray.runner.RayRunner`) and the result sink (`engine.run.sink.ResultSink`) take the
records they need whole, so a new part of a run is one field of one record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.scorer_like import ScorerLike
from .budget import Budget
from .items import DatasetProblem, Item
from .prices import PriceTable
from .reporting import EvalReporter, RunState
from .resume import PriorResults
from .store import Store

__all__ = ["Attempt", "Destinations", "ItemSource", "OnItemComplete", "RunContext"]

#: ``on_item_complete(item, {label: ScoreResult})``: called (awaited if it returns an awaitable)
#: after each item of the attempt.
OnItemComplete = Callable[[Item, dict[str, Any]], Any]


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """What one attempt works with. `scorers`: the run's resolved scorers (`ScorerLike`), in
    order; `state`: the run's progress and statistics, updated in place; `prior`: what earlier
    attempts left (`engine.run.resume.PriorResults`); `target`: the system under test (a sync or
    async callable of an item's ``input``), or None; `against`: a second version of it, whose output
    is the pair's ``output_b`` (the target's then ``output_a``), or None; `concurrency`: judge-asking scorer runs at
    once (≥ 1; per actor on Ray); `rate_limit`: judge requests per second over the run (None:
    no limit); `prices`: the price table each result is costed from (None: no cost); `budget`:
    what admits each item (`engine.run.budget.Budget`; None: no budget)."""

    scorers: Sequence[ScorerLike]
    state: RunState
    prior: PriorResults
    concurrency: int
    target: Callable[[Any], Any] | None = None
    against: Callable[[Any], Any] | None = None
    rate_limit: float | None = None
    prices: PriceTable | None = None
    budget: Budget | None = None


@dataclass(frozen=True, kw_only=True)
class Destinations:
    """Where an attempt's results go as they complete. `out`: the JSONL out file (appended),
    or None; `db`: the store, or None; `reporter`: the hooks told of progress; `on_item_complete`:
    called after each item (`OnItemComplete`), or None; an exception from it stops the run."""

    out: Path | None
    db: Store | None
    reporter: EvalReporter
    on_item_complete: OnItemComplete | None = None


@dataclass(frozen=True, kw_only=True)
class ItemSource:
    """What an attempt reads. `data`: the run's data (a path, a URL, a `TraceSource`, a list, a
    DataFrame: `engine.run.datasets`); `fields`: run field → the item's field; `limit`: at most
    this many readable items, in the data's order (None: all); `on_problem`: told of each
    unreadable record."""

    data: Any
    on_problem: Callable[[DatasetProblem], None]
    fields: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One attempt of a run, as its executor is given it: `context` (`RunContext`), `to`
    (`Destinations`), `source` (`ItemSource`)."""

    context: RunContext
    to: Destinations
    source: ItemSource

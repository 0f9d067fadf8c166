"""A run's budget (``--max-cost USD``): stop cleanly before the next item would pass it.

Before each item starts, the run estimates what it will have spent once that item and the items
already in flight finish: what it has spent (its results' tokens at the price table's prices,
`engine.run.prices`; on ``--resume``, the results of the run's earlier attempts included) plus, for
each of those items, the estimated cost of an item: the mean of the items this attempt finished
(before the first, of the items its earlier attempts finished). When that estimate passes the
budget the run starts no further item: the items in flight finish and are written, the summary
says why it stopped, and the command exits 3. Until an item's cost is known (the first item of a
fresh run), items start one at a time. So the run spends at most the budget plus the estimate's
error on the items in flight (at most ``--concurrency`` of them).

A budget needs a price for every judge model of the run: `check_priced` refuses to start
otherwise, naming the model and the price table (a model of the embedded judges costs 0).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping

from ..core.errors import UserError
from ..core.result import Usage
from .prices import PriceTable, usd_text

__all__ = ["Budget", "UnpricedModelError", "check_max_cost", "check_priced", "spent_before"]


class UnpricedModelError(UserError, ValueError):
    """A budget was asked for and a judge model of the run has no price (see `check_priced`)."""


def check_max_cost(max_cost: float) -> float:
    """`max_cost` as a float when it is a positive finite number of US dollars; else ValueError."""
    if isinstance(max_cost, bool) or not isinstance(max_cost, (int, float)) or not math.isfinite(max_cost) \
            or max_cost <= 0:
        raise ValueError(f"max_cost: a positive number of US dollars is needed, got {max_cost!r}")
    return float(max_cost)


def check_priced(models: Iterable[str | None], prices: PriceTable) -> None:
    """Raise `UnpricedModelError` naming the first of `models` (judge model strings; None for a
    scorer without a judge, skipped) that `prices` cannot price, and where the prices came from."""
    for model in models:
        if model and prices.price(model) is None:
            raise UnpricedModelError(
                f"--max-cost needs a price for every judge model, and {model!r} has none in {prices.describe()}: "
                f"add it to a price table (e.g. models: {{{model}: {{input: USD, output: USD}}}} per million "
                "tokens) given with --prices FILE, $SCORESPEC_PRICES or prices.yaml in the cache folder")


def spent_before(spent: Mapping[tuple[str, str], tuple[str | None, int, int]],
                 prices: PriceTable) -> tuple[float, int]:
    """What a run's earlier results cost (US dollars) and over how many items: `spent` holds per
    (item, label) the model and the tokens in and out (`engine.run.resume.PriorResults.spent`). A
    result of a model without a price counts 0."""
    usd = 0.0
    for model, tokens_in, tokens_out in spent.values():
        usd += prices.cost(model, Usage(tokens_in=tokens_in, tokens_out=tokens_out)) or 0.0
    return usd, len({item for item, _label in spent})


class Budget:
    """The budget of one attempt of a run; see the module docstring.

    max_usd: the budget, in US dollars (> 0). spent_before / items_before: what the run's earlier
    attempts spent, over how many items. The runner awaits `admit()` before an item starts and
    calls `finished(cost)` when it is done; `stopped` then says why the run stopped (None while
    it has not). `spent` is this attempt's spending; `total` the whole run's.
    """

    def __init__(self, max_usd: float, *, spent_before: float = 0.0, items_before: int = 0):
        self.max_usd = check_max_cost(max_usd)
        self.spent_before = spent_before
        self.items_before = items_before
        self.spent = 0.0
        self.done = 0
        self.in_flight = 0
        self.stopped: str | None = None
        self._changed = asyncio.Event()

    @property
    def total(self) -> float:
        """What the run has spent, its earlier attempts included (US dollars)."""
        return self.spent_before + self.spent

    def per_item(self) -> float | None:
        """The mean cost of an item this attempt finished; before it finishes one, the mean over
        the run's earlier attempts (their settings may have differed); None before any item."""
        if self.done:
            return self.spent / self.done
        return self.spent_before / self.items_before if self.items_before else None

    async def admit(self) -> bool:
        """Whether the next item may start (it is then counted in flight until `finished`);
        False when it would pass the budget, with the reason in `stopped`. Waits for the item in
        flight while no item's cost is known."""
        while True:
            if self.stopped is not None:
                return False
            per_item = self.per_item()
            if per_item is None and self.in_flight:
                self._changed.clear()
                await self._changed.wait()
                continue
            estimate = self.total + (self.in_flight + 1) * (per_item or 0.0)
            if estimate > self.max_usd * (1 + 1e-9):  # float sums of exact prices may land a hair above
                flying = f", {self.in_flight} item(s) in flight" if self.in_flight else ""
                self.stopped = (f"the budget of {usd_text(self.max_usd)} would be passed by the next item "
                                f"({usd_text(self.total)} spent, about {usd_text(per_item)} an item{flying})")
                return False
            self.in_flight += 1
            return True

    def finished(self, cost: float | None, why_unknown: str | None = None) -> None:
        """An admitted item is done; it cost `cost` US dollars. None: its cost cannot be known
        (`why_unknown` says why, e.g. a provider that reports no usage): the run starts no further
        item, since it can no longer tell what it has spent."""
        self.in_flight = max(self.in_flight - 1, 0)
        self.done += 1
        if cost is None:
            if self.stopped is None:
                self.stopped = (f"the cost of an item cannot be known ({why_unknown or 'unknown usage'}), so the "
                                f"budget of {usd_text(self.max_usd)} cannot be kept: stopped before the next item")
        else:
            self.spent += cost
        self._changed.set()

    def to_json_dict(self) -> dict[str, object]:
        return {"maxUsd": self.max_usd, "spentBeforeUsd": self.spent_before, "spentUsd": self.total,
                "stopped": self.stopped}

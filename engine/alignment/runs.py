"""Scoring a split with some scorers for ``align``: one batch run (`engine.run.evals.arun_evals`:
concurrency, the judge-call cache, progress, the ``max_cost`` budget left), the results kept per
label and item, and the figures of one scorer over some items."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..run.items import item_key
from ..run.settings import RunSettings
from .selection import Figures, figures

__all__ = ["Budget", "Scored", "score_items", "scored_pairs", "unscored_words"]


@dataclass
class Budget:
    """What the run may still spend: `limit` US dollars (None: no limit), `spent` so far (in US
    dollars, across every attempt of a resumed alignment), `calls` made in this attempt; `keep`,
    when given, is called with `spent` after each batch run (the work folder keeps it for a resume)."""

    limit: float | None = None
    spent: float = 0.0
    calls: int = 0
    keep: Callable[[float], None] | None = None

    @property
    def left(self) -> float | None:
        return None if self.limit is None else max(self.limit - self.spent, 0.0)


@dataclass
class Scored:
    """The results of one batch run: label → item key → the result's JSON; the cost per label
    (None: no price) and judge calls per label; `stopped`: why the budget stopped it."""

    results: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    cost: dict[str, float | None] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None


async def score_items(items: Sequence[Mapping[str, Any]], scorers: Sequence[Any], run: RunSettings, budget: Budget,
                      progress: Any = False) -> Scored:
    """Every scorer over `items` in one batch run (no out file, no store), within the budget left."""
    from ..run.evals import arun_evals

    scored = Scored({s.label: {} for s in scorers})
    if not items or not scorers:
        return scored
    if budget.left is not None and budget.left <= 0:
        scored.stopped = "the --max-cost budget is spent"
        return scored

    async def collect(item: dict[str, Any], done: Mapping[str, Any]) -> None:
        for label, result in done.items():
            scored.results.setdefault(label, {})[item_key(item["id"])] = result.to_json_dict()

    settings = dataclasses.replace(run, fields=None, limit=None, out=None, resume=False, run_id=None,
                                   max_cost=budget.left)
    summary = await arun_evals(list(items), list(scorers), settings, on_item_complete=collect, progress=progress,
                               store=False)
    for label in scored.results:
        usage = summary.usage.get(label)
        scored.calls[label] = usage.calls if usage is not None else 0
        scored.cost[label] = summary.cost_by_label.get(label)
    budget.spent += sum(c for c in scored.cost.values() if c)
    budget.calls += sum(scored.calls.values())
    if budget.keep is not None:
        budget.keep(budget.spent)
    scored.stopped = summary.stopped
    return scored


def scored_pairs(results: Mapping[str, Mapping[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    """Item key → score, for the `keys` whose result is scored (not scorable and failed items left out)."""
    out = {}
    for key in keys:
        line = results.get(key)
        if line is not None and line.get("status") == "scored" and line.get("score") is not None:
            out[key] = float(line["score"])
    return out


def figures_of(results: Mapping[str, Mapping[str, Any]], keys: Sequence[str], truth: Mapping[str, Any], kind: str,
               cutoff: float | None) -> Figures:
    """The figures of one scorer's scored items among `keys` against `truth` (item key → label)."""
    scores = scored_pairs(results, keys)
    return figures([scores[k] for k in scores], [truth[k] for k in scores], kind, cutoff)


def unscored_words(results: Mapping[str, Mapping[str, Any]], keys: Sequence[str]) -> str | None:
    """Why items among `keys` have no score, in words: ``"12 items failed: includes needs
    'ground_truth' …; 2 not scorable: …"`` (the first message of each kind), None when every
    item has a score."""
    failed: list[str] = []
    not_scorable: list[str] = []
    for key in keys:
        line = results.get(key)
        if line is None or line.get("status") == "scored":
            continue
        if line.get("status") == "failed" or line.get("error"):
            failed.append(str((line.get("error") or {}).get("message") or "no message"))
        else:
            not_scorable.append(str(line.get("reason") or "no reason given"))
    parts = [f"{len(found)} item(s) {what}: {found[0][:300]}"
             for found, what in ((failed, "failed"), (not_scorable, "not scorable")) if found]
    return "; ".join(parts) or None

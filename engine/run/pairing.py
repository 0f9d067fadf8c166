"""Two files' outputs joined into pairs, by item id (``eval --pair-with``).

`pair_items(data, other)` reads both (any source `engine.run.datasets.iter_items` reads, with the
same field mapping) and gives one item per id found in both: the item of `data`, its response
``output_a`` (its own ``output_a``, else its ``output``) and ``output_b``, the ``output`` of the item
of the same id in `other` (else its ``output_a``). So two runs of a target, or two prompt
versions' outputs, become the pairs a pairwise scorer judges, the first file's the A side.

An id found in one file only is not scored: `note` hears how many there are on each side and the
first ids (`SHOWN`). Ids match as `engine.run.items.item_key` writes them (1 and "1" are one item).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .datasets import iter_items
from .items import DatasetError, Item, OnProblem, item_key

__all__ = ["SHOWN", "pair_items"]

SHOWN = 5
"""How many of the ids found on one side only a note names."""


def _response(item: Mapping[str, Any], first: str, second: str) -> Any:
    value = item.get(first)
    return value if value is not None else item.get(second)


def _one_sided(keys: list[str], side: str, there: str) -> str:
    shown = ", ".join(keys[:SHOWN]) + (", …" if len(keys) > SHOWN else "")
    return f"{len(keys)} item(s) of {side} have no item of the same id in {there}, not scored: {shown}"


def pair_items(data: Any, other: Any, fields: Mapping[str, str] | None = None,
               on_problem: OnProblem | None = None, note: Callable[[str], None] | None = None) -> list[Item]:
    """The pairs of `data` and `other` (see the module), in `data`'s order. `on_problem` hears of
    unreadable records of either; `note` of ids found on one side only. Raises `DatasetError`
    when the two files have no id in common."""
    theirs = {item_key(item["id"]): item for item in iter_items(other, fields, on_problem)}
    pairs: list[Item] = []
    mine: set[str] = set()
    alone: list[str] = []
    for item in iter_items(data, fields, on_problem):
        key = item_key(item["id"])
        mine.add(key)
        match = theirs.get(key)
        if match is None:
            alone.append(key)
            continue
        pairs.append({**item, "output_a": _response(item, "output_a", "output"),
                      "output_b": _response(match, "output", "output_a")})
    tell = note or (lambda message: None)
    if alone:
        tell(_one_sided(alone, "--data", "--pair-with"))
    unmatched = [key for key in theirs if key not in mine]
    if unmatched:
        tell(_one_sided(unmatched, "--pair-with", "--data"))
    if not pairs:
        raise DatasetError("--data and --pair-with have no item id in common: nothing to pair")
    return pairs

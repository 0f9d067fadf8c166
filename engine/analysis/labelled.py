"""The labelled items of a data set, as `calibrate` and `align` read them: each item with a usable
human label at a dotted path, what was left out (no label; with negative values given, a label
that is neither a positive nor a negative value) and the records that could not be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..run.datasets import iter_items
from ..run.items import DatasetProblem, item_key, label_value

__all__ = ["LabelError", "Labelled", "labelled_items", "matches"]


class LabelError(ValueError):
    """The labels cannot be used as asked (no labelled item, a non-numeric graded label, ...)."""


def matches(label: Any, wanted: set[str]) -> bool:
    """Whether `label`, as text, is one of `wanted` (label values as text)."""
    return str(label) in wanted


@dataclass
class Labelled:
    """The items of the data that calibrate (or align) uses, and what it left out."""

    items: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, Any] = field(default_factory=dict)  # item key → its human label
    unlabelled: int = 0
    other_labels: dict[str, int] = field(default_factory=dict)
    problems: list[DatasetProblem] = field(default_factory=list)


def labelled_items(data: Any, field_map: dict[str, str], label_field: str, wanted_pos: set[str] | None,
                    wanted_neg: set[str] | None, limit: int | None) -> Labelled:
    """The first `limit` items with a usable label; raises `LabelError` when there is none."""
    found = Labelled()
    for item in iter_items(data, field_map, found.problems.append):
        label = label_value(item, label_field)
        if label is None:
            found.unlabelled += 1
            continue
        if wanted_neg is not None and not (matches(label, wanted_pos or set()) or matches(label, wanted_neg)):
            found.other_labels[str(label)] = found.other_labels.get(str(label), 0) + 1
            continue
        if limit is not None and len(found.items) >= limit:
            break
        found.items.append(item)
        found.labels[item_key(item["id"])] = label
    if not found.items:
        problems = found.problems
        where = f" ({len(problems)} unreadable record(s): {problems[0]})" if problems else ""
        raise LabelError(f"no item has a usable label in {label_field!r}{where}")
    return found

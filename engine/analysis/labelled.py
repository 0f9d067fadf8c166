"""The labelled items of a data set, as `calibrate` and `align` read them: each item with a usable
human label at a dotted path, what was left out (no label; with negative values given, a label
that is neither a positive nor a negative value) and the records that could not be read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UserError, did_you_mean
from ..run.datasets import iter_items
from ..run.items import DatasetProblem, item_key, label_value

__all__ = ["LabelError", "Labelled", "check_label_classes", "labelled_items", "matches"]


class LabelError(UserError, ValueError):
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


def check_label_classes(labels: Iterable[Any], positive: Iterable[Any] | None, negative: Iterable[Any] | None,
                        label_field: str = "label") -> None:
    """Raise `LabelError` when no label among `labels` (the human labels read; None values are
    skipped) is one of the `positive` values, or, with `negative` values, none is one of them: a
    mistyped label value. The message names the labels seen (with counts) and the nearest one.
    Nothing is checked without `positive` (graded labels)."""
    if positive is None:
        return
    seen: dict[str, int] = {}
    for label in labels:
        if label is not None:
            seen[str(label)] = seen.get(str(label), 0) + 1
    for flag, values in (("--positive", positive), ("--negative", negative)):
        if values is None:
            continue
        wanted = [str(v) for v in values]
        if any(v in seen for v in wanted):
            continue
        listed = ", ".join(f"{label!r} ({n})" for label, n in sorted(seen.items(), key=lambda kv: -kv[1])[:12])
        hint = next((h for h in (did_you_mean(v, seen) for v in wanted) if h.startswith("did you mean")), "")
        raise LabelError(f"no labelled item has the {flag} label {' / '.join(map(repr, wanted))} in "
                         f"{label_field!r}; the labels seen: {listed or 'none'}" + (f": {hint}" if hint else ""))


def labelled_items(data: Any, field_map: dict[str, str], label_field: str, wanted_pos: set[str] | None,
                    wanted_neg: set[str] | None, limit: int | None) -> Labelled:
    """The first `limit` items with a usable label. Raises `LabelError` when there is none, or
    when no item read has a `wanted_pos` label (or, given, a `wanted_neg` one: `check_label_classes`)."""
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
    check_label_classes([*found.labels.values(), *(label for label, n in found.other_labels.items()
                                                   for _ in range(n))], wanted_pos, wanted_neg, label_field)
    return found

"""Records into items: the field mapping, the item shape, item ids and keys, label paths, and
the problems a record can have.

An *item* is a plain dict with the run fields a scorer reads::

    {"id": …, "input": …, "output": …, "ground_truth": …, "context": [str, …] | None, …the rest}

- ``id``: the record's own ``id`` field, else the number the reader gives (its line in a JSONL
  or CSV file, its 1-based position in a JSON array, a Parquet file, a list or a DataFrame).
- ``ground_truth`` also reads ``groundTruth`` (the seed's spelling) when no mapping is given.
- ``context``: a list of strings (`engine.core.run_fields.coerce_context`); absent or empty → None.
- ``language``: the item's own language (an ISO 639-1 code), kept only when the record gives it.
- Field mapping: ``{"output": "answer", "context": "passages"}`` (from ``--field
  output=answer``) reads a run field — or a field a scorer declares (``rubric=criteria``) —
  from another column; a dotted name (``meta.passages``) reads a nested key. Every other column
  is kept under its own name.

A record nested deeper than `MAX_DEPTH` levels (JSON arrays and objects inside each other) is a
`DatasetProblem` and skipped: no run field needs more, and deeper values would exhaust the
recursion limit wherever they are later walked.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import UserError
from ..core.messages import is_messages
from ..core.run_fields import ITEM_FIELDS, RUN_FIELDS, coerce_context

MAPPABLE = ("id",) + RUN_FIELDS + ("language",)  # language: the item's own (engine.core.language)
ALIASES = {"ground_truth": ("groundTruth",)}
MAX_DEPTH = 100  # nesting levels of arrays/objects in one record

Item = dict[str, Any]


@dataclass(frozen=True)
class DatasetProblem:
    """One record that could not be read: the file (or ``<data>`` for in-memory data), its
    1-based line (0 when unknown) and what was wrong."""

    file: str
    line: int
    message: str

    def render(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"

    def __str__(self) -> str:
        return self.render()


class DatasetError(UserError, ValueError):
    """The dataset as a whole cannot be read (missing file, unknown format, a mapped column
    absent from a CSV header). Single bad records are `DatasetProblem`s instead."""


OnProblem = Callable[[DatasetProblem], None]


def parse_fields(pairs: Iterable[str], declared: Iterable[str] = ()) -> dict[str, str]:
    """``["output=answer", "context=passages"]`` → ``{"output": "answer", "context": "passages"}``.
    Raises `ValueError` for a pair without ``=`` or a name that is neither ``id``, a run field
    (`engine.core.run_fields.RUN_FIELDS`) nor one of `declared` (the fields the scorers declare)."""
    known = MAPPABLE + tuple(name for name in declared if name not in MAPPABLE)
    mapping: dict[str, str] = {}
    for pair in pairs:
        name, sep, column = pair.partition("=")
        name, column = name.strip().replace("-", "_"), column.strip()
        if name == "groundTruth":
            name = "ground_truth"
        if not sep or not name or not column:
            raise ValueError(f"--field {pair!r}: expected name=column (e.g. output=answer)")
        if name not in known:
            raise ValueError(f"--field {pair!r}: {name!r} is not one of {', '.join(known)}")
        mapping[name] = column
    return mapping


# --- one record → one item ----------------------------------------------------------------------


def _lookup(record: Mapping[str, Any], column: str) -> tuple[bool, Any]:
    if column in record:
        return True, record[column]
    value: Any = record
    for part in column.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_cell(name: str, text: str) -> Any:
    """A CSV cell of `name`: chat messages for input / output and tool calls written as a JSON
    array are read as that list; any other cell stays text."""
    if name not in ("input", "output", "tool_calls") or not text.lstrip().startswith("["):
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if name == "tool_calls" and isinstance(parsed, list):
        return parsed
    return parsed if parsed and is_messages(parsed) else text


def to_item(record: Mapping[str, Any], number: int, fields: Mapping[str, str] | None = None,
            *, from_text: bool = False) -> Item:
    """Build an item from one record. `number` is its line (or 1-based position), used as the id
    when the record has none. `from_text` marks records whose cells are all text (CSV): empty
    cells of the run fields are then 'not given'."""
    fields = fields or {}
    item: Item = {}
    used: set[str] = set()
    for name in MAPPABLE + tuple(name for name in fields if name not in MAPPABLE):
        column = fields.get(name)
        if column is not None:
            found, value = _lookup(record, column)
            if found:
                used.add(column)
        else:
            found, value = (True, record[name]) if name in record else (False, None)
            if found:
                used.add(name)
            else:
                for alias in ALIASES.get(name, ()):
                    if alias in record:
                        found, value = True, record[alias]
                        used.add(alias)
                        break
        if from_text and isinstance(value, str):
            value = None if not value.strip() else _json_cell(name, value)  # an empty CSV cell: not given
        if _missing(value):
            value = None
        if found or name == "id" or name in ITEM_FIELDS:
            item[name] = value
    if item["id"] is None or item["id"] == "":
        item["id"] = number
    elif not isinstance(item["id"], (str, int)) or isinstance(item["id"], bool):
        item["id"] = str(item["id"]) if not (isinstance(item["id"], float) and item["id"].is_integer()) \
            else int(item["id"])
    item["context"] = coerce_context(item["context"], from_text=from_text)
    for key, value in record.items():
        if key not in used and key not in item:
            item[key] = None if _missing(value) else value
    return item


TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep; skipped"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays/objects in `value` nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def plain_value(value: Any, depth: int = 0) -> Any:
    """numpy scalars → Python values; NaN/NaT → None; numpy arrays (a list column read from
    Parquet: messages, tool calls) → lists, inside lists and dicts too."""
    if value is None:
        return None
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) >= 1:
        value = value.tolist()
    if isinstance(value, (list, tuple, dict)) and depth < MAX_DEPTH:
        if isinstance(value, dict):
            return {k: plain_value(v, depth + 1) for k, v in value.items()}
        return [plain_value(v, depth + 1) for v in value]
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NaTType", "NAType"):
        return None
    return value


# --- ids, labels, problems ---------------------------------------------------------------------


def label_value(item: Mapping[str, Any], label_field: str) -> Any:
    """The item's value at `label_field` (dots reach into nested objects: ``meta.label``), or
    None when it has none there (a missing key, or a value on the way that is not an object):
    where calibrate, compare and the HTML report read an item's human label."""
    value: Any = item
    for part in label_field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def item_key(item_id: Any) -> str:
    """The text form of an item id, used to match results across runs (1 and "1" are one item)."""
    return item_id if isinstance(item_id, str) else json.dumps(item_id)


def print_problem(problem: DatasetProblem) -> None:
    """Write `problem` to stderr as ``FILE:LINE: message`` (the default `on_problem`)."""
    print(problem.render(), file=sys.stderr)


def unique_items(numbered: Iterator[tuple[int, Item]], name: str, report: OnProblem) -> Iterator[Item]:
    """Drop (and report) records whose id repeats an earlier one: results are keyed by id."""
    seen: dict[str, int] = {}
    for number, item in numbered:
        key = item_key(item["id"])
        first = seen.get(key)
        if first is not None:
            report(DatasetProblem(name, number, f"duplicate id {item['id']!r} (first at line {first}); skipped"))
            continue
        seen[key] = number
        yield item


__all__ = ["ALIASES", "DatasetError", "DatasetProblem", "Item", "MAPPABLE", "MAX_DEPTH", "OnProblem", "TOO_DEEP",
           "item_key", "json_type", "label_value", "parse_fields", "plain_value", "print_problem", "to_item",
           "too_deep", "unique_items"]

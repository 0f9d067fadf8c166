"""Fields a scorer declares beyond the run fields, resolved for one item.

A spec declares ``fields: {rubric: {schema: {type: string}, required: true}}``; an item gives
``rubric`` by name (a dataset column, ``--field rubric=…``, ``scorer.run(rubric=…)``), and an
option of the same name, when the spec has one, gives the value of every item that has none.
The value is checked against the field's JSON Schema for each item; a text where the schema
wants something else (a CSV cell, a command-line value) is read as JSON first, and a blank one
is not given. Expressions read the value as ``run.NAME`` (None when nothing gives it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..spec.plans import FieldPlan


class FieldValueError(ValueError):
    """A declared field's value fails its schema; the text names the field and where the value
    came from (the item or the option)."""


@dataclass(frozen=True)
class DeclaredValues:
    """The declared fields of one item: `values` by name (None: nothing gives it) and `given`,
    the names the item itself gives (not the option)."""

    values: dict[str, Any]
    given: frozenset[str]


def resolve(fields: Mapping[str, FieldPlan], item: Mapping[str, Any], options: Mapping[str, Any]) -> DeclaredValues:
    """Each declared field's value for an item: the item's (`item`: name → value, None = not
    given), else its option's; checked against the field's schema. Raises `FieldValueError`."""
    values: dict[str, Any] = {}
    given: set[str] = set()
    for name, field in fields.items():
        value, source = _typed(item.get(name), field), "the item"
        if value is None and field.from_option:
            value, source = _typed(options.get(name), field), f"the option {name!r}"
        elif value is not None:
            given.add(name)
        if value is not None:
            try:
                error = field.validator.located_error(value, name)
            except RecursionError:
                error = f"{name}: nested too deeply to check"
            if error is not None:
                raise FieldValueError(f"{error} (field {name!r}, from {source})")
        values[name] = value
    return DeclaredValues(values, frozenset(given))


def _typed(value: Any, field: FieldPlan) -> Any:
    """`value`, or — a text the schema refuses — the JSON it holds (None when blank)."""
    if not isinstance(value, str) or field.validator.error(value) is None:
        return value
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def missing_reason(field: FieldPlan) -> str:
    """Why a required declared field has no value, in words."""
    if field.from_option:
        return f"neither the item nor the option {field.name!r} gives one"
    return "the item has none"


__all__ = ["DeclaredValues", "FieldValueError", "missing_reason", "resolve"]

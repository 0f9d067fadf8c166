"""Checks the label settings share (`engine.analysis.calibration.CalibrationSettings`,
`engine.analysis.compare.CompareSettings`): label values, numbers, and building one from another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["built_settings", "check_label_settings", "label_values", "settings_from_keywords"]

S = TypeVar("S")


def label_values(name: str, value: Any) -> tuple[Any, ...] | None:
    """`value` as a tuple of label values: None stays None, a single str, bytes, number or bool is
    one label value (not its characters), any other iterable gives its items. Raises `TypeError`
    for anything else (named `name`)."""
    if value is None or isinstance(value, tuple):
        return value
    if isinstance(value, (str, bytes, int, float, bool)):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, dict):
        return tuple(value)
    raise TypeError(f"{name} must be a label value or a list of them, not {type(value).__name__}: {value!r}")


def check_label_settings(settings: Any, numbers: dict[str, Any]) -> None:
    """`TypeError` / `ValueError` for a label settings object's `label_field` (a non-empty str, or
    None where allowed), `top` (an int ≥ 0) and `numbers` (name → an int or float, or None)."""
    field = settings.label_field
    if field is not None and not isinstance(field, str):
        raise TypeError(f"label_field must be a str, not {type(field).__name__}: {field!r}")
    if field is not None and not field.strip():
        raise ValueError("label_field must name a field, not be empty")
    top = settings.top
    if isinstance(top, bool) or not isinstance(top, int):
        raise TypeError(f"top must be an int ≥ 0, not {type(top).__name__}: {top!r}")
    if top < 0:
        raise ValueError(f"top must be ≥ 0, not {top}")
    for name, value in numbers.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"{name} must be a number, not {type(value).__name__}: {value!r}")


def built_settings(cls: type[S], settings: S | None, changes: dict[str, Any]) -> S:
    """`settings` (default: ``cls()``) with `changes` laid over it. Raises `TypeError` for
    `settings` that is not a `cls` (naming what was given) or a change that is no field of it."""
    if settings is not None and not isinstance(settings, cls):
        raise TypeError(f"settings must be a {cls.__name__} (or None), not {type(settings).__name__}: "
                        f"{settings!r}"[:300])
    base = settings if settings is not None else cls()
    return dataclasses.replace(base, **changes) if changes else base  # type: ignore[type-var]


def settings_from_keywords(cls: type[S], settings: S | None, keywords: dict[str, Any]) -> S:
    """`built_settings` with the fields of `cls` among `keywords` (taken out of `keywords`, which
    keeps the others, e.g. the run's settings)."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return built_settings(cls, settings, {name: keywords.pop(name) for name in list(keywords) if name in names})

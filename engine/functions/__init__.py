"""Rule functions: deterministic stages a spec calls by name (``function: textual_difference``).

An explicit registry: `register` adds a function under a name (duplicates are an error) and
`lookup` finds one, with a did-you-mean hint on a miss. Third-party packages add functions
through the entry-point group ``scorespec.functions`` (each entry point is a callable; its
name is the function's name). A rule function takes keyword arguments (the spec's `args`)
and returns a JSON-serialisable value, the stage's result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import did_you_mean
from .text import textual_difference

RuleFunction = Callable[..., Any]

_REGISTRY: dict[str, RuleFunction] = {}
_entry_points_loaded = False


def register(name: str, function: RuleFunction | None = None) -> Any:
    """Register `function` under `name` (usable as a decorator). Raises `ValueError` when the
    name is taken."""

    def add(fn: RuleFunction) -> RuleFunction:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ValueError(f"rule function {name!r} is already registered")
        _REGISTRY[name] = fn
        return fn

    return add(function) if function is not None else add


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points  # only when a name is not built in: ~25 ms to import

    for ep in entry_points(group="scorespec.functions"):
        if ep.name not in _REGISTRY:
            register(ep.name, ep.load())


def names() -> list[str]:
    """Every registered function name, built-in and from entry points."""
    _load_entry_points()
    return sorted(_REGISTRY)


def lookup(name: str) -> RuleFunction:
    """The function registered as `name`. Raises `KeyError` whose message has a did-you-mean hint."""
    if name not in _REGISTRY:
        _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(did_you_mean(name, _REGISTRY)) from None


register("textual_difference", textual_difference)

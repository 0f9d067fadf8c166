"""Rule functions: deterministic stages a spec calls by name (``function: textual_difference``).

An explicit registry of `RuleFunction`s (`engine.functions.rule_function`): each declares its arguments
and its result as JSON Schemas, so the compiler checks a rule stage's ``args`` (unknown or missing
names) and every key read from its result at load. `register` adds a function under a name
(duplicates are an error) and `lookup` finds one, with a did-you-mean hint on a miss; `all_functions`
lists them (``scorespec list --functions``).

Third-party packages add functions through the entry-point group ``scorespec.functions``: each
entry point names a `RuleFunction` (made with `rule_function`, declaring at least its result);
its name is the function's name. An entry point that is not one is reported when a spec calls
it, never run. A built-in name is never replaced.

May import: `engine.core`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..core.errors import did_you_mean
from .checks import equals, includes, json_schema, json_valid, matches
from .completeness import completeness
from .keywords import keyword_coverage
from .rule_function import RuleFunction, rule_function
from .similarity import content_similarity
from .text import TEXTUAL_DIFFERENCE
from .tone import tone_consistency
from .tools import (
    called_tool,
    did_not_call,
    max_tool_calls,
    no_tool_errors,
    tool_call_accuracy,
    tool_order,
    used_no_tools,
)
from .trajectory import trajectory

_REGISTRY: dict[str, RuleFunction] = {}
_BROKEN: dict[str, str] = {}  # entry points that are not rule functions: name → why
_entry_points_loaded = False


def register(name: str, function: Callable[..., Any] | RuleFunction | None = None, *,
             result: Mapping[str, Any] | None = None, args: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
    """Register `function` under `name` (usable as a decorator) and return the `RuleFunction`.

    `function` is a `RuleFunction`, or a plain function declared here with `result` (its result's
    JSON Schema, required) and optionally `args` (see `rule_function`). Raises `ValueError` when
    the name is taken by another function, and `TypeError` for a plain function without `result`.
    """

    def add(fn: Callable[..., Any] | RuleFunction) -> RuleFunction:
        present = _REGISTRY.get(name)
        if present is not None:
            if present is fn or present.fn is getattr(fn, "fn", fn):  # the same function again is fine
                return present
            raise ValueError(f"rule function {name!r} is already registered")
        if isinstance(fn, RuleFunction):
            declared = fn if fn.name == name else replace(fn, name=name, _validators={})
        elif result is None:
            raise TypeError(f"rule function {name!r} must declare its result: register(name, fn, result=<JSON "
                            "Schema>), or declare it with engine.functions.rule_function")
        else:
            declared = rule_function(fn, result=result, args=args, name=name)
        _REGISTRY[name] = declared
        return declared

    return add(function) if function is not None else add


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points  # only when a name is not built in: ~25 ms to import

    for ep in entry_points(group="scorespec.functions"):
        if ep.name in _REGISTRY:
            continue
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plugin must not stop every other spec
            _BROKEN[ep.name] = f"entry point {ep.name!r} ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}"
            continue
        if not isinstance(loaded, RuleFunction):
            _BROKEN[ep.name] = (f"entry point {ep.name!r} ({ep.value}) is not a rule function declaring its arguments "
                                "and result: wrap it with engine.functions.rule_function(fn, result={...})")
            continue
        register(ep.name, loaded)


def names() -> list[str]:
    """Every registered function name, built-in and from entry points."""
    _load_entry_points()
    return sorted(_REGISTRY)


def all_functions() -> list[RuleFunction]:
    """Every registered function, by name."""
    return [_REGISTRY[name] for name in names()]


def lookup(name: str) -> RuleFunction:
    """The function registered as `name`. Raises `KeyError` whose message has a did-you-mean
    hint, or says why an entry point of that name is not usable."""
    if name not in _REGISTRY:
        _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(_BROKEN.get(name) or did_you_mean(name, _REGISTRY)
                       or "`scorespec list --functions` lists them") from None


for _builtin in (TEXTUAL_DIFFERENCE, content_similarity, keyword_coverage, completeness, tone_consistency,
                 includes, equals, matches, json_valid, json_schema, tool_call_accuracy, trajectory, called_tool,
                 did_not_call, tool_order, max_tool_calls, used_no_tools, no_tool_errors):
    register(_builtin.name, _builtin)

__all__ = ["RuleFunction", "all_functions", "lookup", "names", "register", "rule_function"]

"""Quick checks on a text: contains, equals, matches a pattern, is JSON, satisfies a schema.

Each returns whether the check passed and what decided it, so a spec can score the scale or 0
and name what failed. Texts are compared as given (no Unicode normalisation); `ignore_case`
lower-cases both sides (Python's full Unicode mapping, as JavaScript's ``toLowerCase``).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.patterns import SEARCH_SECONDS, compile_pattern, search
from .rule_function import check_length, rule_function

#: Each text may have up to this many characters.
MAX_CHARS = 1_000_000
_SHOWN = 200  # characters of a match or a message a result quotes at most

_TEXT = {"type": "string"}
_INDEX = {"type": ["integer", "null"], "minimum": 0}
_LIMIT = f"each text up to {MAX_CHARS:,} characters"


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


@rule_function(
    args={"text": _TEXT, "expected": _TEXT, "ignore_case": {"type": "boolean"}},
    result={"type": "object", "additionalProperties": False, "required": ["found", "position"],
            "properties": {"found": {"type": "boolean"}, "position": _INDEX}},
    limit=_LIMIT,
)
def includes(text: str, expected: str, ignore_case: bool = True) -> dict:
    """Whether `text` contains `expected` (an empty `expected` is always found).

    Returns ``{"found": bool, "position": int | None}``, the position of the first occurrence
    in the compared (lower-cased when `ignore_case`) text. Raises `ValueError` past `MAX_CHARS`.
    """
    check_length("includes", "text", text, MAX_CHARS)
    check_length("includes", "expected", expected, MAX_CHARS)
    if ignore_case:
        text, expected = text.lower(), expected.lower()
    at = text.find(expected)
    return {"found": at >= 0, "position": at if at >= 0 else None}


@rule_function(
    args={"text": _TEXT, "expected": _TEXT, "ignore_case": {"type": "boolean"}},
    result={"type": "object", "additionalProperties": False, "required": ["equal", "firstDifference"],
            "properties": {"equal": {"type": "boolean"}, "firstDifference": _INDEX}},
    limit=_LIMIT,
)
def equals(text: str, expected: str, ignore_case: bool = True) -> dict:
    """Whether `text` equals `expected` exactly (lower-cased first when `ignore_case`).

    Returns ``{"equal": bool, "firstDifference": int | None}``: the position of the first
    character where the compared texts differ (the shorter one's length when one is a prefix of
    the other). Raises `ValueError` past `MAX_CHARS`.
    """
    check_length("equals", "text", text, MAX_CHARS)
    check_length("equals", "expected", expected, MAX_CHARS)
    if ignore_case:
        text, expected = text.lower(), expected.lower()
    if text == expected:
        return {"equal": True, "firstDifference": None}
    at = next((i for i, (a, b) in enumerate(zip(text, expected)) if a != b), min(len(text), len(expected)))
    return {"equal": False, "firstDifference": at}


@rule_function(
    args={"text": _TEXT, "pattern": _TEXT, "ignore_case": {"type": "boolean"}, "exact": {"type": "boolean"},
          "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 60}},
    result={"type": "object", "additionalProperties": False, "required": ["matched", "match", "start", "end"],
            "properties": {"matched": {"type": "boolean"}, "match": {"type": ["string", "null"]},
                           "start": _INDEX, "end": _INDEX}},
    limit=f"the text up to {MAX_CHARS:,} characters, the pattern up to 10,000, one search up to `seconds`",
)
def matches(text: str, pattern: str, ignore_case: bool = False, exact: bool = False,
            seconds: float = SEARCH_SECONDS) -> dict:
    """Whether the regular expression `pattern` (the `regex` package's syntax, a superset of
    Python's `re`) matches somewhere in `text`, or the whole text when `exact`.

    Returns ``{"matched": bool, "match": str | None, "start", "end"}`` (the first match, quoted
    up to 200 characters, and its span). Raises `ValueError` (`engine.core.patterns.PatternError`)
    for a pattern that does not compile (with the position), past the size limits, and when the
    search takes longer than `seconds` (a catastrophic pattern).
    """
    check_length("matches", "text", text, MAX_CHARS)
    found = search(compile_pattern(pattern, ignore_case), text, exact=exact, seconds=seconds)
    if found is None:
        return {"matched": False, "match": None, "start": None, "end": None}
    return {"matched": True, "match": _cut(found.group(0)), "start": found.start(), "end": found.end()}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> tuple[bool, Any, str | None, int | None, int | None]:
    """``(valid, value, error, line, column)`` for `text` read as one strict JSON value (no
    ``NaN`` or ``Infinity``; surrounding whitespace allowed)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant), None, None, None
    except json.JSONDecodeError as exc:
        return False, None, exc.msg, exc.lineno, exc.colno
    except ValueError as exc:
        return False, None, str(exc), None, None
    except RecursionError:
        return False, None, "nested too deeply to read", None, None


_PLACE = {"type": ["integer", "null"], "minimum": 1}
_JSON_RESULT = {"valid": {"type": "boolean"}, "error": {"type": ["string", "null"]}, "line": _PLACE, "column": _PLACE}


@rule_function(
    args={"text": _TEXT},
    result={"type": "object", "additionalProperties": False, "required": list(_JSON_RESULT),
            "properties": _JSON_RESULT},
    limit=_LIMIT,
)
def json_valid(text: str) -> dict:
    """Whether `text` is one valid JSON value (strict: no ``NaN``, no trailing text).

    Returns ``{"valid": bool, "error": str | None, "line": int | None, "column": int | None}``
    (where parsing failed, 1-based). Raises `ValueError` past `MAX_CHARS`.
    """
    check_length("json_valid", "text", text, MAX_CHARS)
    valid, _, error, line, column = parse_json(text)
    return {"valid": valid, "error": error, "line": line, "column": column}


_ERRORS = {"type": "array", "items": {"type": "object", "required": ["path", "message"],
                                      "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}}
MAX_ERRORS = 10


@rule_function(
    args={"text": _TEXT, "schema": {"type": ["object", "boolean"]}},
    result={"type": "object", "additionalProperties": False, "required": [*_JSON_RESULT, "errors"],
            "properties": {**_JSON_RESULT, "errors": _ERRORS}},
    limit=_LIMIT,
)
def json_schema(text: str, schema: dict | bool) -> dict:
    """Whether `text` is valid JSON that satisfies the JSON Schema `schema` (Draft 2020-12).

    Returns `json_valid`'s keys (``valid`` true only when the value also satisfies the schema)
    and ``errors``: up to 10 ``{"path": "/items/0", "message": …}`` where the value breaks the
    schema (empty when it parses and satisfies it, or does not parse). Raises `ValueError` for a
    schema that is not valid JSON Schema and past `MAX_CHARS`.
    """
    check_length("json_schema", "text", text, MAX_CHARS)
    from ..core.schemas import schema_error

    problem = schema_error(schema)
    if problem is not None:
        raise ValueError(f"the schema is not valid JSON Schema: {problem.message}")
    valid, value, error, line, column = parse_json(text)
    if not valid:
        return {"valid": False, "error": error, "line": line, "column": column, "errors": []}
    import jsonschema_rs

    errors = []
    for found in jsonschema_rs.validator_for(schema).iter_errors(value):
        path = "".join(f"/{part}" for part in found.instance_path) or "/"
        errors.append({"path": path, "message": _cut(found.message)})
        if len(errors) == MAX_ERRORS:
            break
    return {"valid": not errors, "error": None, "line": None, "column": None, "errors": errors}


__all__ = ["MAX_CHARS", "equals", "includes", "json_schema", "json_valid", "matches", "parse_json"]

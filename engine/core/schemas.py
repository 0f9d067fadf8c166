"""JSON Schema checks at load time: is a schema valid Draft 2020-12, does a value satisfy an
option's schema.

jsonschema-rs decides (fast, and already what validates judge answers); the pure-Python
`jsonschema` package words the problems, and is imported only when there is one: it takes about
0.1 s to import, a large share of the CLI's cold start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs


def schema_error(schema: Any) -> Any:
    """None when `schema` is a valid Draft 2020-12 JSON Schema (patterns included); else the
    `jsonschema.SchemaError` that says why, with `.message` and `.path` (a key path inside the
    schema)."""
    try:
        if jsonschema_rs.meta.is_valid(schema):
            jsonschema_rs.Draft202012Validator(schema)  # compiles patterns, which the meta-schema does not check
            return None
    except (jsonschema_rs.ValidationError, ValueError):
        pass
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc
    except RecursionError:  # jsonschema-rs gave up on the depth too ("Recursion limit reached")
        return jsonschema.SchemaError("the schema is nested too deeply to check (keep it under about 200 levels)")
    return None


def _format_problem(schema: dict[str, Any], value: Any) -> str | None:
    """What the formats the engine checks itself say about a string `value`: ``format: regex``
    (the pattern must compile with the `regex` package, which rule functions use; the problem
    names the position) and ``format: json-schema`` (the value must be a valid JSON Schema)."""
    fmt = schema.get("format")
    if fmt == "regex" and isinstance(value, str):
        from .patterns import pattern_problem

        return pattern_problem(value)
    if fmt == "json-schema" and isinstance(value, (dict, bool)):
        exc = schema_error(value)
        return None if exc is None else f"not a valid JSON Schema: {exc.message}"
    return None


@dataclass(frozen=True)
class _FormatProblem:
    """A problem a checked format found, shaped like a jsonschema error (at the value itself)."""

    message: str
    absolute_path: tuple[Any, ...] = ()


class OptionValidator:
    """An option's JSON Schema (checked valid beforehand by `schema_error`), compiled once.
    Besides the schema, two formats are checked on the value: ``regex`` and ``json-schema``."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        try:
            self._validator: Any = jsonschema_rs.Draft202012Validator(schema)
        except (jsonschema_rs.ValidationError, ValueError):  # valid to python-jsonschema only
            self._validator = None

    def error(self, value: Any) -> str | None:
        """None when `value` satisfies the schema; else the most relevant problem, in words
        (python-jsonschema's `best_match`). jsonschema-rs accepts at once; what it rejects,
        python-jsonschema judges (values with no JSON form, like inf and nan, which jsonschema-rs
        reads as null, are judged as the Python values they are)."""
        found = self._best(value)
        return None if found is None else found.message

    def located_error(self, value: Any, name: str) -> str | None:
        """As `error`, prefixed with where in the value `name` the problem is
        (``expected[1]: 3 is not of type 'string'``)."""
        found = self._best(value)
        if found is None:
            return None
        where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in found.absolute_path)
        return f"{where}: {found.message}"

    def _best(self, value: Any) -> Any:
        """The most relevant problem (`.message`, `.absolute_path`), or None."""
        try:
            if self._validator is not None and self._validator.is_valid(value):
                problem = _format_problem(self.schema, value)
                return None if problem is None else _FormatProblem(problem)
        except (TypeError, ValueError):  # no JSON form
            pass
        import jsonschema

        return jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(self.schema).iter_errors(value))


def answer_keys(schema: Mapping[str, Any]) -> frozenset[str] | None:
    """The keys an answer to the object `schema` can have: its declared `properties`, when the
    schema closes the object to them (`additionalProperties` absent or false, no
    `patternProperties`); None when other keys may come."""
    props = schema.get("properties")
    if not isinstance(props, Mapping) or schema.get("patternProperties"):
        return None
    extra = schema.get("additionalProperties", False)
    if extra not in (False, None):
        return None
    return frozenset(str(k) for k in props)

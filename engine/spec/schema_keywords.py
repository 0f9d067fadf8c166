"""Misspelled JSON Schema keywords in a spec's schemas (options, judge answers).

JSON Schema ignores keywords it does not know, so ``{type: number, defualt: 10}`` is a valid
schema without a default and ``{enum: [yes, no], maxLenght: 3}`` checks no length: a typo fails
silently. `misspelled` finds the unknown keys that are close to a keyword (difflib ratio ≥ 0.75)
so the compiler can report them at load; unknown keys that resemble no keyword (annotations of
your own, ``x-…`` extensions) stay allowed, as JSON Schema allows them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

#: Draft 2020-12's keywords (core, applicator, validation, annotations, formats, content) and the
#: draft-07 spellings still in use.
KEYWORDS = frozenset({
    "$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$comment", "$vocabulary",
    "definitions", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
    "prefixItems", "items", "additionalItems", "contains", "properties", "patternProperties",
    "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired", "dependencies",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format",
    "contentEncoding", "contentMediaType", "contentSchema",
})

_ONE = ("not", "if", "then", "else", "items", "additionalItems", "contains", "additionalProperties",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def misspelled(schema: Any, pointer: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str, str]]:
    """``(pointer to the key, the key, the keyword it is close to)`` for each unknown key of
    `schema` and its subschemas that looks like a misspelled keyword, in document order.
    Names under ``properties`` (and the other maps of subschemas) are the user's, never checked."""
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if isinstance(key, str) and key not in KEYWORDS and not key.startswith("x-"):
            close = difflib.get_close_matches(key, KEYWORDS, n=1, cutoff=0.75)
            if close:
                yield pointer + (key,), key, close[0]
        if key in _ONE:
            yield from misspelled(value, pointer + (key,))
        elif key in _LIST and isinstance(value, list):
            for i, sub in enumerate(value):
                yield from misspelled(sub, pointer + (key, i))
        elif key in _MAP and isinstance(value, dict):
            for name, sub in value.items():
                yield from misspelled(sub, pointer + (key, name))

"""Answers made from a JSON Schema: a valid value for any schema a scorer stage asks for.

`answer_for(schema)` builds one small JSON value that a JSON Schema (draft 2020-12, the subset
scorer specs use) accepts, so a fake judge can answer every stage of any spec, built-in or your
own, without a script. `schema_reply(request)` is a reply for
`engine.testing.fake_openai.FakeOpenAIServer`: it finds the schema a chat-completion request asks
for (instructor's tool ``function.parameters``, a ``response_format`` JSON schema, or a schema
written into a message) and answers with `answer_for` of it.

What the value looks like (deterministic, the same schema gives the same value):

- objects: every required property, and every property when there are at most
  `ALL_PROPERTIES_UP_TO`;
- ``const`` → it; ``enum`` → its first value; ``anyOf``/``oneOf`` → the first branch;
  ``allOf`` → the branches merged; ``$ref`` (``#/$defs/…``, ``#/definitions/…``) → resolved;
- arrays: ``minItems`` items, at least one when ``maxItems`` allows (a list of claims is never
  empty), distinct ones under ``uniqueItems`` where the item schema allows it;
- strings: ``"example"`` cut to ``maxLength`` and padded to ``minLength``; a ``pattern`` made of
  literals, classes, groups, alternatives and repeats gets a string matching it; a few
  ``format`` values (date, date-time, email, uri, uuid) a sample of that format;
- numbers: the lower bound (``minimum``, or just above ``exclusiveMinimum``), else 0 or the upper
  bound; integers rounded into the bounds, ``multipleOf`` respected when it can be;
- booleans → true; null → null; no type at all → a string (or what its keywords imply).

Example::

    with FakeOpenAIServer(schema_reply) as server:   # every judge call gets a valid answer
        ...

Raises `ValueError` for a schema no value satisfies that it can tell (``false``, ``maxItems``
below ``minItems``), and for a ``$ref`` outside the schema.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ._regex_sample import sample_matching

__all__ = ["answer_for", "schema_reply", "schema_of_request", "ALL_PROPERTIES_UP_TO"]

ALL_PROPERTIES_UP_TO = 6
_FORMATS = {"date": "2024-01-01", "date-time": "2024-01-01T00:00:00Z", "time": "00:00:00Z",
            "email": "someone@example.com", "uri": "https://example.com/", "url": "https://example.com/",
            "uuid": "00000000-0000-4000-8000-000000000000", "hostname": "example.com", "ipv4": "127.0.0.1"}
_TYPE_HINTS = (("properties", "object"), ("required", "object"), ("items", "array"), ("minItems", "array"),
               ("maxItems", "array"), ("minimum", "number"), ("maximum", "number"), ("minLength", "string"),
               ("maxLength", "string"), ("pattern", "string"))


def answer_for(schema: Any, *, root: Any = None, variant: int = 0) -> Any:
    """A JSON value `schema` accepts (see the module docstring for its shape).

    schema: a JSON Schema (a dict, or ``true``/``false``). root: the document ``$ref`` pointers
    resolve in (default: `schema` itself). variant: which of several valid values to prefer (the
    n-th enum value, a numbered string), used to keep ``uniqueItems`` arrays distinct.
    Raises `ValueError` for an unsatisfiable schema it can recognise or an unresolvable ``$ref``.
    """
    root = schema if root is None else root
    if schema is True or schema == {}:
        return "example" if variant == 0 else f"example {variant}"
    if schema is False:
        raise ValueError("the schema `false` accepts no value")
    if not isinstance(schema, dict):
        raise ValueError(f"not a JSON Schema: {schema!r}")
    if "$ref" in schema:
        return answer_for(_merge(_resolve(schema["$ref"], root), _without(schema, "$ref")), root=root, variant=variant)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][variant % len(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return answer_for(_merge(schema[key][0], _without(schema, key)), root=root, variant=variant)
    if schema.get("allOf"):
        merged = _without(schema, "allOf")
        for part in schema["allOf"]:
            merged = _merge(merged, _resolve(part["$ref"], root) if "$ref" in part else part)
        return answer_for(merged, root=root, variant=variant)
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, root)
    if kind == "array":
        return _array(schema, root)
    if kind == "string":
        return _string(schema, variant)
    if kind in ("number", "integer"):
        return _number(schema, kind == "integer", variant)
    if kind == "boolean":
        return variant % 2 == 0
    return None


def _type_of(schema: dict) -> str:
    """The one type to produce: the schema's ``type`` (the first non-null of a list), else the
    type its keywords imply, else string."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = kinds[0] if kinds else None
    if kind:
        return kind
    return next((implied for key, implied in _TYPE_HINTS if key in schema), "string")


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"cannot resolve $ref {ref!r}: only references inside the schema (#/...)")
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise ValueError(f"cannot resolve $ref {ref!r}") from None
    return node


def _without(schema: dict, key: str) -> dict:
    return {k: v for k, v in schema.items() if k != key}


def _merge(base: Any, extra: dict) -> Any:
    """`base` with the keywords of `extra` added (properties and required joined)."""
    if not isinstance(base, dict):
        return base if not extra else extra
    merged = {**base, **{k: v for k, v in extra.items() if k not in ("properties", "required")}}
    if "properties" in base or "properties" in extra:
        merged["properties"] = {**base.get("properties", {}), **extra.get("properties", {})}
    if "required" in base or "required" in extra:
        merged["required"] = list(dict.fromkeys([*base.get("required", []), *extra.get("required", [])]))
    return merged


def _object(schema: dict, root: Any) -> dict:
    properties = schema.get("properties", {})
    names = list(dict.fromkeys(schema.get("required", [])))
    if len(properties) <= ALL_PROPERTIES_UP_TO:
        names += [name for name in properties if name not in names]
    extra = schema.get("additionalProperties", True)
    value = {}
    for name in names:
        value[name] = answer_for(properties[name] if name in properties else extra, root=root)
    return value


def _array(schema: dict, root: Any) -> list:
    low = int(schema.get("minItems", 0))
    high = schema.get("maxItems")
    if high is not None and int(high) < low:
        raise ValueError(f"maxItems {high} is below minItems {low}")
    prefix = schema.get("prefixItems", [])
    count = max(low, 1, min(len(prefix), high if high is not None else len(prefix)))
    if high is not None:
        count = min(count, int(high))
    items = schema.get("items", True)
    unique = bool(schema.get("uniqueItems"))
    values = []
    for index in range(count):
        item_schema = prefix[index] if index < len(prefix) else items
        values.append(answer_for(item_schema, root=root, variant=index if unique else 0))
    return values


def _string(schema: dict, variant: int) -> str:
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    if schema.get("pattern"):
        found = sample_matching(schema["pattern"], low, high)
        if found is not None:
            return found
    text = _FORMATS.get(schema.get("format", ""), "example" if variant == 0 else f"example {variant}")
    if high is not None:
        text = text[: int(high)]
    return text + "x" * max(0, low - len(text))


def _number(schema: dict, integer: bool, variant: int) -> float | int:
    """The least integer inside the bounds, or for a number: ``minimum``, the middle of an open
    interval, just above ``exclusiveMinimum``; 0 (or below the upper bound) without a lower one."""
    upper = _upper(schema, integer)
    if integer:
        lows = [math.ceil(schema["minimum"])] if "minimum" in schema else []
        if "exclusiveMinimum" in schema:
            lows.append(math.floor(schema["exclusiveMinimum"]) + 1)
        value: float = max(lows) if lows else min(0, upper) if upper is not None else 0
    elif "minimum" in schema and schema["minimum"] >= schema.get("exclusiveMinimum", -math.inf) + 1e-12:
        value = schema["minimum"]
    elif "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"]
        value = (low + upper) / 2 if upper is not None else low + 1
    else:
        value = min(0, upper) if upper is not None else 0
    if variant and (upper is None or value + variant <= upper):
        value += variant
    multiple = schema.get("multipleOf")
    if multiple:
        value = math.ceil(value / multiple) * multiple
    return int(value) if integer else value


def _upper(schema: dict, integer: bool) -> float | None:
    """The greatest value allowed (for an open bound: the bound less one, or for a number the
    bound itself, as `_number` only uses it to stay below), None without one."""
    uppers = []
    if "maximum" in schema:
        uppers.append(math.floor(schema["maximum"]) if integer else schema["maximum"])
    if "exclusiveMaximum" in schema:
        bound = schema["exclusiveMaximum"]
        uppers.append(math.ceil(bound) - 1 if integer else bound - 1e-9)
    return min(uppers) if uppers else None


def schema_of_request(request: dict) -> Any:
    """The JSON Schema a chat-completion request asks its answer to follow: the named (or first)
    tool's ``function.parameters``, else ``response_format.json_schema.schema``, else the first
    JSON object with ``properties`` written in a message (instructor's JSON modes); None if none."""
    tools = request.get("tools") or []
    if tools:
        wanted = ((request.get("tool_choice") or {}) if isinstance(request.get("tool_choice"), dict) else {})
        name = (wanted.get("function") or {}).get("name")
        chosen = next((t for t in tools if t.get("function", {}).get("name") == name), tools[0])
        return chosen.get("function", {}).get("parameters", {})
    response_format = request.get("response_format") or {}
    if isinstance(response_format.get("json_schema"), dict):
        return response_format["json_schema"].get("schema", {})
    for message in request.get("messages", []):
        found = _schema_in_text(message.get("content"))
        if found is not None:
            return found
    return None


def _schema_in_text(content: Any) -> Any:
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str):
        return None
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", content):
        try:
            value, _ = decoder.raw_decode(content, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "properties" in value:
            return value
    return None


def schema_reply(request: dict) -> Any:
    """A `FakeOpenAIServer` reply: `answer_for` the schema the request asks for
    (`schema_of_request`); a request with no schema gets the text ``"ok"``."""
    schema = schema_of_request(request)
    return "ok" if schema is None else answer_for(schema)

"""A rule function with what it declares: its arguments and its result, as JSON Schemas.

`RuleFunction` wraps a plain Python function. Its argument schema names the keyword arguments a
spec's ``args`` may give (required = the function's parameters without a default) and the
values each accepts; its result schema says what it returns, so the compiler knows the keys of a
rule stage's result (``analyze.ratoi`` is a load-time error) and `scorespec list --functions`
can publish both. Calling it checks the arguments against their schemas and the returned value
against the result schema: a wrong value fails the item with a clear message, never a score.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.schemas import OptionValidator, answer_keys, schema_error

_MESSAGE_CHARS = 300  # a schema problem quoting a 1 MB value is cut to this


def _short(text: str) -> str:
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 1] + "…"


@dataclass(frozen=True, eq=False)
class RuleFunction:
    """A registered rule function: `fn` with its declared arguments and result.

    name: the name specs call it by. args: argument name → JSON Schema of its value (``{}``
    accepts anything). required: the arguments without a default. defaults: the defaults of the
    others, as the signature gives them. open_args: the function also takes names it does not
    declare (``**kwargs``): no unknown-argument check for it. result: the JSON Schema of the
    returned value. summary: one line saying what it computes. limit: its size limit in words
    (past it the call raises `ValueError`).
    """

    name: str
    fn: Callable[..., Any]
    args: Mapping[str, Mapping[str, Any]]
    required: frozenset[str]
    defaults: Mapping[str, Any]
    result: Mapping[str, Any]
    summary: str = ""
    limit: str = ""
    open_args: bool = False
    _validators: dict[str, OptionValidator] = field(default_factory=dict, repr=False)

    @property
    def result_keys(self) -> frozenset[str] | None:
        """The keys the result is known to have (its schema's closed `properties`); None when
        the result is not an object with declared keys."""
        return answer_keys(self.result) if self.result.get("type") == "object" else None

    def args_schema(self) -> dict[str, Any]:
        """The arguments as one JSON Schema of an object (what `scorespec list --functions --json`
        publishes)."""
        properties = {name: {**schema, **({"default": self.defaults[name]} if name in self.defaults else {})}
                      for name, schema in self.args.items()}
        return {"type": "object", "properties": properties, "required": sorted(self.required),
                "additionalProperties": self.open_args}

    def signature(self) -> str:
        """``name(reference: string, candidate: string, ignore_case: boolean = true)``."""
        parts = []
        for name, schema in self.args.items():
            text = f"{name}: {_type_words(schema)}"
            if name in self.defaults:
                text += f" = {json.dumps(self.defaults[name], ensure_ascii=False)}"
            parts.append(text)
        if self.open_args:
            parts.append("**more")
        return f"{self.name}({', '.join(parts)})"

    def result_words(self) -> str:
        """``{similarity: number, shared: integer}``, or the result's type when it has no keys."""
        props = self.result.get("properties")
        if self.result.get("type") == "object" and isinstance(props, Mapping):
            return "{" + ", ".join(f"{key}: {_type_words(schema)}" for key, schema in props.items()) + "}"
        return _type_words(self.result)

    def _validator(self, key: str, schema: Mapping[str, Any]) -> OptionValidator:
        found = self._validators.get(key)
        if found is None:
            found = self._validators[key] = OptionValidator(dict(schema))
        return found

    def __call__(self, **kwargs: Any) -> Any:
        """Call the function with `kwargs`, checked against the declared arguments; returns its
        result, checked against the result schema.

        Raises `TypeError` for an unknown or missing argument or a value its schema refuses,
        `ValueError` when the function returns what its result schema does not allow, and
        whatever the function raises (`ValueError` past its size limit)."""
        for name, value in kwargs.items():
            schema = self.args.get(name)
            if schema is None:
                if self.open_args:
                    continue
                raise TypeError(f"{self.name} has no argument {name!r} (it takes {', '.join(self.args)})")
            if schema:
                problem = self._validator("arg:" + name, schema).error(value)
                if problem is not None:
                    raise TypeError(f"argument {name!r}: {_short(problem)}")
        missing = sorted(self.required - kwargs.keys())
        if missing:
            raise TypeError(f"{self.name} needs the argument(s) {', '.join(missing)}")
        value = self.fn(**kwargs)
        problem = self._validator("result", self.result).error(value)
        if problem is not None:
            raise ValueError(f"{self.name} returned a result its declared schema does not allow: {_short(problem)}")
        return value


def _type_words(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(map(str, kind))
    if kind == "array" and isinstance(schema.get("items"), Mapping) and schema["items"].get("type"):
        return f"array of {_type_words(schema['items'])}"
    if kind:
        return str(kind)
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    return "any"


def _first_sentence(doc: str) -> str:
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[:end + 1]


def rule_function(fn: Callable[..., Any] | None = None, *, result: Mapping[str, Any],
                  args: Mapping[str, Mapping[str, Any]] | None = None, name: str | None = None,
                  summary: str | None = None, limit: str = "") -> Any:
    """Declare `fn` a rule function (usable as a decorator: ``@rule_function(result={...})``).

    result: the JSON Schema of what `fn` returns (an object schema whose closed `properties`
    let the compiler check every key a spec reads). args: a JSON Schema per keyword argument;
    names must be parameters of `fn`, and a parameter not named gets ``{}`` (any value). The
    signature decides which arguments are required (no default) and the defaults. name: the
    name specs call it by (default `fn.__name__`). summary: one line (default the docstring's
    first line). limit: the size limit, in words.

    Returns a `RuleFunction`. Raises `ValueError` when a schema is not valid JSON Schema or
    `args` names a parameter `fn` does not have.
    """

    def declare(target: Callable[..., Any]) -> RuleFunction:
        title = name or getattr(target, "__name__", "")
        declared = dict(args or {})
        params = inspect.signature(target).parameters.values()
        open_args = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        named = [p for p in params if p.kind in keyword]
        unknown = sorted(declared.keys() - {p.name for p in named})
        if unknown and not open_args:
            raise ValueError(f"rule function {title!r} declares argument(s) it does not take: {', '.join(unknown)}")
        for key, schema in [*((f"argument {k!r}", v) for k, v in declared.items()), ("result", result)]:
            problem = schema_error(dict(schema))
            if problem is not None:
                raise ValueError(f"rule function {title!r}: the {key} schema is not valid JSON Schema: "
                                 f"{problem.message}")
        ordered = {p.name: declared.get(p.name, {}) for p in named}
        ordered.update({k: v for k, v in declared.items() if k not in ordered})
        doc = inspect.getdoc(target) or ""
        return RuleFunction(
            name=title, fn=target, args=ordered,
            required=frozenset(p.name for p in named if p.default is inspect.Parameter.empty),
            defaults={p.name: p.default for p in named if p.default is not inspect.Parameter.empty},
            result=dict(result), summary=summary if summary is not None else _first_sentence(doc),
            limit=limit, open_args=open_args,
        )

    return declare(fn) if fn is not None else declare


def check_length(function: str, argument: str, value: str | list, limit: int, unit: str = "characters") -> None:
    """Raise `ValueError` naming `function`, `argument` and both sizes when `value` is longer
    than `limit` (its characters, or its items for a list): a rule function's size limit."""
    if len(value) > limit:
        raise ValueError(f"{argument} has {len(value):,} {unit}: {function} takes at most {limit:,} (its size limit)")


__all__ = ["RuleFunction", "check_length", "rule_function"]

"""What a judge's answer must satisfy, as a value: its JSON Schema, normalisation and the checks.

A prompt stage's `JudgeCall` carries an `AnswerContract`. Every judge validates each answer it
gets through `contract.validate(data)`, which returns the normalised answer or raises
`AnswerInvalid`: the message is what the judge is told on re-ask, and `check` names the stage
check that failed (None when the schema failed: the checks run only on answers the schema
accepts). When the re-asks run out, the judge ends the call with `no_valid_answer`, which decides
from the last `AnswerInvalid` whether the item fails with kind ``check`` (the last answer matched
the schema and a check still failed) or ``judge`` (the schema's error named).

`written_answer` takes an answer out of an OpenAI-style completion as the judge wrote it (one
tool call of the answer's function, or the message's whole content), for `AnswerContract.read`.

A stage may keep the first items of a list its judge makes too long (`AnswerContract.keep_first`,
the spec's ``keep_first:``): such a list past its schema's ``maxItems`` is no reason to ask again.
The schema and the checks judge the answer with the list cut to its first ``maxItems`` (`kept`);
`validate` returns the answer with the list as the judge wrote it, so every judge, and the cache
that stores the answer, keeps how many items were listed, and the interpreter cuts it (`kept`),
counting them for the stage's record and reason.

An answer written as text (a tool call's arguments, a message's content, fenced or not) is read by
`AnswerContract.read` in every mode and by every judge: control characters inside its strings are
text, and two different objects that both fit the schema make it ambiguous, asked again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.answer_schema import AnswerSchema
from ..core.errors import ScorerRunError


@dataclass(frozen=True)
class FailedCheck:
    """A stage check that an answer failed: `source` is its expression as the spec wrote it,
    `message` what the judge is told."""

    source: str
    message: str


class AnswerInvalid(ValueError):
    """An answer failed the schema or a check. `str(exc)` is told to the judge on re-ask;
    `check` is the failed check, if any (a schema failure alone has none)."""

    def __init__(self, message: str, check: FailedCheck | None = None):
        super().__init__(message)
        self.check = check


# a check: a compiled expression over the namespace plus `answer` (it has `.source`), and the
# message the judge is told when it is false
Check = tuple[Callable[[Mapping[str, Any]], Any], str]


@dataclass(frozen=True, eq=False)
class AnswerContract:
    """What an answer to one call must satisfy.

    schema: the per-item JSON Schema of the answer (an object schema, checked at load).
    checks: ``(expression, message)`` pairs; an expression sees `namespace` plus ``answer``.
    namespace: the names the checks see (the item's run fields, options, earlier stages).
    compiled: what is derived from `schema` (validator, label fields, the schema as sent and its
    canonical JSON: `engine.core.answer_schema.AnswerSchema`), the stage plan's own object for a
    schema known at load; None: built here from `schema` (a contract made by hand, or a schema
    computed per item), its parts then derived on first use.
    keep_first: top-level list fields of the answer (properties of type array with ``maxItems``,
    checked at load) whose first ``maxItems`` items are kept when the judge lists more, instead of
    asking again (`kept`).
    """

    schema: Mapping[str, Any]
    checks: Sequence[Check] = ()
    namespace: Mapping[str, Any] = field(default_factory=dict)
    compiled: AnswerSchema | None = None
    keep_first: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.compiled is None:
            object.__setattr__(self, "compiled", AnswerSchema(self.schema))
        elif self.compiled.schema is not self.schema:
            raise ValueError("AnswerContract: compiled is another schema's")

    @classmethod
    def of(cls, compiled: AnswerSchema, checks: Sequence[Check] = (),
           namespace: Mapping[str, Any] | None = None, keep_first: tuple[str, ...] = ()) -> "AnswerContract":
        """The contract for an answer to `compiled`'s schema (a stage plan's `AnswerSchema`)."""
        return cls(compiled.schema, checks, {} if namespace is None else namespace, compiled, tuple(keep_first))

    def validate(self, data: Any) -> Any:
        """The answer normalised (`normalize_answer`) when it matches the schema and passes every
        check; else raises `AnswerInvalid`: naming the first three schema errors (no check: the
        checks run only on an answer the schema accepts, so they never read what the schema
        refused), or the first failed check. The schema and the checks see the `keep_first` lists
        cut to their first ``maxItems`` (`kept`); the answer returned holds them as the judge
        wrote them."""
        data = normalize_answer(data, self.schema)
        judged = self.kept(data)[0] if self.keep_first else data
        assert self.compiled is not None
        validator = self.compiled.validator
        if not validator.is_valid(judged):
            raise AnswerInvalid(schema_message(list(validator.iter_errors(judged))))
        check = self.failed_check(judged) if self.checks else None
        if check is not None:
            raise AnswerInvalid(check.message, check)
        return data

    def validate_text(self, text: str) -> Any:
        """The answer written as `text` (`read`), validated (`validate`); raises `AnswerInvalid`
        for text that holds no answer, an ambiguous one, or one that fails."""
        return self.validate(self.read(text))

    def read(self, text: str) -> Any:
        """The JSON value an answer's `text` holds: the whole text when it is one JSON value,
        else the one JSON object written in it (inside a Markdown fence or among words). Control
        characters inside strings (a raw line break or tab) are read as the characters they are,
        fenced or not. Of several objects in the text, those the schema accepts must agree (equal
        once normalised), else the answer is ambiguous: an object quoted from the output under
        test would otherwise decide, first or last. When none fits the schema the last is
        returned, to be refused with its schema errors. Raises `AnswerInvalid` for text holding
        no JSON object, and for an ambiguous one."""
        objects = json_objects(text)
        if objects is None:
            raise AnswerInvalid("the answer is not JSON: answer with one JSON object matching the required schema")
        if len(objects) == 1:
            return objects[0]
        fitting: list[Any] = []
        for value in objects:
            judged = normalize_answer(value, self.schema)
            judged = self.kept(judged)[0] if self.keep_first else judged
            assert self.compiled is not None
            if self.compiled.validator.is_valid(judged) and all(judged != other for other in fitting):
                fitting.append(judged)
        if len(fitting) > 1:
            raise AnswerInvalid(f"the answer holds {len(fitting)} different JSON objects that each match the "
                                "schema, so it is ambiguous: answer with exactly one JSON object")
        return fitting[0] if fitting else objects[-1]

    def kept(self, data: Any) -> tuple[Any, dict[str, int]]:
        """`data` with each `keep_first` list longer than its schema's ``maxItems`` cut to its
        first ``maxItems`` items (a new object; `data` is not changed), and how many items each
        `keep_first` list of `data` holds, by field (a field that is no list is left out). `data`
        itself when nothing is cut."""
        if not self.keep_first or not isinstance(data, dict):
            return data, {}
        properties = self.schema.get("properties") or {}
        listed: dict[str, int] = {}
        cut: dict[str, Any] | None = None
        for name in self.keep_first:
            value = data.get(name)
            if not isinstance(value, list):
                continue
            listed[name] = len(value)
            bound = (properties.get(name) or {}).get("maxItems")
            if isinstance(bound, int) and not isinstance(bound, bool) and len(value) > bound:
                cut = dict(data) if cut is None else cut
                cut[name] = value[:bound]
        return (data if cut is None else cut), listed

    def failed_check(self, data: Any) -> FailedCheck | None:
        """The first check `data` fails (a check that raises fails, its error added to the
        message), or None."""
        scope = {**self.namespace, "answer": data}
        for expression, message in self.checks:
            try:
                ok = expression(scope)
            except Exception as exc:
                ok, message = False, f"{message} ({type(exc).__name__}: {exc})"
            if not ok:
                return FailedCheck(getattr(expression, "source", str(expression)), message)
        return None


_DECODER = json.JSONDecoder(strict=False)  # strict=False: control characters inside strings are text
MAX_SCANNED = 16
"""How many times over its length an answer's text may be decoded in search of its objects (a
text of unclosed braces would otherwise cost its length squared)."""


def json_objects(text: str) -> list[Any] | None:
    """The JSON an answer's text holds: ``[value]`` when the whole text (spaces aside) is one JSON
    value; else every JSON object written at the top level of the text, in order (in a Markdown
    fence or not; an object inside another is part of it); None when there is none. Control
    characters inside strings are accepted; a value nested too deeply to decode counts as none."""
    try:
        return [_DECODER.decode(text.strip())]
    except (ValueError, RecursionError):
        pass
    found: list[Any] = []
    budget = MAX_SCANNED * len(text)
    i = text.find("{")
    while 0 <= i and budget > 0:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            budget -= len(text) - i
            i = text.find("{", i + 1)
            continue
        budget -= end - i
        if isinstance(value, dict):
            found.append(value)
        i = text.find("{", end)
    return found or None


class WrittenAnswer:
    """An answer as the judge wrote it: its `text` (a tool call's arguments, or the message's
    whole content, a Markdown fence and words around the JSON included), and the `problem` that
    refuses it before it is read (None when there is none)."""

    __slots__ = ("text", "problem")

    def __init__(self, text: str, problem: str | None = None):
        self.text = text
        self.problem = problem

    def __repr__(self) -> str:  # pydantic's error text shows the input as this
        return repr(self.text)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def written_answer(completion: Any, given: Any, tool: str | None) -> WrittenAnswer:
    """The answer of an OpenAI-style `completion` as written: the arguments of its one call of the
    function `tool` (another function's name, or more than one call, is a problem: the judge is
    asked again), else its message's whole content; `given` (the text instructor took out of it)
    when the completion has neither (another provider's)."""
    text = given.decode("utf-8", errors="replace") if isinstance(given, (bytes, bytearray)) else as_text(given) or ""
    try:
        message = _field(_field(completion, "choices")[0], "message")
    except (TypeError, IndexError, KeyError):
        return WrittenAnswer(text)
    calls = _field(message, "tool_calls") or []
    if calls:
        names = [_field(_field(call, "function"), "name") for call in calls]
        if len(calls) > 1:
            return WrittenAnswer(text, f"the answer made {len(calls)} tool calls ({', '.join(map(repr, names))}): "
                                 f"answer with exactly one call of the function {tool!r}")
        if tool is not None and names[0] != tool:
            return WrittenAnswer(text, f"the answer called the function {names[0]!r}: answer by calling {tool!r}")
        return WrittenAnswer(text)
    content = _field(message, "content")
    return WrittenAnswer(content if isinstance(content, str) else text)


def as_text(value: Any) -> str | None:
    """An answer's raw text: a string as it is; any other value a provider sent where text goes
    (an object as the message content) as its JSON text; None for none."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def no_valid_answer(stage: str, attempts: int, last_error: str, last_invalid: AnswerInvalid | None, *,
                    raw_answer: str | None = None, usage: Any = None) -> ScorerRunError:
    """The failure of a call whose answers were all refused: kind ``check`` when the last answer
    validated (`last_invalid`) failed a check, else ``judge`` with `last_error`, the last
    refusal in one line. `attempts` counts the calls made."""
    check = last_invalid.check if last_invalid is not None else None
    if check is not None:
        return ScorerRunError("check", f"check {check.source!r} still failed after {attempts} attempt(s): "
                              f"{check.message}", stage=stage, raw_answer=raw_answer, attempts=attempts, usage=usage)
    return ScorerRunError("judge", f"no valid answer after {attempts} attempt(s): {last_error}", stage=stage,
                          raw_answer=raw_answer, attempts=attempts, usage=usage)


def normalize_answer(data: Any, schema: Mapping[str, Any]) -> Any:
    """Make verdict-like strings canonical: a string whose schema has an `enum` of strings is
    stripped and matched case-insensitively to the enum's own spelling (case C02: " Yes" →
    "yes"). Walks object properties and array items; other values are returned unchanged."""
    if isinstance(data, str):
        enum = schema.get("enum")
        if enum:
            key = data.strip().casefold()
            for option in enum:
                if isinstance(option, str) and option.casefold() == key:
                    return option
        return data
    if isinstance(data, dict):
        props = schema.get("properties") or {}
        return {k: normalize_answer(v, props[k]) if k in props else v for k, v in data.items()}
    if isinstance(data, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [normalize_answer(v, items) for v in data]
    return data


def answer_validator(schema: Mapping[str, Any]) -> Any:
    """A compiled validator (jsonschema-rs) for an answer schema, built anew: a stage's own is on
    its plan (`engine.spec.plans.PromptStagePlan.answer`), a call's on its contract."""
    return AnswerSchema(schema).validator


def schema_message(errors: list[Any]) -> str:
    """The first three validation errors, told so a judge can correct its answer."""
    parts = []
    for error in errors[:3]:
        where = "/".join(str(p) for p in error.instance_path) or "the answer"
        kind = type(error.kind).__name__
        if kind in ("MinItems", "MaxItems") and isinstance(error.instance, list):
            need = f"at least {error.kind.limit} are required" if kind == "MinItems" \
                else f"at most {error.kind.limit} are allowed"
            text = f"{where} has {len(error.instance)} items; {need}"
        elif kind == "Required":  # worded as JSON Schema's own validators do: 'claims' is …
            text = f"at {where}: {error.kind.property!r} is a required property"[:220]
        else:
            text = f"at {where}: {error.message[:200]}"
        parts.append(text)
    return "the answer does not match the required JSON schema: " + "; ".join(parts)


__all__ = ["AnswerContract", "AnswerInvalid", "FailedCheck", "WrittenAnswer", "as_text", "json_objects",
           "no_valid_answer", "normalize_answer", "answer_validator", "schema_message", "written_answer"]

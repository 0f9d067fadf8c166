"""The run fields: what one item gives a scorer, declared once.

An item may give

- ``input``: a text, or chat messages (`engine.core.messages`) — the conversation so far;
- ``output``: a text, or chat messages — what the system answered (its assistant turns, and
  the tool calls and results among them);
- ``ground_truth``: the expected answer, read as text (given as messages, one message or content
  parts: their text; a number or an object: its JSON text);
- ``context``: passages (a list of texts; one text is a list of one);
- ``system``: the system prompt (a text, or a list of parts);
- ``tool_calls``: the calls the system made, in order (`engine.core.messages.read_tool_calls`);
- ``output_a`` and ``output_b``: a pair's two responses, for a pairwise stage (each in any form
  ``output`` takes, or a list of tool calls; `engine.core.responses`).

Expressions read them as ``run.input`` … (as given: a list of messages stays a list; but
``run.ground_truth`` is always its text), and the
names derived from them: ``run.input_text`` (the last user message's text; a text input as it
is), ``run.output_text`` (the assistant messages' texts joined by a blank line; a text output as
it is), ``run.input_messages`` / ``run.output_messages`` (normalised messages: a text becomes
one user / assistant message), ``run.input_conversation`` (what the judge reads as the input:
the last user message, preceded, when the conversation has earlier turns, by those turns and a line
marking the last message as the request answered: `engine.core.messages.conversation_text`; a
text input as it is), and ``run.given`` (the fields the item has). ``run.system``
falls back to the input's system messages, ``run.tool_calls`` to the calls in the output's
messages; both count as given then (an output of messages that calls no tool gives ``[]``).

A field the item does not give reads as empty (``""``, ``[]`` for context, tool calls and
messages). A spec may declare fields of its own (`engine.field_schemas`); they are ``run.NAME``
too.

``run.language`` is the item's language, an ISO 639-1 code (``"en"``, ``"fr"``, …), and
``run.language_name`` its English name (``"French"``): the item's own ``language`` field, else the
run's setting, else detected from the output text, then the input text (`engine.core.language`).
They are reserved like the run fields (a spec cannot declare a field of either name). The
interpreter settles the language only for a spec that reads one of them (`LANGUAGE_KEYS`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from .messages import (
    MessageError,
    assistant_text,
    content_text,
    conversation_text,
    is_message,
    is_messages,
    is_parts,
    last_user_text,
    read_messages,
    read_tool_calls,
    system_text,
    text_of,
    tool_calls_of,
)

RunField = Literal["input", "output", "ground_truth", "context", "system", "tool_calls", "output_a", "output_b"]
RUN_FIELDS: tuple[RunField, ...] = ("input", "output", "ground_truth", "context", "system", "tool_calls",
                                    "output_a", "output_b")
"""The fields an item may give (`engine.run.datasets` reads them, the CLI and `Scorer.run` take them)."""
PAIR_FIELDS: tuple[RunField, ...] = ("output_a", "output_b")
"""A pair's two responses (a pairwise stage's: `engine.core.responses`)."""
ITEM_FIELDS: tuple[RunField, ...] = RUN_FIELDS[:4]
"""The fields every dataset item holds (None when not given); the others only when given."""
ANSWER_FIELDS: frozenset[str] = frozenset({"output", "tool_calls", "output_a", "output_b"})
"""What the system produced: empty is a real answer, judged as one, even when required."""
LOOKED_FOR = "_looked_for"
"""An item's key holding, for a run field it does not give, where its reader looked (``{"output":
"the trace's root span has no output.value …"}``): the text a missing required field's error
gives instead of "the item has none" (`empty_reason`). Trace readers (`engine.traces`) set it."""
DERIVED_NAMES: tuple[str, ...] = ("input_text", "output_text", "input_messages", "output_messages",
                                   "input_conversation")
LANGUAGE_KEYS: tuple[str, ...] = ("language", "language_name")
"""The item's language (an ISO 639-1 code) and its English name, keys of `run` the engine sets."""
RUN_NAMES: frozenset[str] = frozenset(RUN_FIELDS) | frozenset(DERIVED_NAMES) | {"given"} | frozenset(LANGUAGE_KEYS)
"""The keys of `run` in expressions (plus the fields a spec declares: `run_keys`)."""
FIELDS_READ: dict[str, tuple[str, ...]] = {
    "input": ("input",), "input_text": ("input",), "input_messages": ("input",), "input_conversation": ("input",),
    "output": ("output",), "output_text": ("output",), "output_messages": ("output",),
    "ground_truth": ("ground_truth",), "context": ("context",),
    "system": ("system", "input"), "tool_calls": ("tool_calls", "output"), "given": (),
    "language": ("language",), "language_name": ("language",),
    "output_a": ("output_a",), "output_b": ("output_b",),
}
"""The fields each key of `run` reads: a derived name its field; ``system`` and ``tool_calls``
also the field they fall back to (the input's system messages, the output's tool calls);
``given`` none (``'NAME' in run.given`` reads NAME: `engine.spec.field_reads`); the language's
keys read ``language`` (whether the spec reads the language). A field a spec declares under a
name of its own reads itself."""


def run_keys(declared: Any = ()) -> frozenset[str]:
    """The keys of `run` for a spec declaring the fields `declared` (names)."""
    return RUN_NAMES | frozenset(declared)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def coerce_context(value: Any, *, from_text: bool = False) -> list[str] | None:
    """Context as a list of passages (texts), or None when not given (None, NaN, or with
    `from_text` a blank text). A text is one passage; with `from_text` (a CSV cell) a text
    holding a JSON array of strings is that list. In a list, a text stays as it is, a missing
    value (None, NaN) becomes ``""``, a chat message or a text part (``{"type": "text", "text": …}``)
its text, and any other value (an object, a number) its JSON text:
    ``[{"doc": "Paris"}]`` → ``['{"doc": "Paris"}']``. An object on its own is one passage, its
    JSON text; an array (numpy, a DataFrame cell) is read as a list.

    Raises `engine.core.messages.MessageError` for a passage nested too deeply (or circular)
    to write as JSON."""
    if _missing(value):
        return None
    if isinstance(value, str):
        if from_text:
            text = value.strip()
            if not text:
                return None
            if text.startswith("["):
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = None
                if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed):
                    return parsed
        return [value]
    if isinstance(value, (list, tuple)):
        return [_passage(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays in DataFrame cells
        return coerce_context(value.tolist())
    if isinstance(value, Mapping):
        return [_passage(value)]
    return [str(value)]


def _passage(value: Any) -> str:
    """One passage as text: a text as it is, a missing value "", a chat message or a text part
    its text, any other value its JSON text."""
    if _missing(value):
        return ""
    if isinstance(value, str):
        return value
    if is_message(value):
        return text_of(value, "context") or ""
    if isinstance(value, Mapping) and value.get("type") == "text" and isinstance(value.get("text"), str):
        return value["text"]
    return _passage_json(value)


def _passage_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError) as exc:
        raise MessageError(f"context: a passage cannot be read as text ({type(exc).__name__})") from None


def as_text(value: Any, field: str = "the value") -> str:
    """A value that is not messages, as text: None → "", a text as it is, a list or object as
    JSON, anything else as `str` gives it (what ``{{ value }}`` renders). Raises `MessageError`
    for a value nested too deeply (or circular) to write."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        if isinstance(value, (list, tuple, Mapping)):
            return json.dumps(value, ensure_ascii=False, default=str)
        return str(value)
    except (RecursionError, ValueError) as exc:
        raise MessageError(f"{field}: cannot be read as text ({type(exc).__name__})") from None


def ground_truth_text(value: Any) -> str:
    """The ground truth as text: a text as it is; messages, one message or content parts as their
    text (`engine.core.messages.text_of`); None as ""; any other value as `as_text` writes it (a
    number as written, an object as JSON). Raises `MessageError` naming the place."""
    found = text_of(value, "ground_truth")
    return found if found is not None else as_text(value, "ground_truth")


def _side(value: Any, field: str, role: str) -> tuple[str, list[dict[str, Any]], bool]:
    """(text, normalised messages, whether messages were given) of an input or output: messages,
    one message, or content parts (one message of `role` holding them) are read as messages."""
    if is_message(value):
        value = [value]
    elif is_parts(value):
        value = [{"role": role, "content": value}]
    if is_messages(value):
        messages = read_messages(value, field)
        text = last_user_text(messages) if role == "user" else assistant_text(messages)
        return text, messages, True
    if value is None:
        return "", [], False
    text = as_text(value, field)
    return text, [{"role": role, "content": value, "text": text}], False


def run_namespace(values: Mapping[str, Any], declared: Mapping[str, Any] | None = None,
                  declared_given: Iterable[str] = (), language: tuple[str, str] = ("", "")) -> dict[str, Any]:
    """`run` as expressions see it, from the given fields (name → value; None = not given) and
    the values of the spec's declared fields (resolved beforehand: `engine.field_schemas`;
    `declared_given`: those the item itself gives, listed in ``run.given``). `language`: the item's
    (code, English name), ``("", "")`` when the spec does not read it.

    Raises `engine.core.messages.MessageError` for messages or tool calls that cannot be read (the
    message names the field and the place in it)."""
    input_text, input_messages, input_is_messages = _side(values.get("input"), "input", "user")
    output_text, output_messages, output_is_messages = _side(values.get("output"), "output", "assistant")
    run: dict[str, Any] = {name: "" if values.get(name) is None else values[name] for name in ITEM_FIELDS}
    run["ground_truth"] = ground_truth_text(values.get("ground_truth"))
    run["context"] = coerce_context(values.get("context")) or []
    given = {name for name in RUN_FIELDS if values.get(name) is not None}

    system = values.get("system")
    if system is not None:
        run["system"] = content_text(system, "system") if not isinstance(system, str) else system
    else:
        found = system_text(input_messages)
        run["system"] = found or ""
        if found is not None:
            given.add("system")
    if values.get("tool_calls") is not None:
        run["tool_calls"] = read_tool_calls(values["tool_calls"])
    else:
        run["tool_calls"] = tool_calls_of(output_messages) if output_is_messages else []
        if output_is_messages:
            given.add("tool_calls")

    run.update(input_text=input_text, output_text=output_text, input_messages=input_messages,
               output_messages=output_messages,
               input_conversation=conversation_text(input_messages) if input_is_messages else input_text)
    run["language"], run["language_name"] = language
    for name in PAIR_FIELDS:  # a pair's responses, as given (`engine.core.responses` reads them)
        run[name] = "" if values.get(name) is None else values[name]
    for name, value in (declared or {}).items():
        run[name] = value
    run["given"] = sorted(given | set(declared_given))
    return run


def empty_reason(name: str, run: Mapping[str, Any], looked_for: Mapping[str, Any] | None = None) -> str | None:
    """Why a required built-in field does not count as given (None when it does): the item has
    none (or, when `looked_for` — the item's `LOOKED_FOR` — says where its reader looked, that), or — for a field the scorer is given rather than one the system produced
    (`ANSWER_FIELDS`) — it holds no text (case C24: a question given as messages with no text
    fails, never scores as an empty question; a blank ground truth where one is required fails
    too). A ground truth that is not required counts as given even when empty (a spec reads it
    through ``'ground_truth' in run.given``: an empty text can be the expected answer)."""
    if name not in run["given"]:
        where = (looked_for or {}).get(name) if isinstance(looked_for, Mapping) else None
        return where if isinstance(where, str) and where else "the item has none"
    if name in ANSWER_FIELDS:
        return None
    if name == "input":
        if run["input_text"].strip():
            return None
        return "its messages have no user text" if is_messages(run["input"]) else "it is empty"
    if name == "context":
        return None if any(p.strip() for p in run["context"]) else "it has no passage with text"
    return None if as_text(run[name], name).strip() else "it is empty"


__all__ = ["ANSWER_FIELDS", "DERIVED_NAMES", "FIELDS_READ", "ITEM_FIELDS", "LANGUAGE_KEYS", "LOOKED_FOR", "PAIR_FIELDS",
           "RUN_FIELDS", "RUN_NAMES", "RunField",
           "as_text", "coerce_context", "empty_reason", "ground_truth_text", "run_keys", "run_namespace"]

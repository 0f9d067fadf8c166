"""A pair's responses as a pairwise judge reads them.

A pairwise item gives two responses, ``output_a`` and ``output_b``, each in any form ``output``
takes (`engine.core.run_fields`): a text; chat messages, one message or content parts (the
assistant's turns, with the tool calls and results among them); or a flat list of tool calls
(``[{name, arguments, result?, error?}]``, OpenAI-style calls too). `response_text` writes one
as the text a judge is shown: the assistant's text, then one line per tool call
(``[called NAME(ARGUMENTS) -> RESULT]``; ``-> error: …`` for a failed call). Both responses are
written the same way, so neither is favoured by its form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .messages import (
    assistant_text,
    is_message,
    is_messages,
    is_parts,
    read_messages,
    read_tool_calls,
    tool_calls_of,
)
from .run_fields import as_text

__all__ = ["response_text", "tool_call_line"]


def _is_tool_call_list(value: Any) -> bool:
    """Whether `value` is a non-empty list of tool calls (objects with a ``name``, or OpenAI-style
    with a ``function``), not of messages."""
    return (isinstance(value, (list, tuple)) and bool(value)
            and all(isinstance(v, Mapping) and "role" not in v and ("name" in v or "function" in v) for v in value))


def _short(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def tool_call_line(call: Mapping[str, Any]) -> str:
    """One normalised tool call as a line: ``[called NAME(ARGUMENTS) -> RESULT]``, the arguments as
    compact JSON (a text as it is), ``-> error: …`` for a call that failed, no arrow without either."""
    arguments = call.get("arguments")
    shown = "" if arguments in (None, "", {}) else _short(arguments)
    line = f"[called {call.get('name')}({shown})"
    if call.get("error") not in (None, ""):
        line += f" -> error: {_short(call['error'])}"
    elif "result" in call and call["result"] is not None:
        line += f" -> {_short(call['result'])}"
    return line + "]"


def _joined(text: str, calls: Sequence[Mapping[str, Any]]) -> str:
    lines = [tool_call_line(call) for call in calls]
    return "\n".join(part for part in [text.strip(), *lines] if part)


def response_text(value: Any, field: str) -> str:
    """The response `value` (the item's `field`, ``output_a`` or ``output_b``) as the text a
    judge reads (see the module): None → ``""``. Raises `MessageError` naming `field` and the
    place for messages or tool calls that cannot be read."""
    if value is None:
        return ""
    if is_message(value):
        value = [value]
    elif is_parts(value):
        value = [{"role": "assistant", "content": value}]
    if _is_tool_call_list(value):
        return _joined("", read_tool_calls(value, field))
    if is_messages(value):
        messages = read_messages(value, field)
        return _joined(assistant_text(messages), tool_calls_of(messages))
    return as_text(value, field)

"""Chat messages and tool calls read into text and normalised lists.

An item's ``input`` or ``output`` may be a list of chat messages instead of a text. A message
is an object ``{role, content}``; `content` is

- a string;
- a list of *parts*, each an object with a ``type``: a ``{"type": "text", "text": …}`` part is
  text; any other part (an image, audio, a file, …) is kept as given but not read as text;
- an object with a ``parts`` list (the shape Mastra stores messages in), read as that list;
- null (an assistant message that only calls tools).

A message without ``content`` may carry its parts in ``parts`` (the AI SDK's UI messages). A
value is read as messages when it is a list whose first element is an object with a ``role``
(or an empty list); every element must then be a message.

Tool calls are normalised to ``{name, arguments, result?, error?, id?}`` (other keys kept),
from a flat list or from OpenAI-style assistant messages (``tool_calls: [{id, type:
"function", function: {name, arguments}}]``) whose results come in later ``role: tool``
messages (``tool_call_id``, ``content``). Arguments given as a JSON text are parsed (kept as
the text when it is not JSON). Calls and results may also come as content parts (`TOOL_PARTS`):
an assistant's ``{"type": "tool-call", toolCallId, toolName, args | input}``, answered by a later
``{"type": "tool-result", toolCallId, result | output}`` (an ``output`` of ``{type, value}``
is its value; a type starting with ``error``, or ``isError``, makes it the call's error), or one
``{"type": "tool-invocation", toolInvocation: {toolCallId, toolName, args, state, result}}``
carrying both (its result only in state ``result``).

Every reading function raises `MessageError` naming where the value is wrong
(``input[2].content[0]``); nothing here guesses past a malformed value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import UserError

Message = dict[str, Any]
ToolCall = dict[str, Any]

TEXT_PART = "text"
TOOL_PARTS = ("tool-call", "tool-result", "tool-invocation")
"""The types of the content parts that carry tool calls and their results."""
SYSTEM_ROLES = ("system", "developer")


class MessageError(UserError, ValueError):
    """A value that cannot be read as messages or tool calls; the text names the place
    (``input[1].content``) and what is wrong."""


def is_messages(value: Any) -> bool:
    """Whether `value` is to be read as chat messages: a list (or tuple) that is empty or whose
    first element is an object with a ``role``."""
    if not isinstance(value, (list, tuple)):
        return False
    return not value or (isinstance(value[0], Mapping) and "role" in value[0])


def content_text(content: Any, where: str) -> str:
    """The text of a message's content: a string as it is; the ``text`` parts joined by a
    newline (other parts skipped); "" for null. Raises `MessageError` for another shape."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping) and isinstance(content.get("parts"), (list, tuple)):
        return content_text(content["parts"], f"{where}.parts")
    if not isinstance(content, (list, tuple)):
        raise MessageError(f"{where}: content must be a text, a list of parts or null, not {_kind(content)}")
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise MessageError(f"{where}[{i}]: a part must be an object with a 'type' (e.g. "
                               f'{{"type": "text", "text": "…"}}), not {_kind(part)}')
        if part["type"] == TEXT_PART:
            text = part.get("text")
            if not isinstance(text, str):
                raise MessageError(f"{where}[{i}]: a text part's 'text' must be a string, not {_kind(text)}")
            texts.append(text)
    return "\n".join(texts)


def read_messages(value: Any, field: str) -> list[Message]:
    """The messages of `value` (see `is_messages`), each as given plus ``text`` (its
    content's text) and, for a message with tool calls, ``tool_calls`` normalised (its
    ``tool_calls`` list, then the calls of its content parts); a message whose parts hold tool
    results gets ``tool_results``, each ``{id?, result}`` or ``{id?, error}``.

    A role is compared in lower case. Raises `MessageError` naming ``field[i]`` for an element
    that is not ``{role: string, content?}``."""
    messages = []
    for i, message in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(message, Mapping):
            raise MessageError(f"{where}: a message must be an object {{role, content}}, not {_kind(message)}")
        role = message.get("role")
        if not isinstance(role, str) or not role.strip():
            raise MessageError(f"{where}: a message needs a 'role' (user, assistant, system or tool)")
        content = message.get("content")
        if content is None and "parts" in message:
            content, place = message["parts"], f"{where}.parts"
        else:
            place = f"{where}.content"
        text = content_text(content, place)
        read = {**message, "role": role.strip().lower(), "text": text}
        calls = []
        if message.get("tool_calls") is not None:
            calls = read_tool_calls(message["tool_calls"], f"{where}.tool_calls")
        part_calls, results = _tool_parts(content, place)
        if calls or part_calls:
            read["tool_calls"] = calls + part_calls
        if results:
            read["tool_results"] = results
        messages.append(read)
    return messages


def _tool_parts(content: Any, where: str) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The tool calls (normalised) and the results (``{id?, result | error}``) that the parts of
    a message's content carry (`TOOL_PARTS`; the content is already read by `content_text`)."""
    if isinstance(content, Mapping) and isinstance(content.get("parts"), (list, tuple)):
        content, where = content["parts"], f"{where}.parts"
    if not isinstance(content, (list, tuple)):
        return [], []
    calls: list[ToolCall] = []
    results: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        kind = part["type"]
        if kind == "tool-invocation" and isinstance(part.get("toolInvocation"), Mapping):
            invocation = part["toolInvocation"]
            call = _part_call(invocation, f"{where}[{i}].toolInvocation")
            if invocation.get("state") == "result" and "result" in invocation:
                call["result"] = invocation["result"]
            calls.append(call)
        elif kind == "tool-call":
            calls.append(_part_call(part, f"{where}[{i}]"))
        elif kind == "tool-result":
            results.append(_part_outcome(part))
    return calls, results


def _part_call(part: Mapping[str, Any], where: str) -> ToolCall:
    entry = {"name": part.get("toolName"), "arguments": part.get("args", part.get("input"))}
    if part.get("toolCallId") is not None:
        entry["id"] = part["toolCallId"]
    return _tool_call(entry, where)


def _part_outcome(part: Mapping[str, Any]) -> dict[str, Any]:
    """A tool-result part as ``{id?, result}`` or ``{id?, error}``."""
    found: dict[str, Any] = {} if part.get("toolCallId") is None else {"id": part["toolCallId"]}
    value, failed = part.get("result"), bool(part.get("isError"))
    output = part.get("output")
    if "result" not in part and isinstance(output, Mapping) and "type" in output and "value" in output:
        value, failed = output["value"], failed or str(output["type"]).startswith("error")
    elif "result" not in part:
        value = output
    found["error" if failed else "result"] = value
    return found


def last_user_text(messages: Sequence[Message]) -> str:
    """The text of the last ``user`` message ("" when there is none)."""
    return next((m["text"] for m in reversed(messages) if m["role"] == "user"), "")


def assistant_text(messages: Sequence[Message]) -> str:
    """The texts of the ``assistant`` messages that have one, in order, joined by a blank line."""
    return "\n\n".join(m["text"] for m in messages if m["role"] == "assistant" and m["text"])


def system_text(messages: Sequence[Message]) -> str | None:
    """The texts of the ``system`` (or ``developer``) messages joined by a blank line; None when
    there is no such message."""
    found = [m["text"] for m in messages if m["role"] in SYSTEM_ROLES]
    return "\n\n".join(found) if found else None


def tool_calls_of(messages: Sequence[Message]) -> list[ToolCall]:
    """The tool calls the assistant messages make, in order, each with the ``result`` of the
    ``tool`` message answering it (its text; its tool-result parts when it has any: a result or
    an error each): the one whose ``tool_call_id`` is the call's ``id``, else (no id on either
    side) the next call still without a result."""
    calls: list[ToolCall] = []
    for message in messages:
        if message["role"] == "assistant":
            calls.extend(dict(call) for call in message.get("tool_calls") or ())
        outcomes = message.get("tool_results") or ()
        if not outcomes and message["role"] == "tool":
            outcomes = ({"id": message.get("tool_call_id"), "result": message["text"]},)
        for outcome in outcomes:
            wanted = outcome.get("id")
            target = next((c for c in calls if wanted is not None and c.get("id") == wanted), None)
            if target is None:
                target = next((c for c in calls if "result" not in c and "error" not in c), None)
            if target is not None:
                target.update((k, v) for k, v in outcome.items() if k != "id")
    return calls


def read_tool_calls(value: Any, field: str = "tool_calls") -> list[ToolCall]:
    """A flat list of tool calls, normalised: each ``{name, arguments, …}`` (or OpenAI-style
    ``{id, type, function: {name, arguments}}``) becomes ``{name, arguments, result?, error?,
    id?}`` with its other keys kept; a JSON text is read as the list first (a CSV cell).
    Raises `MessageError` naming ``field[i]`` for an entry without a name."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise MessageError(f"{field}: expected a list of tool calls, got a text that is not JSON") from None
    if not isinstance(value, (list, tuple)):
        raise MessageError(f"{field}: expected a list of tool calls {{name, arguments, result?, error?}}, "
                           f"not {_kind(value)}")
    return [_tool_call(entry, f"{field}[{i}]") for i, entry in enumerate(value)]


def _tool_call(entry: Any, where: str) -> ToolCall:
    if not isinstance(entry, Mapping):
        raise MessageError(f"{where}: a tool call must be an object {{name, arguments, result?, error?}}, "
                           f"not {_kind(entry)}")
    call = dict(entry)
    function = entry.get("function")
    if isinstance(function, Mapping):  # OpenAI: {id, type: "function", function: {name, arguments}}
        del call["function"]
        if call.get("type") == "function":
            del call["type"]
        call["name"] = function.get("name")
        call["arguments"] = function.get("arguments")
    name = call.get("name")
    if not isinstance(name, str) or not name.strip():
        raise MessageError(f"{where}: a tool call needs a 'name' (a non-empty string)")
    call["arguments"] = _arguments(call.get("arguments"))
    return call


def _arguments(value: Any) -> Any:
    """A call's arguments: {} when absent, a JSON text parsed, anything else as given."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            return value
    return value


def _kind(value: Any) -> str:
    return {list: "a list", tuple: "a list", str: "a text", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), "an object" if isinstance(value, Mapping) else type(value).__name__)


__all__ = ["TOOL_PARTS", "Message", "MessageError", "ToolCall", "assistant_text", "content_text", "is_messages",
           "last_user_text", "read_messages", "read_tool_calls", "system_text", "tool_calls_of"]

"""One item from the command line (``run`` and ``render``): the text flags, a conversation file,
a tool-calls file and ``--field NAME=VALUE``.

- ``--messages-file FILE``: a JSON array of chat messages, the whole conversation. The messages
  up to and including the last user message are the input, the ones after it (the assistant's
  turns, its tool calls and their results) the output.
- ``--tool-calls-file FILE``: a JSON array of tool calls, ``{name, arguments, result?, error?}``
  or OpenAI-style ``{id, type, function: {name, arguments}}``.
- ``--field NAME=VALUE``: any run field (``system=@prompt.txt``, ``input=@messages.json``) or a
  field the spec declares (``rubric=@rubric.json``); VALUE is inline, or ``@FILE`` for a file's
  text. A declared field's text is read as JSON where its schema wants something else
  (`engine.interpret.declared_fields`); ``input`` / ``output`` holding a JSON array are messages,
  ``context`` a JSON array of passages; ``tool_calls`` is JSON.

Every problem raises `ValueError` naming the flag; the command prints it and exits 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import did_you_mean
from ..core.messages import is_messages
from ..core.run_fields import RUN_FIELDS

_FLAG = {"input": "--input", "output": "--output", "ground_truth": "--ground-truth", "context": "--context"}


def item_from_flags(declared: Iterable[str], *, output: str | None = None, input: str | None = None,
                    ground_truth: str | None = None, context: list[str] | None = None,
                    messages_file: Path | None = None, tool_calls_file: Path | None = None,
                    fields: Iterable[str] = ()) -> dict[str, Any]:
    """The item's fields by name (`engine.interpret.scorer.Scorer.run`'s keywords) from the flags;
    `declared`: the names of the fields the spec declares. Raises `ValueError`."""
    item: dict[str, Any] = {"output": output, "input": input, "ground_truth": ground_truth,
                            "context": list(context) if context else None}
    source = {name: flag for name, flag in _FLAG.items() if item[name] is not None}  # which flag gave a field
    if messages_file is not None:
        _conversation(item, source, read_json_file(messages_file, "--messages-file"), messages_file)
    if tool_calls_file is not None:
        calls = read_json_file(tool_calls_file, "--tool-calls-file")
        if not isinstance(calls, list):
            raise ValueError(f"--tool-calls-file {tool_calls_file}: expected a JSON array of tool calls "
                             "[{name, arguments, result?, error?}]")
        item["tool_calls"] = calls
        source["tool_calls"] = "--tool-calls-file"
    known = list(RUN_FIELDS) + [name for name in declared if name not in RUN_FIELDS]
    for pair in fields:
        name, sep, raw = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ValueError(f"--field {pair!r}: expected NAME=VALUE or NAME=@FILE (e.g. rubric=@rubric.json)")
        if name not in known:
            hint = did_you_mean(name, known)
            raise ValueError(f"--field {pair!r}: {name!r} is not a field of this scorer ({hint or 'fields: ' + ', '.join(known)})")
        if name in source:
            raise ValueError(f"--field {pair!r}: {name!r} is already given (by {source[name]})")
        source[name] = "--field"
        text = _value_text(raw, pair)
        item[name] = text if name not in RUN_FIELDS else _run_field_value(name, text, pair)
    return item


def read_json_file(path: Path, flag: str) -> Any:
    """The JSON value in `path`; `ValueError` naming `flag` when it is missing or not JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ValueError(f"{flag} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{flag} {path}: cannot read it ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag} {path}:{exc.lineno}: not JSON: {exc.msg} (column {exc.colno})") from None


def _conversation(item: dict[str, Any], source: dict[str, str], messages: Any, path: Path) -> None:
    """Split a conversation at its last user message into the item's input and output."""
    if not isinstance(messages, list) or not messages or not is_messages(messages):
        raise ValueError(f"--messages-file {path}: expected a JSON array of chat messages "
                         '[{"role": "user", "content": "…"}, …]')
    roles = [m.get("role") if isinstance(m, Mapping) else None for m in messages]
    last_user = max((i for i, role in enumerate(roles) if isinstance(role, str) and role.lower() == "user"),
                    default=None)
    if last_user is None:
        raise ValueError(f"--messages-file {path}: no message has role 'user' (the input ends with the last one)")
    sides = {"input": messages[:last_user + 1], "output": messages[last_user + 1:] or None}
    for name, value in sides.items():
        if value is None:
            continue
        if name in source:
            raise ValueError(f"{source[name]} and --messages-file both give the {name}: give one of them")
        item[name] = value
        source[name] = "--messages-file"


def _value_text(raw: str, pair: str) -> str:
    if not raw.startswith("@"):
        return raw
    path = Path(raw[1:])
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ValueError(f"--field {pair!r}: no such file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--field {pair!r}: cannot read {str(path)!r} ({exc})") from None


def _run_field_value(name: str, text: str, pair: str) -> Any:
    """A run field's value from text: messages, passages or tool calls written as JSON."""
    if name == "tool_calls":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--field {pair!r}: tool calls must be a JSON array: {exc.msg}") from None
    if name in ("input", "output", "context") and text.lstrip().startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return text if name != "context" else [text]
        if name == "context" and isinstance(parsed, list):
            return parsed
        if name != "context" and is_messages(parsed) and parsed:
            return parsed
    return [text] if name == "context" else text


__all__ = ["item_from_flags", "read_json_file"]

"""An agent's tool calls as the rule functions read them: their shape, names and failures.

`tool_calls` is a list of the calls in the order they were made, each ``{"name": str,
"arguments": any, "result": any, "error": any}`` (only ``name`` required). A call failed when
its ``error`` is given and not empty (not None, false, ``""``, ``{}`` or ``[]``).
"""

from __future__ import annotations

from typing import Any

from .rule_function import check_length

MAX_CALLS = 10_000
"""The most tool calls a rule function takes."""

TOOL_CALLS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "object", "required": ["name"],
              "properties": {"name": {"type": "string"}, "arguments": {}, "result": {}, "error": {}}},
}
"""The JSON Schema of a `tool_calls` argument."""


def names(function: str, tool_calls: list[dict]) -> list[str]:
    """The tools called, in order (a tool called twice is listed twice). Raises `ValueError`
    naming `function` when there are more than `MAX_CALLS` calls."""
    check_length(function, "tool_calls", tool_calls, MAX_CALLS, "calls")
    return [call["name"] for call in tool_calls]


def failed(call: dict) -> bool:
    """Whether `call` reported an error."""
    return call.get("error") not in (None, False, "", {}, [])


def in_order(wanted: list[str], called: list[str]) -> int:
    """How many of `wanted` are found in `called` in that order, other calls allowed between
    (the longest such prefix of `wanted`); ``len(wanted)`` when `wanted` is a subsequence."""
    position = 0
    for name in called:
        if position < len(wanted) and name == wanted[position]:
            position += 1
    return position


__all__ = ["MAX_CALLS", "TOOL_CALLS_SCHEMA", "failed", "in_order", "names"]

"""Checks on an agent's tool calls: the expected tool, the expected order, counts, errors.

Every function takes `tool_calls` as `engine.functions.agent_steps` describes them (at most `MAX_CALLS`).
"""

from __future__ import annotations

from .agent_steps import MAX_CALLS, TOOL_CALLS_SCHEMA, failed, in_order, names
from .rule_function import rule_function

_NAMES = {"type": "array", "items": {"type": "string"}}
_LIMIT = f"up to {MAX_CALLS:,} tool calls"


@rule_function(
    args={"tool_calls": TOOL_CALLS_SCHEMA, "expected_tool": {"type": ["string", "null"]},
          "expected_order": {"type": ["array", "null"], "items": {"type": "string"}}, "strict": {"type": "boolean"}},
    result={"type": "object", "additionalProperties": False, "required": ["correct", "mode", "called"],
            "properties": {"correct": {"type": "boolean"}, "mode": {"enum": ["tool", "order"]}, "called": _NAMES}},
    limit=_LIMIT,
)
def tool_call_accuracy(tool_calls: list[dict], expected_tool: str | None = None,
                       expected_order: list[str] | None = None, strict: bool = False) -> dict:
    """Whether the expected tool was called, or the tools were called in the expected order.

    With a non-empty `expected_order` (mode ``order``): `strict` — the calls are exactly that
    list; otherwise it is a subsequence of the calls (other calls may come between). Else with
    `expected_tool` (mode ``tool``): `strict` — it is the only call; otherwise one of the calls.
    No call at all is never correct.

    Returns ``{"correct": bool, "mode": "tool" | "order", "called": [names]}``. Raises
    `ValueError` when neither `expected_tool` nor `expected_order` is given, and past
    `MAX_CALLS`.
    """
    called = names("tool_call_accuracy", tool_calls)
    if expected_order:
        if strict:
            correct = called == list(expected_order)
        else:
            correct = bool(called) and in_order(list(expected_order), called) == len(expected_order)
        return {"correct": correct, "mode": "order", "called": called}
    if not expected_tool:
        raise ValueError("give the expected tool (expectedTool) or the expected order (expectedToolOrder)")
    correct = called == [expected_tool] if strict else expected_tool in called
    return {"correct": correct, "mode": "tool", "called": called}


_COUNTED = {"type": "object", "additionalProperties": False, "required": ["passed", "count"],
            "properties": {"passed": {"type": "boolean"}, "count": {"type": "integer", "minimum": 0}}}


@rule_function(args={"tool_calls": TOOL_CALLS_SCHEMA, "name": {"type": "string"},
                     "times": {"type": "integer", "minimum": 1}},
               result=_COUNTED, limit=_LIMIT)
def called_tool(tool_calls: list[dict], name: str, times: int = 1) -> dict:
    """Whether tool `name` was called at least `times` times.

    Returns ``{"passed": bool, "count": int}`` (its calls). Raises `ValueError` past `MAX_CALLS`.
    """
    count = names("called_tool", tool_calls).count(name)
    return {"passed": count >= times, "count": count}


@rule_function(args={"tool_calls": TOOL_CALLS_SCHEMA, "name": {"type": "string"}}, result=_COUNTED, limit=_LIMIT)
def did_not_call(tool_calls: list[dict], name: str) -> dict:
    """Whether tool `name` was never called.

    Returns ``{"passed": bool, "count": int}`` (its calls). Raises `ValueError` past `MAX_CALLS`.
    """
    count = names("did_not_call", tool_calls).count(name)
    return {"passed": count == 0, "count": count}


@rule_function(
    args={"tool_calls": TOOL_CALLS_SCHEMA, "order": _NAMES},
    result={"type": "object", "additionalProperties": False, "required": ["passed", "matched", "called"],
            "properties": {"passed": {"type": "boolean"}, "matched": {"type": "integer", "minimum": 0},
                           "called": _NAMES}},
    limit=_LIMIT,
)
def tool_order(tool_calls: list[dict], order: list[str]) -> dict:
    """Whether the tools in `order` were called in that order, other calls allowed between.

    Returns ``{"passed": bool, "matched": int, "called": [names]}``: `matched` = how many of
    `order` were found in order before the first one that was not (an empty `order` passes).
    Raises `ValueError` past `MAX_CALLS`.
    """
    called = names("tool_order", tool_calls)
    matched = in_order(list(order), called)
    return {"passed": matched == len(order), "matched": matched, "called": called}


@rule_function(args={"tool_calls": TOOL_CALLS_SCHEMA, "limit": {"type": "integer", "minimum": 0}},
               result=_COUNTED, limit=_LIMIT)
def max_tool_calls(tool_calls: list[dict], limit: int) -> dict:
    """Whether at most `limit` tool calls were made.

    Returns ``{"passed": bool, "count": int}`` (all calls). Raises `ValueError` past `MAX_CALLS`.
    """
    count = len(names("max_tool_calls", tool_calls))
    return {"passed": count <= limit, "count": count}


@rule_function(args={"tool_calls": TOOL_CALLS_SCHEMA}, result=_COUNTED, limit=_LIMIT)
def used_no_tools(tool_calls: list[dict]) -> dict:
    """Whether no tool was called.

    Returns ``{"passed": bool, "count": int}`` (all calls). Raises `ValueError` past `MAX_CALLS`.
    """
    count = len(names("used_no_tools", tool_calls))
    return {"passed": count == 0, "count": count}


@rule_function(
    args={"tool_calls": TOOL_CALLS_SCHEMA},
    result={"type": "object", "additionalProperties": False, "required": ["passed", "count", "failed"],
            "properties": {"passed": {"type": "boolean"}, "count": {"type": "integer", "minimum": 0},
                           "failed": {"type": "array", "items": {"type": "object", "required": ["index", "name"],
                                                                 "properties": {"index": {"type": "integer"},
                                                                                "name": {"type": "string"}}}}}},
    limit=_LIMIT,
)
def no_tool_errors(tool_calls: list[dict]) -> dict:
    """Whether no tool call reported an error.

    Returns ``{"passed": bool, "count": int, "failed": [{"index", "name"}]}``: `count` calls,
    `failed` those with an error (0-based positions). Raises `ValueError` past `MAX_CALLS`.
    """
    names("no_tool_errors", tool_calls)
    bad = [{"index": i, "name": call["name"]} for i, call in enumerate(tool_calls) if failed(call)]
    return {"passed": not bad, "count": len(tool_calls), "failed": bad}


__all__ = ["called_tool", "did_not_call", "max_tool_calls", "no_tool_errors", "tool_call_accuracy", "tool_order",
           "used_no_tools"]

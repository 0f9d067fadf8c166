"""Trajectory: an agent's steps (its tool calls) against an expected trajectory, budgets and
forbidden tools.

Up to four parts, each in [0, 1], are combined as a weighted mean of those that apply
(weights: accuracy 0.4, efficiency 0.3, failures 0.2, forbidden 0.1, as the reference's
``createTrajectoryScorerCode``); using a forbidden tool or sequence scores 0 outright, and with
no part applying the score is 1.

- **accuracy** (when `expected` is given): matched expected steps / expected steps. ``strict``:
  step i must be expected step i, and each call past the expected count costs half a step's
  share; ``relaxed``: the expected steps in order, other calls allowed between; ``unordered``:
  each expected step matched by a different call, in any order. When repeats are not allowed,
  each tool called more than once costs 0.1. An expected step is a name or ``{"name",
  "arguments"}``; with arguments, only a call with equal arguments matches it (equal as JSON
  values: ``{"qty": 2}`` and ``{"qty": 2.0}`` are equal, keys in any order at any depth, but
  ``true`` is not ``1``).
- **efficiency** (when a budget is given or `no_redundant_calls`): the mean over the budgets
  set of ``1 - overrun / budget`` (floored at 0) for steps, tokens and seconds, and for
  redundancy ``1 - 0.2 × (calls repeating the previous call with the same arguments)`` (the
  same as JSON values, as above).
- **failures** (when a tool was retried after failing): ``1 - 0.2 ×`` the retries past
  `max_retries_per_tool`, summed over the tools.
- **forbidden** (when forbidden tools or sequences are given): 1, or the whole score is 0.
"""

from __future__ import annotations

from typing import Any

from .agent_steps import MAX_CALLS, TOOL_CALLS_SCHEMA, failed, names
from .rule_function import check_length, rule_function

WEIGHTS = {"accuracy": 0.4, "efficiency": 0.3, "failures": 0.2, "forbidden": 0.1}
MAX_EXPECTED = 1_000
"""The most expected steps (matching is at worst calls × expected steps)."""

_STEP = {"anyOf": [{"type": "string"}, {"type": "object", "required": ["name"],
                                         "properties": {"name": {"type": "string"}, "arguments": {}}}]}
_NAMES = {"type": "array", "items": {"type": "string"}}
_BUDGET = {"type": ["number", "null"], "minimum": 0}
_PART = {"type": ["number", "null"], "minimum": 0, "maximum": 1}


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal by JSON's equality, at any depth: numbers by value
    (``2`` equals ``2.0``), objects by their keys and values in any order, arrays item by item;
    a boolean equals only a boolean (``true`` is not ``1``), ``null`` only ``null``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list, tuple)) or isinstance(b, (dict, list, tuple)):
        return False
    return type(a) is type(b) and a == b


def _matches(call: dict, step: Any) -> bool:
    if isinstance(step, str):
        return call["name"] == step
    return call["name"] == step["name"] and ("arguments" not in step or _same(call.get("arguments"), step["arguments"]))


def accuracy(calls: list[dict], expected: list[Any], ordering: str, allow_repeated: bool) -> dict:
    """The accuracy part: ``{"score", "matched", "missing", "extra", "repeated"}`` (names)."""
    wanted = [s if isinstance(s, str) else s["name"] for s in expected]
    called = [c["name"] for c in calls]
    counts: dict[str, int] = {}
    for name in called:
        counts[name] = counts.get(name, 0) + 1
    repeated = [name for name, n in counts.items() if n > 1]
    expected_names = set(wanted)
    extra = [name for name in called if name not in expected_names]
    if not expected:
        return {"score": 1.0 if not calls else 0.0, "matched": 0, "missing": [], "extra": extra, "repeated": repeated}
    hit: set[int] = set()
    if ordering == "strict":
        hit = {i for i, step in enumerate(expected) if i < len(calls) and _matches(calls[i], step)}
    elif ordering == "relaxed":
        last = -1  # each expected step is looked for after the call that matched the one before
        for i, step in enumerate(expected):
            j = next((k for k in range(last + 1, len(calls)) if _matches(calls[k], step)), None)
            if j is not None:
                hit.add(i)
                last = j
    else:
        used: set[int] = set()
        for i, step in enumerate(expected):
            j = next((k for k, call in enumerate(calls) if k not in used and _matches(call, step)), None)
            if j is not None:
                used.add(j)
                hit.add(i)
    score = len(hit) / len(expected)
    if ordering == "strict" and len(calls) > len(expected):
        score -= 0.5 * (len(calls) - len(expected)) / len(expected)
    if not allow_repeated:
        score -= 0.1 * len(repeated)
    missing = [wanted[i] for i in range(len(expected)) if i not in hit]
    return {"score": min(1.0, max(0.0, score)), "matched": len(hit), "missing": missing, "extra": extra,
            "repeated": repeated}


def efficiency(calls: list[dict], budgets: dict[str, float | None], measured: dict[str, float | None],
               no_redundant_calls: bool) -> dict:
    """The efficiency part: ``{"score", "over": [budget names], "redundant": [indexes]}``.
    Raises `ValueError` for a token or seconds budget whose measure is not given."""
    parts = []
    over = []
    for key, budget in budgets.items():
        if budget is None:
            continue
        used = measured[key]
        if used is None:
            raise ValueError(f"a {key} budget needs the run's {key} (none given)")
        if used > budget:
            over.append(key)
            parts.append(max(0.0, 1.0 - (used - budget) / budget) if budget > 0 else 0.0)
        else:
            parts.append(1.0)
    redundant = [i for i in range(1, len(calls)) if calls[i]["name"] == calls[i - 1]["name"]
                 and _same(calls[i].get("arguments"), calls[i - 1].get("arguments"))]
    if no_redundant_calls:
        parts.append(max(0.0, 1.0 - 0.2 * len(redundant)))
    return {"score": sum(parts) / len(parts) if parts else 1.0, "over": over, "redundant": redundant}


def retries(calls: list[dict], max_retries_per_tool: int) -> dict:
    """The failures part: ``{"score", "retries", "excessive": [tool names]}``. A retry is a call
    of the same tool right after one of its calls failed."""
    total = 0
    excess = 0
    excessive = []
    i = 0
    while i < len(calls):
        j, count = i + 1, 0
        while j < len(calls) and calls[j]["name"] == calls[i]["name"]:
            count += failed(calls[j - 1])
            j += 1
        total += count
        if count > max_retries_per_tool:
            excess += count - max_retries_per_tool
            excessive.append(calls[i]["name"])
        i = j
    return {"score": max(0.0, 1.0 - 0.2 * excess), "retries": total, "excessive": excessive}


def violations(called: list[str], tools: list[str], sequences: list[list[str]]) -> list[str]:
    """The forbidden tools called and the forbidden sequences (``a → b``) found as consecutive
    calls."""
    found = [tool for tool in tools if tool in called]
    for sequence in sequences:
        n = len(sequence)
        if n and any(called[i:i + n] == sequence for i in range(len(called) - n + 1)):
            found.append(" → ".join(sequence))
    return found


@rule_function(
    args={"tool_calls": TOOL_CALLS_SCHEMA, "expected": {"type": ["array", "null"], "items": _STEP},
          "ordering": {"enum": ["strict", "relaxed", "unordered"]}, "allow_repeated": {"type": "boolean"},
          "max_steps": _BUDGET, "max_tokens": _BUDGET, "max_seconds": _BUDGET,
          "tokens": _BUDGET, "seconds": _BUDGET, "no_redundant_calls": {"type": "boolean"},
          "forbidden_tools": {"type": ["array", "null"], "items": {"type": "string"}},
          "forbidden_sequences": {"type": ["array", "null"], "items": _NAMES},
          "max_retries_per_tool": {"type": "integer", "minimum": 0}},
    result={"type": "object", "additionalProperties": False,
            "required": ["score", "accuracy", "efficiency", "failures", "forbidden", "called", "matched", "missing",
                         "extra", "repeated", "overBudget", "redundant", "retries", "violations"],
            "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "accuracy": _PART,
                           "efficiency": _PART, "failures": _PART, "forbidden": _PART, "called": _NAMES,
                           "matched": {"type": "integer", "minimum": 0}, "missing": _NAMES, "extra": _NAMES,
                           "repeated": _NAMES, "overBudget": _NAMES,
                           "redundant": {"type": "array", "items": {"type": "integer"}},
                           "retries": {"type": "integer", "minimum": 0}, "violations": _NAMES}},
    limit=f"up to {MAX_CALLS:,} tool calls and {MAX_EXPECTED:,} expected steps",
)
def trajectory(tool_calls: list[dict], expected: list[Any] | None = None, ordering: str = "relaxed",
               allow_repeated: bool = True, max_steps: float | None = None, max_tokens: float | None = None,
               max_seconds: float | None = None, tokens: float | None = None, seconds: float | None = None,
               no_redundant_calls: bool = False, forbidden_tools: list[str] | None = None,
               forbidden_sequences: list[list[str]] | None = None, max_retries_per_tool: int = 2) -> dict:
    """The agent's trajectory scored on accuracy, efficiency, failures and forbidden tools (see
    the module's docstring for each part).

    `tokens` and `seconds` are the run's measures, needed only when `max_tokens` or
    `max_seconds` is set. Returns ``{"score"}`` in [0, 1], each part's score (None when it does
    not apply) and what decided them: ``called``, ``matched``, ``missing``, ``extra``,
    ``repeated`` (names), ``overBudget`` (``steps``, ``tokens``, ``seconds``), ``redundant``
    (indexes of calls repeating the previous one), ``retries``, ``violations``. Raises
    `ValueError` past `MAX_CALLS` or `MAX_EXPECTED` and for a budget whose measure is not given.
    """
    called = names("trajectory", tool_calls)
    if expected is not None:
        check_length("trajectory", "expected", expected, MAX_EXPECTED, "steps")
    forbidden_tools, forbidden_sequences = forbidden_tools or [], forbidden_sequences or []
    found = violations(called, list(forbidden_tools), [list(s) for s in forbidden_sequences])
    acc = accuracy(tool_calls, list(expected), ordering, allow_repeated) if expected is not None else None
    budgets = {"steps": max_steps, "tokens": max_tokens, "seconds": max_seconds}
    eff = efficiency(tool_calls, budgets, {"steps": len(called), "tokens": tokens, "seconds": seconds},
                     no_redundant_calls) if no_redundant_calls or any(b is not None for b in budgets.values()) else None
    fail = retries(tool_calls, max_retries_per_tool)
    parts = {"accuracy": acc["score"] if acc else None, "efficiency": eff["score"] if eff else None,
             "failures": fail["score"] if fail["retries"] else None,
             "forbidden": (0.0 if found else 1.0) if (forbidden_tools or forbidden_sequences) else None}
    weighted = [(WEIGHTS[key], value) for key, value in parts.items() if value is not None]
    total = sum(w for w, _ in weighted)
    score = 0.0 if found else (sum(w * v for w, v in weighted) / total if total else 1.0)
    return {"score": min(1.0, max(0.0, score)), **parts, "called": called,
            "matched": acc["matched"] if acc else 0, "missing": acc["missing"] if acc else [],
            "extra": acc["extra"] if acc else [], "repeated": acc["repeated"] if acc else [],
            "overBudget": eff["over"] if eff else [], "redundant": eff["redundant"] if eff else [],
            "retries": fail["retries"], "violations": found}


__all__ = ["MAX_EXPECTED", "WEIGHTS", "accuracy", "efficiency", "retries", "trajectory", "violations"]

"""A judge call's token usage as the provider reported it: counted, or marked unknown.

OpenAI reports ``usage.prompt_tokens`` and ``usage.completion_tokens`` (the latter counting a
reasoning model's hidden reasoning, also given apart in
``usage.completion_tokens_details.reasoning_tokens``); Anthropic ``usage.input_tokens`` and
``usage.output_tokens`` (thinking included). A call whose answer carried no usage, or one that
is not a whole count (NaN, text), is counted as *unreported* (`engine.core.result.Usage.unreported`):
its tokens and cost are unknown, never 0.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.result import Usage

__all__ = ["add_tokens", "count", "reported"]


def add_tokens(usage: Usage, total: Any, calls: int = 1) -> None:
    """Add the tokens a provider reported (`total`: OpenAI's ``usage`` with ``prompt_tokens``,
    ``completion_tokens`` and ``completion_tokens_details.reasoning_tokens``, or Anthropic's with
    ``input_tokens`` and ``output_tokens``) to `usage`. Reasoning tokens are output tokens (OpenAI
    counts them in ``completion_tokens``) and are also counted apart. A usage that is missing or
    holds no whole, finite, non-negative count (NaN, a string) adds nothing and counts the `calls`
    as unreported: their tokens are unknown, never 0."""
    tokens_in = count(total, "prompt_tokens", "input_tokens")
    tokens_out = count(total, "completion_tokens", "output_tokens")
    if tokens_in is None or tokens_out is None:
        usage.unreported += calls
        return
    usage.tokens_in += tokens_in
    usage.tokens_out += tokens_out
    usage.reasoning_tokens += count(getattr(total, "completion_tokens_details", None), "reasoning_tokens") or 0


def reported(completion: Any, total: Any) -> Any:
    """The usage to count for a call whose last answer was `completion` and whose answers'
    usage instructor summed in `total`: None when that answer carried none (the server reports
    no usage: unknown, not 0), else `total` (or the answer's own)."""
    own = getattr(completion, "usage", None) if completion is not None else None
    if completion is not None and own is None:
        return None
    return total if total is not None else own


def count(usage: Any, *names: str) -> int | None:
    """The first of `names` that `usage` holds as a whole count >= 0; None when none does."""
    if usage is None:
        return None
    for name in names:
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and value >= 0:
            return value
        if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
            return int(value)
    return None

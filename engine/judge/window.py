"""Context windows: a prompt that cannot fit the judge model fails its item before the call.

Policy. A judge call needs its prompt's tokens plus ``max_tokens`` (the room kept for the
answer) within the model's context window. When they exceed it, the item fails with kind
``prompt_too_long``, naming the stage, the prompt's size in characters and tokens, the room for
the answer and the window; no request is sent, nothing is scored, other items go on.

The window, first found wins:

1. ``context_window=`` (`load_scorer`, `make_judge`), in tokens; 0 turns the check off;
2. ``$SCORESPEC_CONTEXT_WINDOW``, the same;
3. the embedded models (``local``, ``local-tiny``, ``llamacpp/…``): the context the model was
   loaded with (4096 tokens by default). A larger value from 1 or 2 cannot raise it;
4. `KNOWN_WINDOWS`, a short table of hosted models (matched by prefix);
5. otherwise none: no check (the provider's own refusal, if any, fails the item with kind
   ``prompt_too_long`` too: `engine.judge.provider`).

Counting. The embedded models count exactly with their own tokenizer, and only when the
prompt might not fit: their byte-level tokenizers never make more tokens than the text has
UTF-8 bytes, so a prompt whose bytes fit needs no count. Hosted models' tokenizers are not
available offline, so their prompts are *estimated* at `CHARS_PER_TOKEN` (4) characters a
token, plus `MESSAGE_OVERHEAD` tokens a message. Four characters a token is typical of English
prose with the GPT and Claude tokenizers, and few texts have fewer tokens than that: the
estimate errs towards letting a prompt through, so it refuses only prompts that are clearly too
long (a 1 MB output against a 128k window). Denser text (code, non-Latin scripts) has more
tokens than estimated; such a prompt may pass the check and be refused by the provider, which
fails the item as a judge error — still never a score.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..core import environment
from ..core.errors import ScorerRunError

ENV = "SCORESPEC_CONTEXT_WINDOW"
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds per message

# provider/model prefix → context window in tokens (the longest matching prefix wins)
KNOWN_WINDOWS = {
    "openai/gpt-4o": 128_000,
    "openai/gpt-4-turbo": 128_000,
    "openai/gpt-4.1": 1_047_576,
    "openai/gpt-3.5-turbo": 16_385,
    "openai/gpt-5": 400_000,
    "openai/o1": 200_000,
    "openai/o3": 200_000,
    "openai/o4-mini": 200_000,
    "anthropic/claude-": 200_000,
}


def configured_window(explicit: int | None = None) -> int | None:
    """The window set by the caller (`explicit`) or ``$SCORESPEC_CONTEXT_WINDOW``: a number of
    tokens, 0 for "no check", or None when neither is set. Raises `ValueError` for a negative
    or non-integer value, naming where it came from."""
    source, value = ("context_window", explicit) if explicit is not None else (ENV, environment.value(ENV))
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source}={value!r}: expected a number of tokens (0 = no check)") from None
    if number < 0 or isinstance(value, bool):
        raise ValueError(f"{source}={value!r}: expected a number of tokens (0 = no check)")
    return number


def resolve_window(model: str, explicit: int | None = None) -> int | None:
    """The context window (tokens) to check `model`'s prompts against, None for no check:
    `explicit` > ``$SCORESPEC_CONTEXT_WINDOW`` > `KNOWN_WINDOWS` (see the module docstring)."""
    configured = configured_window(explicit)
    if configured is not None:
        return configured or None
    matches = [prefix for prefix in KNOWN_WINDOWS if model.startswith(prefix)]
    return KNOWN_WINDOWS[max(matches, key=len)] if matches else None


def estimate_tokens(text: str) -> int:
    """Tokens estimated at `CHARS_PER_TOKEN` characters a token, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class WindowCheck:
    """Checks one judge's calls against its window.

    window: tokens (None: no check). count: the model's exact token counter, or None to
    estimate. byte_level: the counter's tokenizer never makes more tokens than UTF-8 bytes (so
    a prompt whose bytes fit is not counted). model: named in the error.
    """

    def __init__(self, window: int | None, model: str, *, count: Callable[[str], int] | None = None,
                 byte_level: bool = False):
        self.window = window
        self.model = model
        self.count = count
        self.byte_level = byte_level

    def __repr__(self) -> str:
        return f"WindowCheck(window={self.window}, model={self.model!r}, exact={self.count is not None})"

    def check(self, stage: str, messages: list[dict[str, Any]], max_tokens: int) -> None:
        """Raise `ScorerRunError` (kind ``prompt_too_long``) when `messages` plus `max_tokens`
        cannot fit the window."""
        if not self.window:
            return
        texts = [str(m.get("content") or "") for m in messages]
        overhead = MESSAGE_OVERHEAD * (len(texts) + 1)
        chars = sum(len(t) for t in texts)
        if self.count is not None:
            if self.byte_level and sum(len(t.encode("utf-8")) for t in texts) + overhead + max_tokens <= self.window:
                return
            tokens, how = sum(self.count(t) for t in texts) + overhead, "counted by the model's tokenizer"
        else:
            tokens = sum(estimate_tokens(t) for t in texts) + overhead
            how = f"estimated at {CHARS_PER_TOKEN} characters a token"
        if tokens + max_tokens <= self.window:
            return
        raise ScorerRunError(
            "prompt_too_long",
            f"the prompt of stage '{stage}' has {chars:,} characters, about {tokens:,} tokens ({how}); with "
            f"{max_tokens:,} tokens kept for the answer it needs {tokens + max_tokens:,}, more than the "
            f"{self.window:,}-token context window of {self.model}. Shorten the item's text, or set the window "
            f"with context_window= or ${ENV} (0 = no check). No request was sent.",
            stage=stage,
        )


__all__ = ["KNOWN_WINDOWS", "WindowCheck", "configured_window", "estimate_tokens", "resolve_window"]

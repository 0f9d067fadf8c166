"""What a provider's HTTP error refuses: the credentials, the prompt's length, the structured-output
mode's parameters or the ``logprobs`` parameters, and what the server said (`server_said`). Read by
`engine.judge.provider` to classify a failure and by `engine.judge.probe`; imports nothing of the engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["MODE_PARAMETERS", "TOO_LONG_STATUS", "is_auth", "is_prompt_too_long", "refuses_logprobs", "refuses_mode",
           "server_said"]


TOO_LONG_STATUS = {400, 413}
"""The statuses a provider refuses a prompt longer than the model's context with (the body says so)."""
_TOO_LONG = re.compile(r"context[_ ]length|maximum context|context window|(prompt|input) is too long|"
                       r"too many (input )?tokens", re.IGNORECASE)


MODE_PARAMETERS = ("tools", "tool_choice", "response_format")
"""The request parameters instructor's structured-output modes send (tools, json_schema, json_object)."""


def refuses_mode(exc: BaseException) -> bool:
    """Whether a provider's HTTP 400 refuses a structured-output mode's parameter: its error's
    ``param`` is one (OpenAI's error body), or its message names one as not supported."""
    if getattr(exc, "status_code", None) != 400:
        return False
    body = getattr(exc, "body", None)
    param = body.get("param") if isinstance(body, dict) else None
    if param in MODE_PARAMETERS:
        return True
    text = str(exc).lower()
    return ("logprobs" not in text and any(name in text for name in MODE_PARAMETERS)
            and ("not supported" in text or "unsupported" in text))


def refuses_logprobs(message: str) -> bool:
    """Whether a provider's refusal (HTTP 400) names the ``logprobs`` parameters."""
    return "HTTP 400" in message and "logprobs" in message.lower()


def is_auth(exc: BaseException) -> bool:
    """The provider refused the credentials or the model's access (HTTP 401 or 403)."""
    return getattr(exc, "status_code", None) in (401, 403)


def is_prompt_too_long(exc: BaseException) -> bool:
    """The provider refused the prompt as longer than the model's context: HTTP 400 (or 413) with
    the error code ``context_length_exceeded``, or a message saying so (OpenAI's "maximum context
    length", Anthropic's "prompt is too long", "context window", …)."""
    if getattr(exc, "status_code", None) not in TOO_LONG_STATUS:
        return False
    return getattr(exc, "code", None) == "context_length_exceeded" or bool(_TOO_LONG.search(str(exc)))


def server_said(exc: BaseException, limit: int = 200, redact: Callable[[str], str | None] = lambda text: text) -> str:
    """The error in one line, said once: ``HTTP 401: Incorrect API key provided.`` (the status and
    the error body's ``message``, OpenAI's ``{"error": {"message": …}}`` or ``{"message": …}``),
    else ``TypeName: text``; the text passed through `redact` (API keys replaced), then cut to
    `limit` characters, so a cut never leaves part of a key."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = message if isinstance(message, str) and message else str(exc) or type(exc).__name__
    return (f"HTTP {status}: " if status else f"{type(exc).__name__}: ") + (redact(text) or "")[:limit]

"""The replies `engine.testing.fake_openai.FakeOpenAIServer` sends: `Fault` (scripted
failures), `Tokens` (content with token probabilities), OpenAI-style error bodies and the
``chat.completion`` object (`completion`). See `engine.testing.fake_openai` for how a reply is
chosen and what each kind sends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Fault", "Tokens", "completion", "error_body", "logprobs_of"]

_DEFAULT_ERRORS = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    404: ("invalid_request_error", None, "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def error_body(code: int, message: str | None = None) -> dict:
    kind, err_code, default_message = _DEFAULT_ERRORS.get(
        code, ("server_error" if code >= 500 else "invalid_request_error", None, f"HTTP {code}.")
    )
    return {
        "error": {
            "message": message or default_message,
            "type": kind,
            "param": None,
            "code": err_code,
        }
    }


@dataclass(frozen=True)
class Fault:
    """A scripted failure. Build one with the class methods, not directly.

    Attributes are read by the server: ``kind`` (``"status"``, ``"reset"``,
    ``"delay"``, ``"malformed"``, ``"invalid_json"``, ``"truncated"`` or
    ``"content_filter"``) and the
    fields that kind uses. `engine.testing.faults.FaultInjector` injects them
    at seeded rates.
    """

    kind: str
    code: int = 200
    retry_after: float | int | str | None = None
    body: Any = None
    seconds: float = 0.0
    then: Any = None
    answer: Any = None
    content_type: str = "application/json"
    echo_headers: bool = False

    @classmethod
    def status(cls, code: int, retry_after: float | int | str | None = None, body: Any = None,
               echo_headers: bool = False) -> "Fault":
        """An HTTP error response with status ``code`` (typically 429, 500, 502, 503).

        ``retry_after`` (seconds, or a preformatted string) is sent as the
        ``Retry-After`` header when given. ``body`` is the JSON error body
        (a dict/list, JSON-encoded) or raw text/bytes; by default an
        OpenAI-style ``{"error": {"message", "type", "param", "code"}}``.
        ``echo_headers`` appends the request's headers (``Authorization``
        included) to the default error message, as careless proxies do: for
        testing that API keys are redacted from errors.
        """
        if not 100 <= int(code) <= 599:
            raise ValueError(f"HTTP status out of range: {code}")
        return cls("status", code=int(code), retry_after=retry_after, body=body, echo_headers=echo_headers)

    @classmethod
    def reset(cls) -> "Fault":
        """Close the connection without any response (a TCP reset, SO_LINGER 0).

        The ``openai`` client raises ``APIConnectionError``.
        """
        return cls("reset")

    @classmethod
    def delay(cls, seconds: float, then: Any = None) -> "Fault":
        """Answer ``then`` after ``seconds`` more seconds (on top of ``latency_s``).

        For client timeouts. ``then`` is any reply; ``None`` means the server's
        default ``reply``. If the client gave up meanwhile, the late write is
        silently dropped.
        """
        if seconds < 0:
            raise ValueError("delay seconds must be >= 0")
        return cls("delay", seconds=float(seconds), then=then)

    @classmethod
    def malformed_body(cls, body: bytes | str = b'{"id": "chatcmpl-broken", "choices": [',
                       content_type: str = "application/json") -> "Fault":
        """A 200 response whose body is not valid JSON (by default a cut-off object)."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        return cls("malformed", code=200, body=body, content_type=content_type)

    @classmethod
    def invalid_json(cls, text: str = '{"claims": ["cut') -> "Fault":
        """A 200 completion with ``finish_reason`` ``"stop"`` whose answer text is ``text`` as
        is, placed where a normal answer goes (the tool call's arguments when the request has
        tools, else the content): malformed JSON the model itself produced."""
        return cls("invalid_json", answer=str(text))

    @classmethod
    def truncated(cls, answer: Any) -> "Fault":
        """A 200 completion with ``finish_reason`` ``"length"`` whose JSON text
        (tool-call arguments or content, as for a normal answer) is cut to its
        first half (``text[: len(text) // 2]``)."""
        return cls("truncated", answer=answer)

    @classmethod
    def content_filter(cls, answer: Any) -> "Fault":
        """A 200 completion with ``finish_reason`` ``"content_filter"`` carrying `answer` where a
        normal answer goes: a JSON value sent whole as its JSON text (an answer that parses), a
        text as it is (script a cut-off one as ``'{"claims": ["Par'``)."""
        return cls("content_filter", answer=answer)


class Tokens:
    """An answer sent as message content, token by token: each part ``(text, probability)`` or
    ``(text, probability, [(alternative, probability), …])``, the alternatives being what the
    completion's ``top_logprobs`` lists at that token (default: the token itself). The content
    is the parts' texts joined. Raises ValueError for a probability outside [0, 1]."""

    def __init__(self, *parts: Any):
        normalised = []
        for part in parts:
            text, p, *rest = part
            alternatives = [(str(a), float(q)) for a, q in (rest[0] if rest else [(text, p)])]
            if not all(0 <= q <= 1 for q in [float(p), *(q for _, q in alternatives)]):
                raise ValueError(f"token {text!r}: probabilities must be in [0, 1]")
            normalised.append((str(text), float(p), alternatives))
        self.parts = normalised

    @property
    def text(self) -> str:
        return "".join(text for text, _, _ in self.parts)

    def __repr__(self) -> str:
        return f"Tokens({self.text!r})"


def _token_entry(text: str, p: float) -> dict:
    import math

    return {"token": text, "logprob": math.log(p) if p > 0 else -9999.0, "bytes": list(text.encode("utf-8"))}


def logprobs_of(text: str, tokens: "Tokens | None") -> dict:
    """``choices[0].logprobs`` for content `text`: `tokens`' parts, or `text` split in words."""
    import re

    parts = tokens.parts if tokens is not None else [
        (piece, 1.0, [(piece, 1.0)]) for piece in re.findall(r" ?\w+| ?[^\w\s]|\s+", text)]
    return {"content": [{**_token_entry(t, p), "top_logprobs": [_token_entry(a, q) for a, q in alternatives]}
                        for t, p, alternatives in parts]}


def _message_text_len(messages: Any) -> int:
    """Characters of text in a chat ``messages`` list (str or text parts)."""
    total = 0
    if not isinstance(messages, list):
        return 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    total += len(part["text"])
        for call in m.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                total += len(fn["arguments"])
    return total


def _tool_name(request: dict) -> str | None:
    """The function a tool-call answer should name, or None without tools."""
    tools = request.get("tools")
    if not tools:
        return None
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        fn = choice.get("function")
        if isinstance(fn, dict) and fn.get("name"):
            return str(fn["name"])
    first = tools[0] if isinstance(tools, list) and tools else {}
    fn = first.get("function") if isinstance(first, dict) else None
    if isinstance(fn, dict) and fn.get("name"):
        return str(fn["name"])
    return "answer"


def completion(request: dict, text: str, *, number: int, finish: str, as_tool: bool = True,
               tokens: Tokens | None = None, logprobs: bool = True) -> dict:
    """A chat.completion object (id ``chatcmpl-fake-NUMBER``) carrying `text` as a tool call (if
    the request has tools and `as_tool`) or as content (with its token probabilities when the
    request asks for them and `logprobs` allows). `finish` is the finish reason (``"stop"``
    becomes ``"tool_calls"`` for a tool call); usage counts characters // 4, at least 1."""
    name = _tool_name(request) if as_tool else None
    if name is not None:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{
                "id": f"call_fake_{number}",
                "type": "function",
                "function": {"name": name, "arguments": text},
            }],
        }
        if finish == "stop":
            finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": text}
    prompt_tokens = max(1, _message_text_len(request.get("messages")) // 4)
    completion_tokens = max(1, len(text) // 4)
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.get("model") or "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish,
                     "logprobs": logprobs_of(text, tokens) if name is None and logprobs
                     and request.get("logprobs") else None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }

"""A fake OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

It lets the real ``openai`` client (and ``instructor`` on top of it) run end to
end against scripted answers and faults, without any network beyond loopback.
Only the standard library is used: ``http.server.ThreadingHTTPServer`` speaking
HTTP/1.1 with keep-alive, served from a daemon thread (one handler thread per
client connection, so simulated latency is a ``time.sleep`` that does not block
other connections).

Endpoints (under ``base_url`` = ``http://127.0.0.1:PORT/v1``; the same paths
without the ``/v1`` prefix are accepted too):

- ``POST /v1/chat/completions``: answered from the script (see
  :meth:`FakeOpenAIServer.script`) or the default ``reply``. Streaming
  (``"stream": true``) is not supported and answers 400.
- ``GET /v1/models``: a list with one model, ``"fake-model"``.

Anything else answers 404 with an OpenAI-style error body.

A *reply* is one of:

- a ``dict`` or ``list``: the JSON answer. If the request has ``tools``, it is
  sent as an assistant message with one tool call (function name = the
  ``tool_choice`` function if one is named, else the first tool's name;
  arguments = ``json.dumps(answer)``) and ``finish_reason`` ``"tool_calls"``;
  otherwise as message content ``json.dumps(answer)`` with ``"stop"``.
- a ``str``: raw assistant content, sent as is with ``finish_reason``
  ``"stop"`` (a plain-text refusal, malformed JSON such as ``'{"claims": ['``).
- a :class:`Fault`: an HTTP error, a connection reset, a late answer, a
  non-JSON body, malformed JSON in the answer's place, or a truncated answer.
- a :class:`Tokens`: content given token by token, each with its probability
  and the alternatives at its position (for label probabilities).
- a callable ``reply(request_json) -> reply``, called in the handler thread
  with the parsed request body (it must be thread-safe); its result may be any
  of the above.

Token probabilities: a request with ``"logprobs": true`` whose answer is
message content (not a tool call) gets ``choices[0].logprobs.content`` as
OpenAI sends it: each token with ``token``, ``logprob``, ``bytes`` and
``top_logprobs``. A :class:`Tokens` reply gives them; any other answer is
split into words and single other characters (a leading space kept with its
word), each with probability 1 and itself as its only alternative. A server
made with ``logprobs=False`` never sends them, as a provider without them.

``usage`` is filled with ``prompt_tokens`` = (characters of all message text)
// 4 and ``completion_tokens`` = (characters of the answer text) // 4, both at
least 1; ``total_tokens`` is their sum.

Example::

    with FakeOpenAIServer({"ok": True}, latency_s=0.05) as server:
        server.script(Fault.status(429, retry_after=1), {"ok": False})
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert len(server.requests) == 3
"""

from __future__ import annotations

import collections
import http.server
import itertools
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Fault", "FakeOpenAIServer", "Tokens"]

_DEFAULT_ERRORS = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    404: ("invalid_request_error", None, "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def _error_body(code: int, message: str | None = None) -> dict:
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
    ``"delay"``, ``"malformed"``, ``"invalid_json"`` or ``"truncated"``) and the
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


def _logprobs(text: str, tokens: "Tokens | None") -> dict:
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


class _Headers(dict):
    """Request headers keyed by lower-cased name; ``get`` is case-insensitive."""

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> Any:
        return dict.__getitem__(self, name.lower())


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes client connections itself
    request_queue_size = 1024  # listen backlog: many clients connect at once
    allow_reuse_address = True

    def __init__(self, owner: "FakeOpenAIServer"):
        self.owner = owner
        self.reset_sockets: set = set()
        self.open_sockets: set = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request, client_address):
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.sockets_lock:
            self.open_sockets.discard(request)
            reset = request in self.reset_sockets
            self.reset_sockets.discard(request)
        if reset:
            # No FIN first: close with SO_LINGER 0 so the peer sees a reset.
            self.close_request(request)
        else:
            super().shutdown_request(request)

    def handle_error(self, request, client_address):
        # Clients that hang up (timeouts, resets) are expected here.
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)

    def close_client_connections(self) -> None:
        with self.sockets_lock:
            socks = list(self.open_sockets)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
    sys_version = ""
    disable_nagle_algorithm = True
    wbufsize = 64 * 1024  # headers and body leave in one write (flushed per request)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def parse_request(self) -> bool:
        """A lean replacement of the stdlib's request parsing.

        The stdlib parses headers with the ``email`` package, which was about
        half of this server's CPU per request. Here: the request line, then
        ``Name: value`` lines up to the blank line, into a dict keyed by the
        lower-cased name. Sets ``command``, ``path``, ``request_version``,
        ``headers`` and ``close_connection`` as the stdlib does; answers 400
        and returns False on a malformed request.
        """
        self.command = None
        self.request_version = version = "HTTP/0.9"
        self.close_connection = True
        line = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = line
        parts = line.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.request_version = "HTTP/1.1"
            self.send_error(400, f"Bad request line {line!r}")
            return False
        self.command, self.path, version = parts
        self.request_version = version
        headers = _Headers()
        for _ in range(101):
            raw = self.rfile.readline(65537)
            if raw in (b"\r\n", b"\n", b""):
                break
            name, sep, value = str(raw, "iso-8859-1").partition(":")
            if not sep or len(raw) > 65536:
                self.send_error(400, "Bad header line")
                return False
            headers[name.strip().lower()] = value.strip()
        else:
            self.send_error(431, "Too many headers")
            return False
        self.headers = headers
        conn = headers.get("connection", "").lower()
        self.close_connection = conn == "close" or (version == "HTTP/1.0" and conn != "keep-alive")
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        return True

    # -- plumbing ---------------------------------------------------------
    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, obj: Any, headers: dict | None = None) -> None:
        self._send(code, json.dumps(obj).encode("utf-8"), headers=headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _path(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1") else path

    # -- endpoints --------------------------------------------------------
    def do_GET(self) -> None:
        if self._path() == "/models":
            self._send_json(200, {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "scorespec"}],
            })
        else:
            self._send_json(404, _error_body(404, f"No route GET {self.path}"))

    def do_POST(self) -> None:
        raw = self._read_body()
        if self._path() != "/chat/completions":
            self._send_json(404, _error_body(404, f"No route POST {self.path}"))
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._send_json(400, _error_body(400, "Request body is not valid JSON."))
            return
        if not isinstance(request, dict):
            self._send_json(400, _error_body(400, "Request body must be a JSON object."))
            return
        owner = self.server.owner
        owner._record(request)
        if request.get("stream"):
            self._send_json(400, _error_body(400, "FakeOpenAIServer does not support streaming."))
            return
        reply = owner._next_reply(request)
        if owner.latency_s > 0:
            time.sleep(owner.latency_s)
        self._answer(request, reply)

    def _answer(self, request: dict, reply: Any) -> None:
        owner = self.server.owner
        for _ in range(16):  # callables may return callables / delays
            if isinstance(reply, Fault) and reply.kind == "delay":
                time.sleep(reply.seconds)
                reply = reply.then if reply.then is not None else owner._fallback(request)
            elif callable(reply) and not isinstance(reply, Fault):
                reply = reply(request)
            else:
                break
        if reply is None:
            self._send_json(400, _error_body(
                400, "FakeOpenAIServer has no reply for this request: script() one or pass reply="))
            return
        if isinstance(reply, Fault):
            self._fault(request, reply)
        elif isinstance(reply, Tokens):
            self._send_json(200, owner._completion(request, reply.text, finish="stop", as_tool=False, tokens=reply))
        elif isinstance(reply, (dict, list)):
            self._send_json(200, owner._completion(request, json.dumps(reply), finish="stop"))
        elif isinstance(reply, str):
            self._send_json(200, owner._completion(request, reply, finish="stop", as_tool=False))
        else:
            raise TypeError(f"unsupported reply type {type(reply).__name__}")

    def _fault(self, request: dict, fault: Fault) -> None:
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = str(fault.retry_after)
            body = fault.body if fault.body is not None else _error_body(fault.code)
            if fault.echo_headers and fault.body is None:
                echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
                body["error"]["message"] += f" Request headers: {echoed}"
            if isinstance(body, (dict, list)):
                self._send_json(fault.code, body, headers=headers)
            else:
                data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
                self._send(fault.code, data, content_type="text/plain; charset=utf-8", headers=headers)
        elif fault.kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with self.server.sockets_lock:
                self.server.reset_sockets.add(self.connection)
            self.close_connection = True
        elif fault.kind == "malformed":
            self._send(200, fault.body, content_type=fault.content_type)
        elif fault.kind == "invalid_json":
            self._send_json(200, self.server.owner._completion(request, fault.answer, finish="stop"))
        elif fault.kind == "truncated":
            text = json.dumps(fault.answer) if not isinstance(fault.answer, str) else fault.answer
            self._send_json(200, self.server.owner._completion(request, text[: len(text) // 2], finish="length"))
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")


class FakeOpenAIServer:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

    Args:
        reply: the answer used once the script is empty: a constant reply or
            a callable ``request_json -> reply`` (see the module docstring).
            ``None`` (default) answers 400 "no reply" to unscripted requests.
        latency_s: seconds to wait before answering each chat completion
            (>= 0), simulated per request without blocking other connections.
        logprobs: answer a request asking for ``logprobs`` with them (see the
            module docstring); False: never, as a provider without them.

    Attributes:
        base_url: ``"http://127.0.0.1:PORT/v1"`` (after :meth:`start`).
        requests: every chat-completion request body received (parsed JSON),
            in arrival order. Appended under a lock; read it after the calls
            you are checking have returned.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. Measured
    here (2 cores): with ``latency_s=0.05`` an async client at concurrency 32
    gets about 600 requests/s, close to the 640/s ceiling the latency allows.
    """

    def __init__(self, reply: Any = None, *, latency_s: float = 0.0, logprobs: bool = True):
        if latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        self.reply = reply
        self.logprobs = logprobs
        self.latency_s = float(latency_s)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._script: collections.deque = collections.deque()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("FakeOpenAIServer already started")
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket and client connections."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_client_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAIServer not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ----------------------------------------------------------
    def script(self, *replies: Any) -> "FakeOpenAIServer":
        """Queue replies, consumed one per chat-completion request in arrival order.

        Once the queue is empty, the default ``reply`` answers. Returns self.
        """
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._script)

    # -- used by the handler --------------------------------------------------
    def _record(self, request: dict) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, request: dict) -> Any:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self._fallback(request)

    def _fallback(self, request: dict) -> Any:
        reply = self.reply
        return reply(request) if callable(reply) and not isinstance(reply, Fault) else reply

    def _completion(self, request: dict, text: str, *, finish: str, as_tool: bool = True,
                    tokens: Tokens | None = None) -> dict:
        """A chat.completion object carrying ``text`` as a tool call (if the
        request has tools and ``as_tool``) or as content (with its token
        probabilities when the request asks and the server gives them)."""
        n = next(self._ids)
        name = _tool_name(request) if as_tool else None
        if name is not None:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": f"call_fake_{n}",
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
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(request.get("model") or "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": _logprobs(text, tokens) if name is None and self.logprobs
                         and request.get("logprobs") else None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


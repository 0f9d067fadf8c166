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
  non-JSON body, malformed JSON in the answer's place, a truncated answer, or
  an answer stopped by a content filter (``finish_reason`` ``"content_filter"``).
- a :class:`Tokens`: content given token by token, each with its probability
  and the alternatives at its position (for label probabilities).
- a callable ``reply(request_json) -> reply``, called in the handler thread
  with the parsed request body (it must be thread-safe); its result may be any
  of the above. `by_model` makes one answering per requested model (a jury's
  jurors on one server, one of them down).

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
import itertools
import threading
from typing import Any

from .fake_http import FakeHTTPServer
from .fake_replies import Fault, Tokens, completion

__all__ = ["FakeOpenAIServer", "by_model"]


def by_model(replies: dict[str, Any], default: Any = None) -> Any:
    """A reply answering each request by its ``model`` (the provider's name: ``gpt-4o-mini`` for
    ``openai/gpt-4o-mini``) with ``replies[model]`` — any reply above, a callable included —, else
    `default` (None: an HTTP 400 naming the model). ``by_model({"a": {"ok": True}, "b":
    Fault.status(503, retry_after=0)})`` answers model ``a`` and keeps ``b`` down."""

    def reply(request: dict) -> Any:
        found = replies.get(request.get("model"), default)
        if found is None:
            return Fault.status(400, body={"error": {"message": f"no reply for model {request.get('model')!r}"}})
        return found(request) if callable(found) else found

    return reply


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
        rules: what a model family's server enforces and how it answers
            (`engine.testing.server_rules`: a reasoning model's refused
            parameters and reasoning tokens, a server refusing ``tools``, one
            sending no ``usage``); None: accept every request.

    Attributes:
        base_url: ``"http://127.0.0.1:PORT/v1"`` (after :meth:`start`).
        requests: every chat-completion request body received (parsed JSON),
            in arrival order. Appended under a lock; read it after the calls
            you are checking have returned.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. Measured
    here (2 cores): with ``latency_s=0.05`` an async client at concurrency 32
    gets about 600 requests/s, close to the 640/s ceiling the latency allows.
    """

    def __init__(self, reply: Any = None, *, latency_s: float = 0.0, logprobs: bool = True, rules: Any = None):
        if latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        self.reply = reply
        self.logprobs = logprobs
        self.rules = rules
        self.latency_s = float(latency_s)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._script: collections.deque = collections.deque()
        self._ids = itertools.count(1)
        self._server: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("FakeOpenAIServer already started")
        self._server = FakeHTTPServer(self)
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
        made = completion(request, text, number=next(self._ids), finish=finish, as_tool=as_tool, tokens=tokens,
                          logprobs=self.logprobs)
        return made if self.rules is None else self.rules.completed(request, made)

    def _refusal(self, request: dict) -> Any:
        """(status, body) for a request the server's `rules` refuse, else None."""
        return None if self.rules is None else self.rules.refusal(request)


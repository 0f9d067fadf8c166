"""The HTTP side of `engine.testing.fake_openai.FakeOpenAIServer`: a threading HTTP/1.1 server
with keep-alive, lean request parsing, the two endpoints and the faults (resets, bad bodies)
sent on the wire. The owner (the `FakeOpenAIServer`) chooses the replies and builds the
completions (`_record`, `_next_reply`, `_fallback`, `_completion`, `latency_s`).
"""

from __future__ import annotations

import http.server
import json
import socket
import struct
import threading
import time
from typing import Any

from .fake_replies import Fault, Tokens, error_body

__all__ = ["FakeHTTPServer"]

class _Headers(dict):
    """Request headers keyed by lower-cased name; ``get`` is case-insensitive."""

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> Any:
        return dict.__getitem__(self, name.lower())


class FakeHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes client connections itself
    request_queue_size = 1024  # listen backlog: many clients connect at once
    allow_reuse_address = True

    def __init__(self, owner: Any):
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
    server: FakeHTTPServer

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
            self._send_json(404, error_body(404, f"No route GET {self.path}"))

    def do_POST(self) -> None:
        raw = self._read_body()
        if self._path() != "/chat/completions":
            self._send_json(404, error_body(404, f"No route POST {self.path}"))
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._send_json(400, error_body(400, "Request body is not valid JSON."))
            return
        if not isinstance(request, dict):
            self._send_json(400, error_body(400, "Request body must be a JSON object."))
            return
        owner = self.server.owner
        owner._record(request)
        if request.get("stream"):
            self._send_json(400, error_body(400, "FakeOpenAIServer does not support streaming."))
            return
        refusal = owner._refusal(request)
        if refusal is not None:  # the server's rules refuse it: no scripted reply is used
            self._send_json(*refusal)
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
            self._send_json(400, error_body(
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
            body = fault.body if fault.body is not None else error_body(fault.code)
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
        elif fault.kind == "content_filter":
            text = json.dumps(fault.answer) if not isinstance(fault.answer, str) else fault.answer
            self._send_json(200, self.server.owner._completion(request, text, finish="content_filter"))
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")

"""The judge's wire path (`engine.judge.openai_path.WirePost`) beside the SDK's own request path
(``chat.completions.create`` through the same aiohttp HTTP client, or the SDK's default client),
on what a real server may send: compressed bodies and error bodies, odd encodings, keys and
headers the client cannot send. Each test states what the SDK's path does and expects the wire
path to do the same; where the judge deliberately differs (a body that is not JSON), the test
checks both paths do the same thing."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import json
import threading
import zlib

import openai
import pytest

from engine.judge.clients import hosted_judge
from engine.judge.openai_path import direct_create, http_client

MESSAGES = [{"role": "system", "content": "You judge claims."}, {"role": "user", "content": "CLAIM: the sky is green."}]


class _Server:
    """A one-answer HTTP server on 127.0.0.1: every POST gets `answer(body) -> (status, headers, bytes)`."""

    def __init__(self, answer):
        seen = self.headers = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen.append({k.lower(): v for k, v in self.headers.items()})
                status, headers, content = answer(body)
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def _tool_answer(body: bytes) -> dict:
    request = json.loads(body)
    arguments = json.dumps({"verdict": "no", "reason": "It is blue."})
    if request.get("tools"):
        name = request["tools"][0]["function"]["name"]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": arguments}, "stop"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "judge-model",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}


def _error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": code}}).encode()


async def _outcome(base_url: str, *, wire: bool, api_key: str = "sk-test", **client_kwargs):
    """What ``chat.completions.create`` returned or raised, through the wire path or the SDK's own
    create on the same aiohttp http client."""
    client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=10,
                                http_client=http_client(10), **client_kwargs)
    if wire:
        direct_create(client.chat.completions)
    try:
        return await client.chat.completions.create(model="judge-model", messages=MESSAGES)
    except Exception as exc:
        return exc
    finally:
        await client.close()


def _both(base_url: str, **kwargs):
    return asyncio.run(_outcome(base_url, wire=True, **kwargs)), asyncio.run(_outcome(base_url, wire=False, **kwargs))


def _judge_failure(base_url: str, api_key: str = "sk-test"):
    from test_openai_path import _ask_and_close, _call

    judge = hosted_judge("openai/judge-model", base_url=base_url, api_key=api_key, timeout_s=10)
    with pytest.raises(Exception) as raised:
        asyncio.run(_ask_and_close(judge, _call()))
    return raised.value


@pytest.mark.parametrize("encode", [gzip.compress, zlib.compress], ids=["gzip", "deflate"])
@pytest.mark.parametrize(("status", "error"), [(429, openai.RateLimitError), (401, openai.AuthenticationError),
                                                (400, openai.BadRequestError)])
def test_a_compressed_error_body_raises_the_sdks_status_error(encode, status, error):
    # a proxy or server that compresses its error responses (the client asks for gzip, deflate)
    encoding = "gzip" if encode is gzip.compress else "deflate"
    answer = (status, [("Content-Type", "application/json"), ("Content-Encoding", encoding), ("Retry-After", "3")],
              encode(_error("rate_limit_exceeded", "Slow down.")))
    with _Server(lambda body: answer) as server:
        through_wire, through_sdk = _both(server.base_url)
    assert isinstance(through_sdk, error) and through_sdk.body["message"] == "Slow down."
    assert type(through_wire) is type(through_sdk), repr(through_wire)
    assert through_wire.body == through_sdk.body


def test_the_judge_retries_a_gzipped_rate_limit_after_its_retry_after():
    answer = (429, [("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Retry-After", "3")],
              gzip.compress(_error("rate_limit_exceeded", "Slow down.")))
    with _Server(lambda body: answer) as server:
        failure = _judge_failure(server.base_url)
    assert failure.kind == "transport", f"{failure.kind}: {failure}"
    assert failure.retry_after == 3.0


def test_a_gzipped_context_length_refusal_is_prompt_too_long():
    answer = (400, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
              gzip.compress(_error("context_length_exceeded", "This model's maximum context length is 8 tokens.")))
    with _Server(lambda body: answer) as server:
        failure = _judge_failure(server.base_url)
    assert failure.kind == "prompt_too_long", f"{failure.kind}: {failure}"


def test_a_request_aiohttp_refuses_to_send_is_the_sdks_connection_error():
    # credentials in the base URL: aiohttp refuses to combine them with the bearer header (ValueError);
    # the SDK's path turns any failure to send into APIConnectionError (a transport failure)
    with _Server(lambda body: (200, [("Content-Type", "application/json")], json.dumps(_tool_answer(body)).encode()))\
            as server:
        base_url = server.base_url.replace("http://", "http://user:pass@")
        through_wire, through_sdk = _both(base_url)
    assert isinstance(through_sdk, openai.APIConnectionError)
    assert type(through_wire) is type(through_sdk), repr(through_wire)


def test_an_api_key_with_a_line_break_is_a_connection_error_as_through_the_sdk():
    with _Server(lambda body: (200, [("Content-Type", "application/json")], json.dumps(_tool_answer(body)).encode()))\
            as server:
        through_wire, through_sdk = _both(server.base_url, api_key="sk-a\nX-Injected: 1")
    assert isinstance(through_sdk, openai.APIConnectionError)
    assert type(through_wire) is type(through_sdk), repr(through_wire)


def test_a_non_ascii_api_key_fails_the_call_not_the_judges_construction():
    with _Server(lambda body: (200, [("Content-Type", "application/json")], json.dumps(_tool_answer(body)).encode()))\
            as server:
        failure = _judge_failure(server.base_url, api_key="sk-t\u00e9st")  # the SDK's path: a ScorerRunError from ask
    assert getattr(failure, "kind", None) == "judge", repr(failure)


def test_a_200_html_page_is_a_transport_failure_on_either_path(monkeypatch):
    # a proxy's or captive portal's page is no answer of the judge's: retried, then a transport
    # failure, never re-asked as if the judge had written it; the same without the wire path
    from engine.judge.openai_path import WirePost

    answer = (200, [("Content-Type", "text/html")], b"<html>captive portal</html>")
    with _Server(lambda body: answer) as server:
        through_wire = _judge_failure(server.base_url)
        monkeypatch.setattr(WirePost, "for_client", classmethod(lambda cls, client, auth: None))
        through_sdk = _judge_failure(server.base_url)
    assert through_wire.kind == through_sdk.kind == "transport", f"{through_wire!r} {through_sdk!r}"
    assert "not valid JSON" in through_wire.message and "not valid JSON" in through_sdk.message


def test_a_response_with_two_content_encodings_is_read_as_through_the_sdk():
    with _Server(lambda body: (200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip, identity")],
                               gzip.compress(json.dumps(_tool_answer(body)).encode()))) as server:
        through_wire, through_sdk = _both(server.base_url)
    assert isinstance(through_sdk, openai.types.chat.ChatCompletion)
    assert isinstance(through_wire, openai.types.chat.ChatCompletion), repr(through_wire)


def test_the_clients_accept_encoding_header_is_sent():
    with _Server(lambda body: (200, [("Content-Type", "application/json")], json.dumps(_tool_answer(body)).encode()))\
            as server:
        _both(server.base_url, default_headers={"Accept-Encoding": "identity"})
        through_wire, through_sdk = server.headers
    assert through_sdk["accept-encoding"] == "identity"
    assert through_wire["accept-encoding"] == through_sdk["accept-encoding"]

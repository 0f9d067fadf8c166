"""End-to-end tests of engine.testing.fake_openai with the real openai client."""

import http.client
import json
import threading
import urllib.error
import urllib.request

import instructor
import openai
import pytest
from instructor.core import IncompleteOutputException
from pydantic import BaseModel

from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault


class Verdict(BaseModel):
    verdict: str
    score: float


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def make_client(server, **kw):
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, **kw)


def ask(client, text="Is the sky blue?", **kw):
    return client.chat.completions.create(
        model="judge-1", messages=[{"role": "user", "content": text}], **kw)


def test_instructor_tools_mode(server):
    server.script({"verdict": "yes", "score": 0.75})
    client = instructor.from_openai(make_client(server), mode=instructor.Mode.TOOLS)
    out = client.chat.completions.create(
        model="judge-1", response_model=Verdict, max_retries=0,
        messages=[{"role": "user", "content": "Judge this answer please."}])
    assert isinstance(out, Verdict)
    assert out.model_dump() == {"verdict": "yes", "score": 0.75}
    (req,) = server.requests
    assert req["model"] == "judge-1"
    assert req["tools"][0]["function"]["name"] == "Verdict"
    assert req["messages"][-1]["content"] == "Judge this answer please."


def test_tool_call_shape(server):
    server.script({"a": 1})
    tools = [{"type": "function", "function": {"name": "emit", "parameters": {"type": "object"}}}]
    resp = ask(make_client(server), tools=tools)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "emit"
    assert json.loads(call.function.arguments) == {"a": 1}
    assert resp.usage.prompt_tokens == len("Is the sky blue?") // 4
    assert resp.usage.completion_tokens == len('{"a": 1}') // 4
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_plain_content_json_and_text(server):
    server.script({"claims": ["a", "b"]}, "I cannot help with that.", '{"claims": [')
    client = make_client(server)
    first = ask(client)
    assert first.choices[0].finish_reason == "stop"
    assert json.loads(first.choices[0].message.content) == {"claims": ["a", "b"]}
    assert first.choices[0].message.tool_calls is None
    assert ask(client).choices[0].message.content == "I cannot help with that."
    assert ask(client).choices[0].message.content == '{"claims": ['
    assert server.pending == 0


def test_default_reply_callable_and_constant():
    def by_stage(req):
        text = req["messages"][-1]["content"]
        return {"stage": "claims"} if text.startswith("extract") else {"stage": "verdicts"}

    with FakeOpenAIServer(by_stage) as s:
        c = make_client(s)
        assert json.loads(ask(c, "extract claims").choices[0].message.content) == {"stage": "claims"}
        assert json.loads(ask(c, "judge claims").choices[0].message.content) == {"stage": "verdicts"}
        s.script(Fault.status(503))
        with pytest.raises(openai.InternalServerError):
            ask(c)
        assert json.loads(ask(c, "extract").choices[0].message.content) == {"stage": "claims"}
    with FakeOpenAIServer([1, 2]) as s:
        assert json.loads(ask(make_client(s)).choices[0].message.content) == [1, 2]


def test_no_reply_is_a_clear_400(server):
    with pytest.raises(openai.BadRequestError, match="no reply"):
        ask(make_client(server))


def test_rate_limit_with_retry_after(server):
    server.script(Fault.status(429, retry_after=7))
    with pytest.raises(openai.RateLimitError) as info:
        ask(make_client(server))
    err = info.value
    assert err.status_code == 429
    assert err.response.headers["retry-after"] == "7"
    assert err.body["code"] == "rate_limit_exceeded"


def test_server_errors(server):
    server.script(Fault.status(500), Fault.status(502, body="upstream down"))
    client = make_client(server)
    with pytest.raises(openai.InternalServerError) as info:
        ask(client)
    assert info.value.status_code == 500
    assert info.value.body["type"] == "server_error"
    with pytest.raises(openai.InternalServerError) as info:
        ask(client)
    assert info.value.status_code == 502
    assert info.value.response.text == "upstream down"


def test_reset_is_a_connection_error(server):
    server.script(Fault.reset(), {"ok": True})
    client = make_client(server)
    with pytest.raises(openai.APIConnectionError):
        ask(client)
    # The next request (new connection) is answered normally.
    assert json.loads(ask(client).choices[0].message.content) == {"ok": True}
    assert len(server.requests) == 2


def test_delay_times_out_the_client(server):
    server.script(Fault.delay(2.0, then={"late": True}), Fault.delay(0.05, then={"late": False}))
    with pytest.raises(openai.APITimeoutError):
        ask(make_client(server, timeout=0.3))
    resp = ask(make_client(server, timeout=5))
    assert json.loads(resp.choices[0].message.content) == {"late": False}


def test_malformed_body(server):
    server.script(Fault.malformed_body())
    # openai 3.x lets the JSON decoding error through unwrapped.
    with pytest.raises(json.JSONDecodeError):
        ask(make_client(server))
    assert len(server.requests) == 1


def test_truncated_answer(server):
    answer = {"claims": ["the sky is blue", "grass is green"]}
    server.script(Fault.truncated(answer), Fault.truncated(answer))
    client = make_client(server)
    resp = ask(client)
    text = json.dumps(answer)
    assert resp.choices[0].finish_reason == "length"
    assert resp.choices[0].message.content == text[: len(text) // 2]
    inst = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
    with pytest.raises(IncompleteOutputException):
        inst.chat.completions.create(model="judge-1", response_model=Verdict, max_retries=0,
                                     messages=[{"role": "user", "content": "x"}])


def test_invalid_json_goes_where_the_answer_goes(server):
    server.script(Fault.invalid_json('{"verdict": "yes", "sco'), Fault.invalid_json("{oops"))
    client = make_client(server)
    tools = [{"type": "function", "function": {"name": "Verdict", "parameters": {"type": "object"}}}]
    resp = ask(client, tools=tools)
    call = resp.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("Verdict", '{"verdict": "yes", "sco')
    assert resp.choices[0].finish_reason == "tool_calls"
    plain = ask(client)
    assert (plain.choices[0].message.content, plain.choices[0].finish_reason) == ("{oops", "stop")


def test_models_and_requests_log(server):
    server.script({"n": 1}, {"n": 2})
    client = make_client(server)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    ask(client, "first")
    ask(client, "second")
    assert [r["messages"][0]["content"] for r in server.requests] == ["first", "second"]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(server.base_url + "/nope", timeout=5)
    err = info.value
    body = err.read()
    assert err.code == 404
    assert err.headers["content-type"] == "application/json"
    assert int(err.headers["content-length"]) == len(body)
    assert json.loads(body)["error"]["type"] == "invalid_request_error"


def test_keep_alive_and_stop():
    with FakeOpenAIServer({"x": 1}) as s:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        socks = set()
        for _ in range(3):
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            assert r.status == 200
            assert r.version == 11
            assert r.getheader("content-length") == str(len(data))
            assert json.loads(data)["choices"][0]["message"]["content"] == '{"x": 1}'
            socks.add(id(conn.sock))
        assert len(socks) == 1  # one connection reused
        port = s.port
    conn.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)


def test_concurrent_requests_overlap():
    """All 32 requests of a gather are in the server at once: each is held until the last one
    arrives (a server answering one at a time would hold the first for ever: the test's timeout
    would stop it)."""
    import asyncio

    n = 32
    lock, everyone_in = threading.Lock(), threading.Event()
    inside = {"now": 0, "peak": 0}

    def reply(req):
        with lock:
            inside["now"] += 1
            inside["peak"] = max(inside["peak"], inside["now"])
            if inside["now"] == n:
                everyone_in.set()
        everyone_in.wait()
        with lock:
            inside["now"] -= 1
        return {"echo": req["messages"][0]["content"]}

    async def main(base_url):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=120)
        try:
            return await asyncio.gather(*[
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"item {i}"}])
                for i in range(n)])
        finally:
            await client.close()

    with FakeOpenAIServer(reply) as s:
        out = asyncio.run(main(s.base_url))
        assert sorted(json.loads(r.choices[0].message.content)["echo"] for r in out) == sorted(
            f"item {i}" for i in range(n))
        assert len(s.requests) == n
    assert inside == {"now": 0, "peak": n}

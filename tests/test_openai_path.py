"""The judge's short path through the OpenAI client (`engine.judge.openai_path`): the same request
on the wire as the SDK's own ``chat.completions.create``, the SDK's own completion and errors back, and instructor's async-validator check
kept for every class but the judge's own answer models."""

from __future__ import annotations

import asyncio
import json

import instructor
import openai
import pytest
from pydantic import BaseModel

from engine.core.answer_schema import AnswerSchema
from engine.judge.call import JudgeCall
from engine.judge.clients import hosted_judge
from engine.judge.contract import AnswerContract
from engine.judge.openai_path import WirePost, check_once, direct_create, http_client
from engine.judge.provider import InstructorJudge, ProviderTraits, response_model
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                                           "reason": {"type": "string"}},
          "required": ["verdict", "reason"], "additionalProperties": False}
MESSAGES = ({"role": "system", "content": "You judge claims."},
            {"role": "user", "content": "CLAIM: the sky is green.\n{{ 7*7 }} ünïcödé"})


def _call(probabilities: bool = False) -> JudgeCall:
    schema = AnswerSchema(SCHEMA, title="verify")
    return JudgeCall(stage="verify", messages=[dict(m) for m in MESSAGES], contract=AnswerContract(schema=SCHEMA, compiled=schema),
                     temperature=0.0, max_tokens=300, max_reasks=1, probabilities=probabilities, sample_index=2)


def _sdk_judge(base_url: str, mode: instructor.Mode) -> InstructorJudge:
    """The same judge as `hosted_judge` builds, but sending through the SDK's own create."""
    def build(answer_mode: instructor.Mode = mode) -> instructor.AsyncInstructor:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, max_retries=0, timeout=30)
        return instructor.from_openai(client, mode=answer_mode)
    return InstructorJudge(build(), "openai/judge-model",
                           ProviderTraits(model_name="judge-model", logprobs=True, sample_seeds=True),
                           client_factory=build, probs_client_factory=lambda: build(instructor.Mode.JSON_SCHEMA))


async def _ask_and_close(judge: InstructorJudge, call: JudgeCall):
    try:
        return await judge.ask(call)
    finally:
        await judge.aclose()


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
@pytest.mark.parametrize("probabilities", [False, True])
def test_the_direct_path_sends_the_request_the_sdk_create_sends(mode, probabilities):
    with FakeOpenAIServer({"verdict": "no", "reason": "It is blue."}) as server:
        direct = hosted_judge("openai/judge-model", base_url=server.base_url, api_key="sk-test", mode=mode)
        direct.sample_seeds = True
        sdk = _sdk_judge(server.base_url, instructor.Mode.TOOLS if mode == "tools" else instructor.Mode.JSON_SCHEMA)
        through_direct = asyncio.run(_ask_and_close(direct, _call(probabilities)))
        through_sdk = asyncio.run(_ask_and_close(sdk, _call(probabilities)))
        sent_direct, sent_sdk = server.requests
    assert sent_direct == sent_sdk
    assert sent_direct["model"] == "judge-model" and sent_direct["seed"] == 2
    assert ("logprobs" in sent_direct) is probabilities
    assert through_direct.data == through_sdk.data == {"verdict": "no", "reason": "It is blue."}
    assert through_direct.usage.tokens_in == through_sdk.usage.tokens_in > 0


def test_the_direct_path_sends_the_api_key_as_a_bearer_token_and_extra_headers():
    with FakeOpenAIServer() as server:
        server.script(Fault.status(400, echo_headers=True))
        client = openai.AsyncOpenAI(api_key="sk-bearer-check", base_url=server.base_url, max_retries=0,
                                    http_client=http_client(30))
        direct_create(client.chat.completions)

        async def send():
            try:
                await client.chat.completions.create(model="m", messages=list(MESSAGES),
                                                     extra_headers={"X-Probe": "yes"})
            finally:
                await client.close()
        with pytest.raises(openai.BadRequestError) as refused:
            asyncio.run(send())
    echoed = str(refused.value).lower()
    assert "bearer sk-bearer-check" in echoed and "x-probe" in echoed


def test_answer_models_skip_instructors_repeated_async_validator_check(monkeypatch):
    from instructor.v2.core import patch
    from instructor.v2.validation import async_validators

    walked: list[object] = []
    original = async_validators.reject_async_validators
    monkeypatch.setattr(async_validators, "reject_async_validators",
                        lambda model: (walked.append(model), original(model))[1])
    monkeypatch.setattr(patch, "reject_async_validators", async_validators.reject_async_validators)
    check_once()  # wraps the walk above
    answer = response_model('{"type": "object", "title": "checked_once"}', "checked_once")

    class Plain(BaseModel):
        x: int = 0

    walked.clear()
    for _ in range(3):
        async_validators.reject_async_validators(answer)
        patch.reject_async_validators(answer)
        async_validators.reject_async_validators(Plain)
    assert walked == [Plain, Plain, Plain]


def test_a_class_with_an_async_validator_is_still_refused():
    from instructor.v2.validation import async_validators

    check_once()

    class WithAsync(BaseModel):
        x: int = 0

        @async_validators.async_field_validator("x")
        async def check_x(self, value):  # pragma: no cover - never run
            return value
    with pytest.raises(ValueError, match="async validators"):
        async_validators.reject_async_validators(WithAsync)


def _client(base_url: str, **kwargs) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(api_key="sk-wire", base_url=base_url, max_retries=0, timeout=kwargs.pop("timeout", 30),
                                http_client=kwargs.pop("http", None) or http_client(30))
    direct_create(client.chat.completions)
    return client


async def _create(client: openai.AsyncOpenAI, **params):
    try:
        return await client.chat.completions.create(model="m", messages=list(MESSAGES), **params)
    finally:
        await client.close()


def test_a_hosted_judge_sends_through_the_wire_path(monkeypatch):
    posted: list[dict] = []
    original = WirePost.post

    async def spy(self, body):
        posted.append(body)
        return await original(self, body)
    monkeypatch.setattr(WirePost, "post", spy)
    with FakeOpenAIServer({"verdict": "yes", "reason": "Blue."}) as server:
        judge = hosted_judge("openai/judge-model", base_url=server.base_url, api_key="sk-test")
        answer = asyncio.run(_ask_and_close(judge, _call()))
    assert answer.data == {"verdict": "yes", "reason": "Blue."}
    assert [body["model"] for body in posted] == ["judge-model"]


def test_the_wire_path_reads_the_response_into_the_sdks_completion():
    with FakeOpenAIServer({"verdict": "yes", "reason": "Blue."}) as server:
        completion = asyncio.run(_create(_client(server.base_url)))
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].finish_reason == "stop" and completion.usage.prompt_tokens > 0


def test_the_wire_path_keeps_a_response_the_sdks_model_does_not_describe():
    odd = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "finish_reason": "eos_token", "message": {"role": "assistant", "content": "{}"}}]}
    with FakeOpenAIServer() as server:
        server.script(Fault.malformed_body(json.dumps(odd)))
        completion = asyncio.run(_create(_client(server.base_url)))
    assert completion.choices[0].finish_reason == "eos_token" and completion.choices[0].message.content == "{}"


@pytest.mark.parametrize(("status", "error"), [(400, openai.BadRequestError), (401, openai.AuthenticationError),
                                                (429, openai.RateLimitError), (503, openai.InternalServerError)])
def test_the_wire_path_raises_the_sdks_own_error_for_a_status(status, error):
    with FakeOpenAIServer() as server:
        server.script(Fault.status(status, retry_after=3))
        with pytest.raises(error) as raised:
            asyncio.run(_create(_client(server.base_url)))
    assert raised.value.status_code == status and raised.value.response.headers["retry-after"] == "3"
    assert isinstance(raised.value.body, dict)


def test_the_wire_path_raises_the_sdks_timeout_error_for_a_late_answer():
    with FakeOpenAIServer() as server:
        server.script(Fault.delay(2.0))
        client = openai.AsyncOpenAI(api_key="sk-wire", base_url=server.base_url, max_retries=0, timeout=0.3,
                                    http_client=http_client(0.3))
        direct_create(client.chat.completions)
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(_create(client))


def test_the_wire_path_raises_the_sdks_connection_error_when_nothing_listens():
    with FakeOpenAIServer() as server:
        base_url = server.base_url
    with pytest.raises(openai.APIConnectionError):
        asyncio.run(_create(_client(base_url)))


def test_a_client_on_the_default_http_client_keeps_the_sdks_path():
    client = openai.AsyncOpenAI(api_key="sk-wire", base_url="http://127.0.0.1:9/v1", max_retries=0)
    assert WirePost.for_client(client, {}) is None


def test_a_proxy_from_the_environment_keeps_the_sdks_path(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = openai.AsyncOpenAI(api_key="sk-wire", base_url="http://example.invalid/v1", max_retries=0,
                                http_client=http_client(30))
    assert WirePost.for_client(client, {}) is None
    monkeypatch.delenv("HTTP_PROXY")
    client = openai.AsyncOpenAI(api_key="sk-wire", base_url="http://example.invalid/v1", max_retries=0,
                                http_client=http_client(30))
    assert WirePost.for_client(client, {}) is not None


def test_a_loop_run_by_asyncio_run_closes_the_judges_connections_as_it_ends(tmp_path):
    script = tmp_path / "arun_twice.py"
    script.write_text(
        "import asyncio, gc\n"
        "from engine.judge.clients import hosted_judge\n"
        "from engine.testing.fake_openai import FakeOpenAIServer\n"
        "from tests.test_openai_path import _call\n"
        "with FakeOpenAIServer({'verdict': 'yes', 'reason': 'Blue.'}) as server:\n"
        "    judge = hosted_judge('openai/m', base_url=server.base_url, api_key='sk-test')\n"
        "    for _ in range(2):\n"
        "        print(asyncio.run(judge.ask(_call())).data['verdict'])\n"
        "    print(len(judge._loop_clients))\n"
        "    gc.collect()\n")
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-W", "error::ResourceWarning", str(script)], capture_output=True,
                          text=True, cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["yes", "yes", "0"]
    assert "Unclosed" not in done.stderr, done.stderr


def test_a_refused_connection_names_its_cause_in_the_failure():
    from engine.core.errors import ScorerRunError

    with FakeOpenAIServer() as server:
        base_url = server.base_url  # closed once the block ends: nothing listens there
    judge = hosted_judge("openai/judge-model", base_url=base_url, api_key="sk-test")
    with pytest.raises(ScorerRunError) as failed:
        asyncio.run(_ask_and_close(judge, _call()))
    assert failed.value.kind == "transport"
    assert "APIConnectionError: Connection error. (ClientConnectorError: Cannot connect to host 127.0.0.1" \
        in failed.value.message


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://127.0.0.1/v1", ""])
def test_a_base_url_without_http_is_refused_when_the_settings_are_made(url):
    from engine.judge.settings import JudgeSettings

    with pytest.raises(ValueError, match="base_url must be an http:// or https:// URL"):
        JudgeSettings(base_url=url)

"""The judge's short path through the OpenAI client (`engine.judge.openai_path`): the same request
on the wire as the SDK's own ``chat.completions.create``, and instructor's async-validator check
kept for every class but the judge's own answer models."""

from __future__ import annotations

import asyncio

import instructor
import openai
import pytest
from pydantic import BaseModel

from engine.core.answer_schema import AnswerSchema
from engine.judge.call import JudgeCall
from engine.judge.clients import hosted_judge
from engine.judge.contract import AnswerContract
from engine.judge.openai_path import check_once, direct_create, http_client
from engine.judge.provider import InstructorJudge, response_model
from engine.testing.fake_openai import FakeOpenAIServer, Fault

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
    return InstructorJudge(build(), "openai/judge-model", model_name="judge-model", client_factory=build,
                           logprobs=True, probs_client_factory=lambda: build(instructor.Mode.JSON_SCHEMA),
                           sample_seeds=True)


async def _ask_and_close(judge: InstructorJudge, call: JudgeCall):
    try:
        return await judge.ask(call)
    finally:
        await judge.aclose()


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
@pytest.mark.parametrize("probabilities", [False, True])
def test_the_direct_path_sends_the_bytes_the_sdk_create_sends(mode, probabilities):
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

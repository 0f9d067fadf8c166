"""Judges on today's models: each family's request rules, reasoning budgets and tokens, reasoning
effort, usage a server does not report, answers that are not chat completions.

The reasoning server (`engine.testing.server_rules.ReasoningRules`) enforces what OpenAI's
reasoning-models guide (developers.openai.com/api/docs/guides/reasoning) and its chat-completions
reference say of the gpt-5 and o series: ``max_tokens`` refused ("Use 'max_completion_tokens'
instead"), ``temperature``/``top_p`` other than 1 refused, ``logprobs`` refused, reasoning tokens
spent before the answer and reported in ``usage.completion_tokens_details.reasoning_tokens`` (and
counted in ``completion_tokens``), an answer whose room reasoning used up sent empty with
``finish_reason: length``.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

import engine.cli.doctor  # noqa: F401  (registers doctor)
import engine.cli.eval  # noqa: F401  (registers eval)
from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.cli.main import app
from engine.core.answer_schema import AnswerSchema
from engine.core.result import Usage
from engine.core.sync import run_sync
from engine.interpret.scorer import OptionError
from engine.judge.call import JudgeCall
from engine.judge.contract import AnswerContract
from engine.judge.model_params import DEFAULT_REASONING_TOKENS, family_of
from engine.judge.retries import RetryPolicy
from engine.judge.settings import JudgeSettings
from engine.run.budget import Budget
from engine.run.prices import PriceTable, cost_of, load_prices
from engine.testing import FakeOpenAIServer, Fault
from engine.testing.schema_answers import schema_reply
from engine.testing.server_rules import NoToolsRules, NotCompletionRules, NoUsageRules, ReasoningRules

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None,
       "SCORESPEC_MODEL_FAMILY": None}
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["verdict"]}
FAITHFUL = {"output": "Paris is in France.", "context": ["Paris is the capital of France."]}


def judge_for(server: FakeOpenAIServer, model: str = "openai/gpt-5-mini", **settings):
    return make_judge(model, base_url=server.base_url, api_key="test", retry=RetryPolicy(max_retries=2, base_s=0.01),
                      **settings)


def call(**changes) -> JudgeCall:
    contract = AnswerContract.of(AnswerSchema(SCHEMA, "verify"), (), {}, ())
    return JudgeCall("verify", [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "Is it?"}],
                     contract, 2, changes.pop("temperature", 0.0), 256, **changes)


def ask(judge, the_call: JudgeCall):
    async def go():
        try:
            return await judge.ask(the_call)
        finally:
            await judge.aclose()
    return run_sync(go())


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})


# --- the request each family accepts ---------------------------------------------------------

def test_reasoning_model_is_asked_without_refused_parameters():
    rules = ReasoningRules()
    with FakeOpenAIServer(schema_reply, rules=rules) as server:
        result = load_scorer("faithfulness", judge=judge_for(server)).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert result.score == 1.0
    assert rules.refusals == []
    for request in server.requests:
        assert "max_tokens" not in request and "temperature" not in request and "logprobs" not in request
    # the stage's max_tokens (the answer's room) plus the default reasoning budget
    assert server.requests[0]["max_completion_tokens"] == 2048 + DEFAULT_REASONING_TOKENS


def test_chat_model_request_is_byte_for_byte_what_it_was():
    # captured from the engine before model families existed (same call, same server)
    expected = [
        '{"messages": [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "Is it?"}], '
        '"temperature": 0.0, "max_tokens": 256, "model": "gpt-4o-mini", "tools": [{"type": "function", "function": '
        '{"name": "verify", "description": "The answer to stage verify.", "parameters": {"type": "object", '
        '"properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}}, "required": ["verdict"]}}}], '
        '"tool_choice": {"type": "function", "function": {"name": "verify"}}}',
        '{"messages": [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "Is it?"}], '
        '"temperature": 0.0, "max_tokens": 256, "model": "gpt-4o-mini", "logprobs": true, "top_logprobs": 20, '
        '"response_format": {"type": "json_schema", "json_schema": {"name": "verify", "schema": {"type": "object", '
        '"properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}}, "required": ["verdict"], '
        '"title": "verify"}}}}',
    ]
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        ask(judge_for(server, "openai/gpt-4o-mini"), call())
        ask(judge_for(server, "openai/gpt-4o-mini"), call(probabilities=True))
    assert [json.dumps(r) for r in server.requests] == expected


def test_chat_model_cache_keys_are_those_of_before():
    judge = make_judge("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    identity = judge.provider.cache_identity
    # keys computed by the engine before model families existed
    assert identity.call_identity(call()).key() == "96793625c2de294027da9737c634c67f44d04daa313b2b42ea6a438ee64cd7ec"
    assert identity.call_identity(call(probabilities=True)).key() == \
        "fa6984e66b05a245d6c71108bca21f71bf06ca726bbe651e9d5ac345101cc54e"


def test_reasoning_effort_is_sent_and_keys_the_call_apart():
    with FakeOpenAIServer({"verdict": "yes"}, rules=ReasoningRules()) as server:
        judge = judge_for(server)
        ask(judge, call(reasoning_effort="low"))
    assert server.requests[0]["reasoning_effort"] == "low"
    identity = judge.provider.cache_identity
    keys = {identity.call_identity(call(reasoning_effort=e)).key() for e in (None, "low", "high")}
    assert len(keys) == 3


def test_unknown_model_is_a_chat_model_unless_declared(monkeypatch):
    assert family_of("openai/my-own-model") == "chat"
    assert family_of("openai/gpt-5-mini") == "reasoning"
    assert family_of("openai/o4-mini") == "reasoning"
    assert family_of("openai/gpt-5-chat-latest") == "chat"
    with FakeOpenAIServer({"verdict": "yes"}, rules=ReasoningRules()) as server:
        with pytest.raises(Exception, match="Use 'max_completion_tokens' instead"):  # asked as chat: refused
            ask(judge_for(server, "openai/my-own-model"), call())
        declared = ask(judge_for(server, "openai/my-own-model", family="reasoning"), call())
        monkeypatch.setenv("SCORESPEC_MODEL_FAMILY", "reasoning")
        from_env = ask(judge_for(server, "openai/my-own-model"), call())
    assert declared.data == {"verdict": "yes"} and from_env.data == {"verdict": "yes"}
    assert "max_completion_tokens" in server.requests[-1]


def test_an_unknown_family_is_refused_by_the_settings():
    with pytest.raises(ValueError, match="unknown model family 'reasonin'"):
        JudgeSettings(family="reasonin")


def test_spec_judge_block_declares_effort_and_family(tmp_path):
    spec = tmp_path / "scorer_specs" / "careful.yaml"
    spec.parent.mkdir()
    spec.write_text("format: 1\nid: careful\nextends: faithfulness\njudge:\n  reasoning_effort: low\n"
                    "  family: reasoning\n  reasoning_tokens: 1000\n", encoding="utf-8")
    rules = ReasoningRules()
    with FakeOpenAIServer(schema_reply, rules=rules) as server:
        judge = judge_for(server, "openai/house-model")
        result = load_scorer(str(spec), judge=judge).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert {r["reasoning_effort"] for r in server.requests} == {"low"}
    assert server.requests[0]["max_completion_tokens"] == 2048 + 1000
    assert result.stages["preprocess"].reasoning_effort == "low"
    assert json.loads(result.model_dump_json())["stages"]["preprocess"]["reasoningEffort"] == "low"


def test_option_sets_reasoning_effort_on_every_stage():
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules()) as server:
        scorer = load_scorer("faithfulness", judge=judge_for(server), options={"judge.reasoning_effort": "high"})
        assert scorer.run(**FAITHFUL).status == "scored"
    assert {r["reasoning_effort"] for r in server.requests} == {"high"}
    with pytest.raises(OptionError, match="'judge.reasoning_effort': 'hard' is not a reasoning effort"):
        load_scorer("faithfulness", options={"judge.reasoning_effort": "hard"}, model="openai/gpt-5-mini")


# --- room for reasoning, and its tokens ------------------------------------------------------

def test_answer_cut_off_by_reasoning_fails_as_truncated_naming_the_budget():
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules(spent={None: 10**6})) as server:
        result = load_scorer("faithfulness", judge=judge_for(server)).run(**FAITHFUL)
    assert result.status == "failed"
    assert result.error.kind == "truncated"
    assert "judge.reasoning_tokens=4096" in result.error.message
    assert f"max_completion_tokens={2048 + 4096}" in result.error.message


def test_reasoning_tokens_are_output_tokens_and_shown_apart():
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules(spent={None: 300})) as server:
        result = load_scorer("faithfulness", judge=judge_for(server)).run(**FAITHFUL)
    calls = result.usage.calls
    assert result.usage.reasoning_tokens == 300 * calls
    assert result.usage.tokens_out > result.usage.reasoning_tokens  # the answers' tokens on top
    assert json.loads(result.model_dump_json())["usage"]["reasoningTokens"] == 300 * calls
    assert load_prices(None).cost("openai/gpt-5-mini", result.usage) == pytest.approx(
        (result.usage.tokens_in * 0.25 + result.usage.tokens_out * 2.0) / 1e6)


def test_samples_on_a_fixed_temperature_model_are_drawn_at_one():
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules()) as server:
        scorer = load_scorer("faithfulness_quick", judge=judge_for(server)).with_samples(3)
        result = scorer.run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert all("temperature" not in r for r in server.requests)
    assert any(record.sampled_at == 1.0 for record in result.stages.values() if record.kind == "prompt")


def test_probabilities_without_logprobs_record_their_source():
    rules = ReasoningRules()
    with FakeOpenAIServer(schema_reply, rules=rules) as server:
        result = load_scorer("faithfulness_quick", judge=judge_for(server)).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert rules.refusals == []
    sources = {r.probs_source for r in result.stages.values() if r.kind == "prompt" and r.probs_source}
    assert sources == {"hard"}


def test_a_refused_logprobs_is_learnt_once_per_judge():
    def refuse_logprobs(request):
        if request.get("logprobs"):
            return Fault.status(400, body={"error": {"message": "logprobs are not supported", "type": "x",
                                                     "param": "logprobs", "code": None}})
        return schema_reply(request)

    with FakeOpenAIServer(refuse_logprobs) as server:
        judge = judge_for(server, "openai/house-model")
        first = ask(judge, call(probabilities=True))
        second = ask(judge, call(probabilities=True))
    assert first.data["verdict"] in ("yes", "no") and second.data["verdict"] in ("yes", "no")
    assert first.answer_probs is None and second.answer_probs is None  # the hard labels count
    assert sum(1 for r in server.requests if r.get("logprobs")) == 1


# --- usage a server does not report, bodies that are not completions -------------------------

def test_no_usage_makes_tokens_and_cost_unknown_not_zero():
    with FakeOpenAIServer(schema_reply, rules=NoUsageRules()) as server:
        result = load_scorer("faithfulness", judge=judge_for(server, "openai/gpt-4o-mini")).run(**FAITHFUL)
    assert result.status == "scored"
    assert result.usage.unreported == result.usage.calls > 0
    prices = PriceTable([])
    assert prices.cost("openai/gpt-4o-mini", result.usage) is None
    cost = cost_of({"openai/gpt-4o-mini": result.usage}, PriceTable([]))
    assert cost.usd is None and not cost.complete and "reported no token usage" in cost.note


def test_budget_stops_at_the_first_item_whose_cost_is_unknown():
    budget = Budget(1.0)

    async def go():
        assert await budget.admit()
        budget.finished(None, "openai/x reported no token usage for 2 call(s)")
        return await budget.admit()

    assert run_sync(go()) is False
    assert "cannot be known (openai/x reported no token usage" in budget.stopped


def test_usage_holding_nan_keeps_the_answer():
    class NaNUsage(NoUsageRules):
        def completed(self, request, completion):
            completion["usage"] = {"prompt_tokens": math.nan, "completion_tokens": 3, "total_tokens": math.nan}
            return completion

    with FakeOpenAIServer({"verdict": "no"}, rules=NaNUsage()) as server:
        answer = ask(judge_for(server, "openai/gpt-4o-mini"), call())
    assert answer.data == {"verdict": "no"}
    assert answer.usage.unreported == 1 and answer.usage.tokens_in == 0


@pytest.mark.parametrize("body", [{"choices": []}, {"choices": None, "id": "x"},
                                  {"error": {"message": "upstream overloaded", "type": "server_error"}},
                                  {"choices": [{"index": 0, "finish_reason": "stop"}]}])
def test_a_200_body_that_is_no_completion_is_retried_and_kept(body):
    with FakeOpenAIServer({"verdict": "yes"}, rules=NotCompletionRules(body, times=1)) as server:
        answer = ask(judge_for(server, "openai/gpt-4o-mini"), call())
    assert answer.data == {"verdict": "yes"}
    assert answer.usage.transport_retries == 1
    with FakeOpenAIServer({"verdict": "yes"}, rules=NotCompletionRules(body, times=10)) as server:
        with pytest.raises(Exception) as failed:
            ask(judge_for(server, "openai/gpt-4o-mini"), call())
    assert failed.value.kind == "transport"
    assert "not a chat completion" in failed.value.message
    assert ("upstream overloaded" in failed.value.message) == ("error" in body)


def test_undecodable_200_body_is_a_transport_failure():
    with FakeOpenAIServer() as server:
        server.script(Fault.malformed_body(b"\xff\xfe\x00garbage"), {"verdict": "yes"})
        answer = ask(judge_for(server, "openai/gpt-4o-mini"), call())
    assert answer.data == {"verdict": "yes"} and answer.usage.transport_retries == 1


# --- the retry layer's cap on waiting ---------------------------------------------------------

def test_long_retry_after_waits_are_capped_per_call():
    from engine.judge.call import TransportFailure
    from engine.judge.retries import RetryingJudge

    waits: list[float] = []

    class Busy:
        model = "x"

        async def ask(self, the_call):
            raise TransportFailure("HTTP 429", retry_after=25)

    async def sleep(seconds):
        waits.append(seconds)

    judge = RetryingJudge(Busy(), RetryPolicy(max_retries=4, max_total_wait_s=60), sleep=sleep)
    with pytest.raises(Exception) as failed:
        run_sync(judge.ask(call()))
    assert waits == [25, 25]
    assert "waits at most 60 s in all" in failed.value.message


# --- a server that refuses tools, doctor, missing keys, wrong paths ---------------------------

def ok_reply(request):
    return {"ok": True} if "verify" not in json.dumps(request.get("tools") or request.get("response_format") or "") \
        else {"verdict": "yes"}


def test_doctor_says_logprobs_and_temperature_are_refused_on_a_reasoning_server():
    with FakeOpenAIServer(ok_reply, rules=ReasoningRules()) as server:
        result = invoke("doctor", "--model", "openai/gpt-5-mini", "--base-url", server.base_url, "--json",
                        env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found["refused"] == {"logprobs": True, "temperature": True, "top_p": True, "max_tokens": True,
                                "seed": False}
    assert found["logprobs"] is False
    assert found["family"] == "reasoning" and found["reasoning_tokens"] == 256
    assert found["modes"]["tools"] is True and found["mode"] == "tools"


def test_doctor_on_a_server_refusing_tools_names_a_mode_that_works():
    with FakeOpenAIServer(ok_reply, rules=NoToolsRules()) as server:
        result = invoke("doctor", "--model", "openai/house-model", "--base-url", server.base_url, "--json")
        chosen = invoke("doctor", "--model", "openai/house-model", "--base-url", server.base_url, "--json",
                        "--mode", "json_schema")
    found = json.loads(result.output)
    assert result.exit_code == 1
    assert found["modes"]["tools"] is False and found["modes"]["json_schema"] is True
    assert "SCORESPEC_MODE=json_schema" in found["problem"]
    assert chosen.exit_code == 0 and json.loads(chosen.output)["mode"] == "json_schema"


def test_doctor_exits_1_when_the_key_is_refused():
    with FakeOpenAIServer(Fault.status(401)) as server:
        result = invoke("doctor", "--model", "openai/gpt-4o-mini", "--base-url", server.base_url)
    assert result.exit_code == 1
    assert "cannot run: the server refused the API key (HTTP 401: " in result.output


def test_doctor_local_reports_the_embedded_judge():
    result = invoke("doctor", "--model", "local-tiny", "--json")
    found = json.loads(result.output)
    assert found["embedded"] is True and found["mode"] == "grammar"
    assert result.exit_code == (0 if found["ok"] else 1)


def test_missing_api_key_stops_eval_before_the_first_item(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(FAITHFUL) + "\n", encoding="utf-8")
    result = invoke("eval", "faithfulness", "--data", str(data), "--model", "openai/gpt-4o-mini", "--quiet")
    assert result.exit_code == 2
    assert "the judge openai/gpt-4o-mini has no API key" in result.output
    assert "no item was scored" in result.output


def test_404_from_a_wrong_base_url_path_says_to_check_it():
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        judge = make_judge("openai/gpt-4o-mini", base_url=server.base_url.replace("/v1", "/wrong/v1"),
                           api_key="test", retry=RetryPolicy(max_retries=0))
        with pytest.raises(Exception) as failed:
            ask(judge, call())
    assert failed.value.kind == "not_found"
    assert "check --base-url" in failed.value.message


def test_a_wrong_base_url_path_stops_the_run_at_the_first_item(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({**FAITHFUL, "id": i}) + "\n" for i in range(12)), encoding="utf-8")
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        result = invoke("eval", "faithfulness", "--data", str(data), "--model", "openai/gpt-5-mini", "--base-url",
                        server.base_url.replace("/v1", "/api/v9"), "--concurrency", "4", "--no-cache", "--json",
                        "--quiet", "--store", str(tmp_path / "store.sqlite"))
    summary = json.loads(result.stdout)
    assert result.exit_code == 2 and summary["stopped"].startswith("the judge has no such path or model (")
    assert "check --base-url" in summary["stopped"]
    assert (summary["scorers"]["faithfulness"]["failed"], summary["left"]) == (1, 11)  # one item, then none


# --- end to end, as a user runs it -----------------------------------------------------------

def test_eval_on_a_reasoning_server_scores_every_item_and_counts_reasoning_tokens(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": f"Paris has {i} bridges.",
                                        "context": [f"Paris has {i} bridges."]}) + "\n" for i in range(8)),
                    encoding="utf-8")
    out = tmp_path / "out.jsonl"
    rules = ReasoningRules()
    with FakeOpenAIServer(schema_reply, rules=rules) as server:
        result = invoke("eval", "faithfulness", "--data", str(data), "--model", "openai/gpt-5-mini", "--base-url",
                        server.base_url, "--out", str(out), "--no-cache", "--json", "--quiet")
        asked = len(server.requests)
    assert result.exit_code in (0, 1), result.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["status"] for line in lines] == ["scored"] * 8
    assert rules.refusals == []
    usage = Usage()
    for line in lines:
        usage.add(Usage.model_validate(line["usage"]))
    assert usage.calls == asked
    assert usage.reasoning_tokens == 256 * asked
    assert usage.tokens_out >= usage.reasoning_tokens + asked  # each answer's own tokens on top


def test_a_server_dripping_its_answer_is_cut_off_at_the_request_deadline():
    import socket
    import threading
    import time

    body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"verdict": "yes"}'}}]})
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def drip():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                     .encode())
        for byte in body.encode():  # one byte every 0.2 s: each read is quick, the whole is not
            if stop.is_set():
                break
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.2)
        conn.close()

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    judge = make_judge("openai/gpt-4o-mini", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
                       api_key="test", timeout_s=1.0, retry=RetryPolicy(max_retries=0), mode="json")
    try:
        with pytest.raises(Exception) as failed:
            ask(judge, call())
    finally:
        stop.set()
        listener.close()
    assert failed.value.kind == "transport"
    assert "APITimeoutError" in failed.value.message


def test_option_flag_sets_a_judge_setting_for_every_scorer():
    from engine.cli.app import parse_options
    from engine.spec.compile import load_spec

    compiled = [load_spec("faithfulness"), load_spec("answer_relevancy")]
    assert parse_options(["judge.reasoning_effort=low", "faithfulness.judge.reasoning_tokens=2000"], compiled) == {
        "faithfulness": {"judge.reasoning_effort": "low", "judge.reasoning_tokens": 2000},
        "answer_relevancy": {"judge.reasoning_effort": "low"}}

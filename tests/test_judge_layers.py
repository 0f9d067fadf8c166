"""The judge pipeline: layers with one interface, the answer contract as a value, transport
retries, the rate limit, and model strings checked before the first item."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from conftest import SPEC_FIXTURES, fast_judge
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401 - registers the batch commands on `app`
from engine.bind.load import load_scorer
from engine.bind.stack import bind, make_judge
from engine.cli.main import app
from engine.core.errors import ScorerRunError
from engine.core.result import Usage
from engine.interpret.scorer import Scorer
from engine.judge.call import JudgeAnswer, JudgeCall, TransportFailure
from engine.judge.contract import AnswerContract, AnswerInvalid, FailedCheck, no_valid_answer
from engine.judge.model import PROVIDER_PACKAGES, ModelError, check_model
from engine.judge.provider import InstructorJudge, _retry_after
from engine.judge.rate_limit import RateLimitedJudge, RateLimiter
from engine.judge.retries import RetryingJudge, RetryPolicy
from engine.judge.settings import JudgeSettings
from engine import run_evals
from engine.judge.stack import JudgeParts, compose
from engine.spec.compile import compile_file
from engine.spec.expressions import Expression
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["verdict"]}
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}


def check(source: str, message: str) -> tuple[Expression, str]:
    return Expression(source), message


def a_call(contract: AnswerContract | None = None, stage: str = "analyze") -> JudgeCall:
    return JudgeCall(stage, [{"role": "user", "content": "Is it so?"}], contract or AnswerContract(SCHEMA))


class Scripted:
    """An inner judge answering from a list: an exception is raised, anything else answered."""

    model = "scripted/judge"

    def __init__(self, *steps):
        self.steps = list(steps)
        self.calls = 0

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        self.calls += 1
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        return JudgeAnswer(call.validate(step), json.dumps(step), 2, Usage(calls=2, reasks=1, tokens_in=10))


def failure(retry_after: float | None = None) -> TransportFailure:
    return TransportFailure("RateLimitError (HTTP 429): slow down", stage="analyze", attempts=1,
                            usage=Usage(calls=1, seconds=0.5, tokens_in=3), retry_after=retry_after)


# --- the answer contract ---------------------------------------------------------------------


def test_contract_normalises_and_names_the_failed_check():
    contract = AnswerContract(SCHEMA, (check("answer.verdict == expected", "answer the expected verdict"),),
                              {"expected": "yes"})
    assert contract.validate({"verdict": " Yes"}) == {"verdict": "yes"}
    with pytest.raises(AnswerInvalid) as refused:
        contract.validate({"verdict": "NO"})
    assert str(refused.value) == "answer the expected verdict"
    assert refused.value.check == FailedCheck("answer.verdict == expected", "answer the expected verdict")
    with pytest.raises(AnswerInvalid) as schema_only:
        AnswerContract(SCHEMA).validate({"verdict": "maybe"})
    assert schema_only.value.check is None
    assert str(schema_only.value).startswith("the answer does not match the required JSON schema: at verdict:")


def test_a_check_that_raises_fails_with_its_error():
    contract = AnswerContract(SCHEMA, (check("answer.verdict / 2", "a number please"),))
    with pytest.raises(AnswerInvalid) as refused:
        contract.validate({"verdict": "yes"})
    assert refused.value.check.source == "answer.verdict / 2"
    assert refused.value.check.message.startswith("a number please (TypeError: ")


def test_the_final_failure_kind_comes_from_the_last_refusal():
    failed = AnswerInvalid("one verdict per claim", FailedCheck("answer | length == 2", "one verdict per claim"))
    as_check = no_valid_answer("analyze", 3, "one verdict per claim", failed, raw_answer="{}")
    assert (as_check.kind, as_check.attempts, as_check.raw_answer) == ("check", 3, "{}")
    assert as_check.message == "check 'answer | length == 2' still failed after 3 attempt(s): one verdict per claim"
    as_judge = no_valid_answer("analyze", 3, "not JSON", AnswerInvalid("schema"))
    assert (as_judge.kind, as_judge.message) == ("judge", "no valid answer after 3 attempt(s): not JSON")
    assert no_valid_answer("analyze", 1, "x", None).kind == "judge"


def test_concurrent_calls_on_one_schema_are_each_held_to_their_own_contract():
    """The response model is cached per schema; the contract comes with each call."""
    def reply(request: dict):
        return {"verdict": "yes"}

    async def both(judge):
        wants_yes = AnswerContract(SCHEMA, (check("answer.verdict == 'yes'", "say yes"),))
        wants_no = AnswerContract(SCHEMA, (check("answer.verdict == 'no'", "say no"),))
        calls = [JudgeCall("analyze", [{"role": "user", "content": "q"}], c, max_reasks=0) for c in (wants_yes, wants_no)]
        results = await asyncio.gather(*(judge.ask(c) for c in calls), return_exceptions=True)
        await judge.aclose()
        return results

    with FakeOpenAIServer(reply) as server:
        accepted, refused = asyncio.run(both(fast_judge(server)))
    assert accepted.data == {"verdict": "yes"}
    assert (refused.kind, refused.message) == ("check", "check \"answer.verdict == 'no'\" still failed after 1 "
                                                        "attempt(s): say no")


# --- transport retries ---------------------------------------------------------------------------


def test_retries_honour_retry_after_and_count_every_try_apart_from_reasks():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    inner = Scripted(failure(retry_after=0.25), failure(), {"verdict": "yes"})
    judge = RetryingJudge(inner, RetryPolicy(max_retries=3, base_s=0.1, max_wait_s=5), sleep=sleep)
    answer = asyncio.run(judge.ask(a_call()))
    assert answer.data == {"verdict": "yes"}
    assert waits[0] == 0.25  # the server's Retry-After
    assert 0.1 <= waits[1] <= 0.2  # base 0.1 × 2 for the second retry, jittered to half or more
    u = answer.usage
    assert (u.transport_retries, u.reasks, u.calls, u.tokens_in) == (2, 1, 4, 16)
    assert u.seconds == pytest.approx(1.0 + sum(waits))  # the failed tries' time and the waits between them count
    assert answer.attempts == 4


def test_retry_after_is_capped_by_the_policy():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    judge = RetryingJudge(Scripted(failure(retry_after=120), {"verdict": "no"}), RetryPolicy(max_wait_s=2), sleep=sleep)
    asyncio.run(judge.ask(a_call()))
    assert waits == [2]


def test_retries_run_out_as_a_transport_failure_with_the_usage_of_every_try():
    async def sleep(seconds: float) -> None:
        pass

    inner = Scripted(failure(), failure(), failure(), {"verdict": "yes"})
    with pytest.raises(ScorerRunError) as failed:
        asyncio.run(RetryingJudge(inner, RetryPolicy(max_retries=2), sleep=sleep).ask(a_call()))
    error = failed.value
    assert not isinstance(error, TransportFailure)  # final: no outer layer retries it again
    assert (error.kind, error.stage, error.attempts) == ("transport", "analyze", 3)
    assert error.message == "the judge could not be reached after 3 tries: RateLimitError (HTTP 429): slow down"
    assert (error.usage.calls, error.usage.transport_retries, error.usage.tokens_in) == (3, 2, 9)
    assert inner.calls == 3


def test_no_retries_allowed_gives_up_after_the_first_try_without_waiting():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    inner = Scripted(failure(), {"verdict": "yes"})
    with pytest.raises(ScorerRunError) as failed:
        asyncio.run(RetryingJudge(inner, RetryPolicy(max_retries=0), sleep=sleep).ask(a_call()))
    error = failed.value
    assert error.message == "the judge could not be reached after 1 tries: RateLimitError (HTTP 429): slow down"
    assert (error.usage.calls, error.usage.transport_retries, inner.calls, waits) == (1, 0, 1, [])


def test_a_failure_on_the_first_try_that_is_not_transport_passes_through_with_its_reasks():
    refused = ScorerRunError("judge", "no valid answer after 3 attempt(s): x", stage="analyze", attempts=3,
                             usage=Usage(calls=3, reasks=2))
    with pytest.raises(ScorerRunError) as failed:
        asyncio.run(RetryingJudge(Scripted(refused), RetryPolicy(max_retries=4)).ask(a_call()))
    error = failed.value
    assert (error.kind, error.attempts) == ("judge", 3)
    assert (error.usage.calls, error.usage.reasks, error.usage.transport_retries) == (3, 2, 0)


def test_other_failures_pass_through_at_once_with_earlier_tries_counted():
    async def sleep(seconds: float) -> None:
        pass

    refused = ScorerRunError("judge", "no valid answer after 3 attempt(s): x", stage="analyze", attempts=3,
                             usage=Usage(calls=3, reasks=2))
    inner = Scripted(failure(), refused, {"verdict": "yes"})
    with pytest.raises(ScorerRunError) as failed:
        asyncio.run(RetryingJudge(inner, RetryPolicy(max_retries=4), sleep=sleep).ask(a_call()))
    error = failed.value
    assert (error.kind, error.attempts) == ("judge", 4)
    assert (error.usage.calls, error.usage.reasks, error.usage.transport_retries) == (4, 2, 1)
    assert inner.calls == 2


def test_retry_after_as_a_number_or_an_http_date():
    class Response:
        def __init__(self, value):
            self.headers = {"retry-after": value}

    class Limited(Exception):
        def __init__(self, value):
            self.response = Response(value)

    assert _retry_after(Limited("1.5")) == 1.5
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= _retry_after(Limited(later)) <= 30
    assert _retry_after(Limited("soon")) is None
    assert _retry_after(ValueError("no response")) is None


def test_rate_limited_then_reasked_counts_both_apart_over_http(fake_server):
    fake_server.script(Fault.status(429), {"claims": "not a list"}, {"claims": ["A"]}, {"verdict": "yes", "reason": "r"},
                       {"reason": "fine"})
    result = load_scorer("faithfulness", judge=fast_judge(fake_server)).run(output="A.", context=["A."])
    assert result.status == "scored", result.error
    record = result.stages["preprocess"].usage
    assert (record.transport_retries, record.reasks, record.calls) == (1, 1, 3)
    assert result.stages["preprocess"].attempts == 3


# --- the stack -------------------------------------------------------------------------------------


def test_make_judge_stacks_the_layers_over_one_provider(fake_server):
    judge = make_judge("openai/test-model", base_url=fake_server.base_url, api_key="test", rate_limit=50,
                       retry=RetryPolicy(max_retries=1, base_s=0.01))
    assert isinstance(judge, RateLimitedJudge) and judge.limiter.rate == 50
    assert isinstance(judge.inner, RetryingJudge) and judge.inner.policy.max_retries == 1
    assert isinstance(judge.inner.inner, InstructorJudge) and judge.provider is judge.inner.inner
    assert judge.model == judge.inner.model == judge.provider.model == "openai/test-model"
    assert isinstance(make_judge("openai/test-model", base_url=fake_server.base_url), RetryingJudge)
    fake_server.script(Fault.status(503), {"claims": ["A"]}, {"verdict": "yes", "reason": "r"}, {"reason": "fine"})
    result = load_scorer("faithfulness", judge=judge).run(output="A.", context=["A."])
    assert (result.score, result.usage.transport_retries) == (1, 1)


def test_compose_wraps_any_provider_and_shares_a_limiter():
    limiter = RateLimiter(1000, burst=10)
    first = compose(FakeJudge({"analyze": {"verdict": "yes"}}), JudgeSettings(rate_limit=limiter))
    second = compose(FakeJudge({"analyze": {"verdict": "no"}}), parts=JudgeParts(rate_limit=limiter), given=True)
    assert first.limiter is second.limiter is limiter
    assert isinstance(first.inner, RetryingJudge) and isinstance(first.provider, FakeJudge)
    assert asyncio.run(first.ask(a_call())).data == {"verdict": "yes"}
    assert asyncio.run(second.ask(a_call())).data == {"verdict": "no"}


def test_the_run_rate_limits_a_twin_and_leaves_the_scorer_as_it_was():
    judge = FakeJudge({"preprocess": {"claims": ["a"]}})
    claims = load_scorer(str(SPEC_FIXTURES / "claims.yaml"), judge=judge)
    limited = claims.with_parts(JudgeParts(rate_limit=100))
    assert claims.judge is judge and limited.judge.inner is judge and limited.model == claims.model
    summary = run_evals([{"output": "x"}] * 3, [claims], rate_limit=100, store=False)
    assert summary.scorers[claims.id].scored == 3 and len(judge.calls) == 3
    assert claims.judge is judge


# --- model strings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model, expected", [
    ("local-small", "model 'local-small' is not a known judge model: give 'provider/model' (e.g. openai/gpt-4o-mini), "
                    "'local', 'local-tiny' or 'llamacpp/PATH.gguf' (did you mean 'local'?)"),
    ("localtiny", "(did you mean 'local-tiny'?)"),
    ("openia/gpt-4o-mini", "model 'openia/gpt-4o-mini': unknown provider 'openia'; give 'provider/model' "
                           "(e.g. openai/gpt-4o-mini), 'local', 'local-tiny' or 'llamacpp/PATH.gguf' (did you mean "
                           "'openai'?)"),
    ("nosuchprovider/x", "known providers: anthropic, anyscale,"),
    ("llamacpp/", "model 'llamacpp/' needs a path: 'llamacpp/PATH.gguf'"),
    ("llamacpp/no/such/model.gguf", "model 'llamacpp/no/such/model.gguf': no file at 'no/such/model.gguf'"),
])
def test_a_model_that_cannot_work_is_refused_when_the_scorer_is_built(model, expected):
    with pytest.raises(ModelError) as refused:
        load_scorer("faithfulness", model=model)
    assert expected in str(refused.value)
    assert isinstance(refused.value, ValueError)


def test_a_provider_without_its_package_is_refused(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # not importable, whether installed or not
    with pytest.raises(ModelError, match=r"model 'anthropic/claude-3-5-haiku-latest' needs the Python package "
                                         r"providing 'anthropic', which is not installed: pip install "
                                         r"'scorespec\[anthropic\]'"):
        bind(compile_file(SPEC_FIXTURES / "claims.yaml"), JudgeSettings(model="anthropic/claude-3-5-haiku-latest"))


def test_models_that_can_work_pass_and_only_judge_scorers_are_checked(monkeypatch):
    check_model("openai/gpt-4o-mini")
    check_model("ollama/qwen2.5:7b")
    monkeypatch.delitem(PROVIDER_PACKAGES, "groq")
    check_model("groq/llama-3.1-8b-instant")  # a provider instructor takes and the table lacks: not refused
    with pytest.raises(ModelError, match=r"'openai/gpt-4o-mini\?slots=2': settings after '\?' .* apply only to the "
                                         r"embedded models"):
        check_model("openai/gpt-4o-mini?slots=2")
    monkeypatch.setenv("SCORESPEC_MODEL", "local-small")
    assert load_scorer("textual_difference").model is None  # no judge, no model to check
    assert load_scorer("faithfulness", judge=FakeJudge()).model == "fake/judge"  # an explicit judge
    with pytest.raises(ModelError, match="'local-small'"):
        load_scorer("faithfulness")  # the environment's model is checked too


def test_cli_run_with_a_bad_model_exits_2_before_scoring():
    result = CliRunner().invoke(app, ["run", "faithfulness", "--output", "x", "--context", "c", "--model",
                                      "local-small"], env=ENV)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: model 'local-small' is not a known judge model")
    assert "did you mean 'local'?" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_cli_eval_with_a_bad_model_exits_2_before_the_first_item(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"output": "x", "context": ["c"]}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["eval", "faithfulness", "--data", str(data), "--model", "nosuchprovider/x",
                                      "--out", str(out), "--store", str(tmp_path / "store.sqlite")], env=ENV)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: model 'nosuchprovider/x': unknown provider 'nosuchprovider'")
    assert not out.exists()
    assert "item 1" not in result.stderr


def test_render_needs_no_working_model():
    result = CliRunner().invoke(app, ["render", "faithfulness", "--output", "x", "--context", "c"],
                                env={**ENV, "SCORESPEC_MODEL": "nosuchprovider/x"})
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("===== preprocess =====")

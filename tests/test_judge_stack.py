"""The judge stack built in one place: its order declared once, typed judge settings, one `bind`
for the API, the CLI and the Ray recipes, and an unusable judge told by its error's type."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
import sys

import pytest
from conftest import SPEC_FIXTURES

from engine.bind.load import load_scorer
from engine.bind.stack import JudgeFactory, bind, for_run, make_judge
from engine.interpret.scorer import Scorer
from engine.judge.cache.layer import CachedJudge
from engine.judge.call import JudgeCall, MissingCredentials
from engine.judge.clients import _is_missing_credentials
from engine.judge.contract import AnswerContract
from engine.judge.model import ModelError, check_model
from engine.judge.progress import ProgressJudge
from engine.judge.provider import InstructorJudge
from engine.judge.rate_limit import RateLimitedJudge, RateLimiter
from engine.judge.retries import RetryingJudge, RetryPolicy
from engine.judge.settings import JudgeSettings
from engine.judge.stack import LAYERS, GivenJudge, JudgeParts, compose
from engine.spec.compile import compile_file, load_spec
from engine.testing import FakeJudge

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["verdict"]}
KEY = "sk-canary-0123456789abcdef"


def a_call() -> JudgeCall:
    return JudgeCall("analyze", [{"role": "user", "content": "Is it so?"}], AnswerContract(SCHEMA))


def kinds(judge) -> list[type]:
    """The judge's layers, outermost first, down to the provider."""
    found = []
    while judge is not None:
        found.append(type(judge))
        judge = getattr(judge, "inner", None)
    return found


# --- the order, declared once -----------------------------------------------------------------------


def test_the_layers_are_declared_once_innermost_first():
    assert [layer.name for layer in LAYERS] == ["retries", "rate_limit", "cache", "progress"]
    import engine.judge.stack as stack

    table = [line.split()[0] for line in stack.__doc__.splitlines()
             if line.startswith("    ") and not line.startswith("     ")]
    assert table == ["provider", *(layer.name for layer in LAYERS)]  # the module says the order once, as LAYERS


def test_make_judge_stacks_every_layer_in_the_declared_order(tmp_path):
    judge = make_judge("openai/test-model", base_url="http://127.0.0.1:9/v1", api_key="k", rate_limit=50,
                       cache=tmp_path / "c.sqlite")
    assert kinds(judge) == [CachedJudge, RateLimitedJudge, RetryingJudge, InstructorJudge]
    with_progress = make_judge("openai/test-model", base_url="http://127.0.0.1:9/v1", api_key="k", rate_limit=50,
                               cache=tmp_path / "c.sqlite",
                               parts=JudgeParts(on_answer=lambda call, answer: None, rate_limit=RateLimiter(10)))
    assert kinds(with_progress) == [ProgressJudge, CachedJudge, RateLimitedJudge, RateLimitedJudge, RetryingJudge,
                                    InstructorJudge]


def test_a_runs_parts_go_into_the_scorers_stack_before_it_is_composed(tmp_path):
    limiter = RateLimiter(100)
    scorer = bind(load_spec("faithfulness"), JudgeSettings(model="openai/test-model", base_url="http://127.0.0.1:9/v1",
                                                           api_key="k", rate_limit=5, cache=tmp_path / "c.sqlite"))
    twin = scorer.with_parts(JudgeParts(rate_limit=limiter, on_answer=lambda call, answer: None))
    assert kinds(twin.judge) == [ProgressJudge, CachedJudge, RateLimitedJudge, RateLimitedJudge, RetryingJudge,
                                 InstructorJudge]
    assert twin.judge.inner.cache is scorer.judge.cache  # the cache bind opened, shared by every judge built
    assert twin.judge.inner.inner.limiter is limiter and twin.judge.inner.inner.inner.limiter is not limiter
    assert kinds(scorer.judge) == [CachedJudge, RateLimitedJudge, RetryingJudge, InstructorJudge]  # left as it was
    assert twin.judge is twin.judge  # composed once


def test_a_judge_given_whole_is_kept_below_a_runs_parts_without_retries():
    fake = FakeJudge({"analyze": {"verdict": "yes"}})
    odd = RetryingJudge(RateLimitedJudge(fake, RateLimiter(100)))  # any judge: kept whole
    stacked = compose(odd, parts=JudgeParts(rate_limit=100), given=True)
    assert kinds(stacked) == [RateLimitedJudge, RetryingJudge, RateLimitedJudge, FakeJudge]
    assert asyncio.run(stacked.ask(a_call())).data == {"verdict": "yes"}
    assert GivenJudge(fake)(None) is fake  # nothing asked of it: the judge itself


def test_a_stack_given_whole_is_composed_again_with_a_runs_cache_in_place_of_its_own(tmp_path):
    built = make_judge("openai/test-model", base_url="http://127.0.0.1:9/v1", api_key="k", cache=tmp_path / "a")
    scorer = load_scorer("faithfulness", judge=built)
    assert scorer.judge is built  # nothing added: the judge as given
    other = scorer.with_parts(JudgeParts(cache=tmp_path / "b", rate_limit=100)).judge
    assert kinds(other) == [CachedJudge, RateLimitedJudge, RetryingJudge, InstructorJudge]
    assert str(other.cache.path).endswith("b") and other.provider is built.provider
    assert kinds(scorer.with_parts(JudgeParts(cache=False)).judge) == [RetryingJudge, InstructorJudge]


def test_a_runs_cache_replaces_or_takes_off_the_scorers_and_none_keeps_it(tmp_path):
    scorer = bind(load_spec("faithfulness"), JudgeSettings(model="openai/test-model", base_url="http://127.0.0.1:9/v1",
                                                           api_key="k", cache=tmp_path / "a"))
    assert scorer.with_parts(JudgeParts()).judge.cache is scorer.judge.cache
    assert kinds(scorer.with_parts(JudgeParts(cache=False)).judge) == [RetryingJudge, InstructorJudge]
    other = scorer.with_parts(JudgeParts(cache=tmp_path / "b", refresh=True)).judge
    assert kinds(other) == [CachedJudge, RetryingJudge, InstructorJudge]
    assert str(other.cache.path).endswith("b") and other.refresh
    later = scorer.with_parts(JudgeParts(cache=tmp_path / "b", refresh=True)).with_parts(JudgeParts(rate_limit=3))
    assert kinds(later.judge) == [CachedJudge, RateLimitedJudge, RetryingJudge, InstructorJudge]
    assert str(later.judge.cache.path).endswith("b") and later.judge.refresh  # later parts keep the earlier cache


# --- bind: one way a scorer gets its judge -----------------------------------------------------------


def test_bind_gives_a_plan_a_factory_that_builds_the_judge_from_its_settings(tmp_path):
    settings = JudgeSettings(model="openai/test-model", base_url="http://127.0.0.1:9/v1", api_key=KEY,
                             cache=tmp_path / "c.sqlite", rate_limit=20)
    scorer = bind(load_spec("faithfulness"), settings, label="faith")
    assert isinstance(scorer, Scorer) and scorer.label == "faith" and scorer.model == "openai/test-model"
    assert isinstance(scorer._judge_factory, JudgeFactory)
    assert kinds(scorer.judge) == [CachedJudge, RateLimitedJudge, RetryingJudge, InstructorJudge]
    assert KEY not in repr(scorer._judge_factory)


def test_load_scorer_takes_judge_settings_and_keywords_over_them(tmp_path):
    settings = JudgeSettings(base_url="http://127.0.0.1:9/v1", api_key="k", timeout_s=7, rate_limit=5)
    scorer = load_scorer("faithfulness", "openai/test-model", settings=settings, timeout_s=9, scale=10)
    assert scorer.options["scale"] == 10
    assert scorer._judge_factory.settings.timeout_s == 9 and scorer._judge_factory.settings.rate_limit == 5
    assert kinds(scorer.judge) == [RateLimitedJudge, RetryingJudge, InstructorJudge]
    assert scorer.judge.provider.recipe.timeout_s == 9


def test_for_run_puts_a_runs_parts_on_a_twin_and_leaves_rule_scorers_alone():
    judge = FakeJudge({"preprocess": {"claims": ["a"]}})
    scorer = load_scorer(str(SPEC_FIXTURES / "claims.yaml"), judge=judge)
    answered = []
    twin = for_run(scorer, JudgeParts(rate_limit=100, on_answer=lambda call, answer: answered.append(answer)))
    assert kinds(twin.judge) == [ProgressJudge, RateLimitedJudge, FakeJudge] and scorer.judge is judge
    assert twin.run(output="x").status == "scored" and len(answered) == 1
    rule = load_scorer("textual_difference")
    assert for_run(rule, JudgeParts(rate_limit=100)) is rule


def test_one_model_check_with_the_embedded_models_rules_registered():
    import engine.embedded  # noqa: F401 - registers the embedded models' checks
    from engine.judge.model import MODEL_CHECKS

    assert set(MODEL_CHECKS) == {"local", "local-tiny", "llamacpp/"}
    with pytest.raises(ModelError, match="no file at"):
        check_model("llamacpp/no/such/model.gguf")


def test_the_full_model_check_reads_an_embedded_models_options():
    with pytest.raises(ModelError, match=r"unknown option 'thread' \(did you mean 'threads'\?\)"):
        check_model("local?thread=1")
    with pytest.raises(ModelError, match="settings after '\\?'"):
        check_model("openai/gpt-4o-mini?slots=2")


def test_a_scorer_without_a_judge_or_factory_fails_its_items_as_judge():
    scorer = Scorer(compile_file(SPEC_FIXTURES / "claims.yaml"), model="openai/test-model")
    result = scorer.run(output="x")
    assert (result.status, result.error.kind) == ("failed", "judge")
    assert "no judge is bound to this scorer" in result.error.message


# --- an unusable judge, told by its error's type --------------------------------------------------


def test_a_missing_key_is_told_by_the_clients_error_type(monkeypatch):
    import openai
    from instructor.core.exceptions import ConfigurationError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(openai.OpenAIError) as refused:
        openai.AsyncOpenAI()  # what the client itself raises without a key: its base error type
    assert type(refused.value) is openai.OpenAIError and _is_missing_credentials(refused.value)
    assert _is_missing_credentials(ConfigurationError("GROQ_API_KEY is not set"))
    class RequestFailure(openai.OpenAIError):  # as openai's request errors (APIError…) subclass it
        pass

    assert not _is_missing_credentials(RequestFailure("Missing credentials"))
    assert not _is_missing_credentials(ValueError("the api_key option is bad"))  # words are not a type
    with pytest.raises(MissingCredentials, match="OpenAIError: "):
        make_judge("openai/gpt-4o-mini")


def test_only_missing_credentials_fail_as_auth_whatever_the_message_says():
    def factory(kind):
        def build(model, parts=None):
            raise kind("the api_key client option must be set (credentials)")
        return build

    plan = compile_file(SPEC_FIXTURES / "claims.yaml")
    words = Scorer(plan, model="openai/test-model", judge_factory=factory(RuntimeError)).run(output="x")
    typed = Scorer(plan, model="openai/test-model", judge_factory=factory(MissingCredentials)).run(output="x")
    assert (words.error.kind, typed.error.kind) == ("judge", "auth")
    assert "OPENAI_API_KEY" in typed.error.message


# --- JudgeSettings --------------------------------------------------------------------------------------


def test_judge_settings_are_frozen_and_keep_the_key_out_of_repr_and_storage():
    settings = JudgeSettings(model="openai/m", base_url="http://h/v1", api_key=KEY, timeout_s=5)
    assert KEY not in repr(settings) and KEY not in str(settings)
    assert "api_key" not in settings.stored() and settings.stored()["timeout_s"] == 5
    blob = pickle.dumps(settings)
    assert KEY.encode() not in blob
    again = pickle.loads(blob)
    assert again.api_key is None and again.replace(api_key=KEY) == settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.model = "other"  # type: ignore[misc]
    assert JudgeSettings(timeout_s=None).timeout_s == 120.0


@pytest.mark.parametrize("changes, message", [
    ({"timeout_s": 0}, "timeout_s must be a number of seconds > 0"),
    ({"rate_limit": -1}, "rate_limit must be requests per second > 0"),
])
def test_judge_settings_refuse_bad_values(changes, message):
    with pytest.raises(ValueError, match=message):
        JudgeSettings(**changes)


def test_make_judge_takes_settings_and_refuses_an_unknown_keyword():
    with pytest.raises(TypeError):
        make_judge("openai/test-model", base_uri="http://h/v1")
    judge = make_judge("openai/test-model", JudgeSettings(base_url="http://h/v1", api_key="k", timeout_s=3),
                       timeout_s=4)
    assert judge.provider.recipe.timeout_s == 4 and judge.provider.recipe.base_url == "http://h/v1"


def test_the_judge_package_does_not_import_the_embedded_one():
    import subprocess

    code = ("import sys, engine.judge.model, engine.judge.clients, engine.judge.settings; "
            "print(any(m.startswith('engine.embedded') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

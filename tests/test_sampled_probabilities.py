"""Label probabilities from the shares of several answers, for a judge that reports none.

A stage with ``probabilities`` and ``sampled_probabilities: N`` asks its question N times in all
when the first answer came without token log-probabilities (OpenAI's chat completions return
``choices[0].logprobs`` only when asked and supported, see the API reference for ``logprobs``; a
server made with ``logprobs=False`` never sends them): each label's probability is the share of the
N answers giving it, the answer their majority, and the result says ``scoring: sampled``.
"""

from __future__ import annotations

import pytest

from engine import load_scorer
from engine.bind.stack import make_judge
from engine.core.errors import SpecError
from engine.judge.retries import RetryPolicy
from engine.testing.fake_openai import FakeOpenAIServer

SPEC = """
format: 1
id: verdict
name: Verdict
description: The judge's probability of yes.
version: 1
fields:
  output: {{required: true}}
stages:
  - id: judge
    prompt: t/judge.j2
    probabilities: {probabilities}
    sampled_probabilities: {sampled}
{extra}    output_schema:
      type: object
      required: [verdict, reason]
      additionalProperties: false
      properties:
        verdict: {{type: string, enum: ["yes", "no"]}}
        reason: {{type: string}}
score:
  formula: "answer_probs.judge.verdict.yes * options.scale"
"""


def spec(write_spec, *, probabilities="true", sampled="true", extra=""):
    return write_spec("verdict", SPEC.format(probabilities=probabilities, sampled=sampled, extra=extra),
                      prompts={"t/judge.j2": "Is this supported? {{ run.output_text }}"})


def judge_for(server: FakeOpenAIServer):
    return make_judge("openai/test-model", base_url=server.base_url, api_key="test",
                      retry=RetryPolicy(max_retries=1, base_s=0.01))


def answers(*verdicts):
    return [{"verdict": v, "reason": "r"} for v in verdicts]


def test_a_judge_without_logprobs_is_scored_by_the_share_of_five_answers(write_spec):
    with FakeOpenAIServer({"verdict": "no", "reason": "r"}, logprobs=False) as server:
        server.script(*answers("yes", "no", "yes", "yes", "no"))
        result = load_scorer(str(spec(write_spec)), judge=judge_for(server)).run(output="x")
        asked = len(server.requests)
    assert asked == 5
    assert result.status == "scored" and result.score == pytest.approx(0.6)
    assert result.scoring == "sampled"
    stage = result.stages["judge"]
    assert stage.result == {"verdict": "yes", "reason": "r"}
    assert len(stage.samples) == 5
    assert stage.answer_probs == {"verdict": {"yes": pytest.approx(0.6), "no": pytest.approx(0.4)}}
    assert stage.probs_source == "sampled"
    assert result.to_json_dict()["stages"]["judge"]["probsSource"] == "sampled"
    assert any("share of 5 answers" in w for w in result.warnings)


def test_the_number_of_answers_comes_from_the_stage(write_spec):
    with FakeOpenAIServer({"verdict": "no", "reason": "r"}, logprobs=False) as server:
        server.script(*answers("yes", "no", "no"))
        result = load_scorer(str(spec(write_spec, sampled="3")), judge=judge_for(server)).run(output="x")
        asked = len(server.requests)
    assert asked == 3
    assert result.score == pytest.approx(1 / 3)
    assert result.stages["judge"].result["verdict"] == "no"


def test_later_answers_are_drawn_at_the_sampling_temperature(write_spec):
    with FakeOpenAIServer({"verdict": "yes", "reason": "r"}, logprobs=False) as server:
        load_scorer(str(spec(write_spec, sampled="3")), judge=judge_for(server)).run(output="x")
        temperatures = [request.get("temperature") for request in server.requests]
    assert temperatures[0] != temperatures[1] and temperatures[1] == temperatures[2]
    assert temperatures[1] > 0


def test_a_judge_that_reports_logprobs_is_asked_once(write_spec):
    with FakeOpenAIServer({"verdict": "yes", "reason": "r"}) as server:
        scorer = load_scorer(str(spec(write_spec)), judge=judge_for(server))
        result = scorer.run(output="x")
        asked = len(server.requests)
    assert result.stages["judge"].probs_source == "logprobs"
    assert asked == 1
    assert result.scoring != "sampled"
    assert result.score == pytest.approx(1.0)


@pytest.mark.parametrize(("probabilities", "sampled", "extra", "words"), [
    ("false", "true", "", "asks for none"),
    ("true", "true", "    samples: 3\n", "sampled already"),
    ("true", "25", "", "sampled_probabilities"),
])
def test_a_sampled_fallback_the_stage_cannot_use_is_a_spec_error_at_its_key(write_spec, probabilities, sampled,
                                                                            extra, words):
    with pytest.raises(SpecError) as caught:
        load_scorer(str(spec(write_spec, probabilities=probabilities, sampled=sampled, extra=extra)))
    text = str(caught.value)
    assert "stages[0].sampled_probabilities" in text or "sampled_probabilities" in text
    assert words in text


EACH_SPEC = SPEC.replace("  - id: judge\n", """  - id: judge
    for_each: "['a', 'b']"
""").replace("answer_probs.judge.verdict.yes * options.scale",
             "answer_probs.judge | map(attribute='verdict') | map(attribute='yes') | sum / 2 * options.scale")


def test_each_element_of_a_for_each_stage_gets_its_own_shares(write_spec):
    path = write_spec("verdict", EACH_SPEC.format(probabilities="true", sampled="2", extra=""),
                      prompts={"t/judge.j2": "Is {{ each }} supported? {{ run.output_text }}"})
    with FakeOpenAIServer({"verdict": "no", "reason": "r"}, logprobs=False) as server:
        server.script(*answers("yes", "yes", "yes", "no"))
        result = load_scorer(str(path), judge=judge_for(server)).run(output="x")
        asked = len(server.requests)
    assert asked == 4
    assert result.scoring == "sampled"
    shares = sorted(probs["verdict"]["yes"] for probs in result.stages["judge"].answer_probs)
    assert shares == [pytest.approx(0.5), pytest.approx(1.0)]
    assert result.score == pytest.approx(0.75)

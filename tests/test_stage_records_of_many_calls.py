"""What a stage of several judge calls (``for_each`` elements, samples, ``sampled_probabilities``)
records of them on a reasoning model: the effort asked, the temperature sampled at, and where
its label probabilities came from, consistent with the result's ``scoring`` and warnings."""

from __future__ import annotations

import json

from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.testing import FakeOpenAIServer
from engine.testing.schema_answers import schema_reply
from engine.testing.server_rules import ReasoningRules

FAITHFUL = {"output": "Paris is in France.", "context": ["Paris is the capital of France."]}


def judge_for(server: FakeOpenAIServer):
    return make_judge("openai/gpt-5-mini", base_url=server.base_url, api_key="test",
                      retry=RetryPolicy(max_retries=2, base_s=0.01))


def child_spec(tmp_path, text: str) -> str:
    spec = tmp_path / "scorer_specs" / "child.yaml"
    spec.parent.mkdir()
    spec.write_text(text, encoding="utf-8")
    return str(spec)


def test_a_for_each_stage_records_the_reasoning_effort_every_call_was_sent_with(tmp_path):
    spec = child_spec(tmp_path, "format: 1\nid: child\nextends: faithfulness\njudge:\n  reasoning_effort: low\n")
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules()) as server:
        result = load_scorer(spec, judge=judge_for(server)).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert {r["reasoning_effort"] for r in server.requests} == {"low"}
    stages = json.loads(result.model_dump_json())["stages"]
    assert stages["analyze"]["reasoningEffort"] == "low"
    assert {stage.get("reasoningEffort") for stage in stages.values() if stage["kind"] == "prompt"} == {"low"}


def test_samples_without_label_probabilities_count_the_majority_label_and_every_record_says_hard():
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules()) as server:
        result = load_scorer("faithfulness_quick", judge=judge_for(server)).with_samples(3).run(**FAITHFUL)
    assert result.status == "scored", result.error
    analyze = json.loads(result.model_dump_json())["stages"]["analyze"]
    assert (analyze["probsSource"], analyze["sampledAt"], result.scoring) == ("hard", 1.0, "hard")
    assert result.warnings == ["analyze: the judge reported no label probabilities for 'verdict' in 3 of 3 "
                               "answer(s); those count by their hard label (judges that report them: the embedded "
                               "models, and OpenAI-compatible servers with logprobs)"]


def test_sampled_probabilities_on_a_fixed_temperature_model_record_the_shares_and_the_temperature(tmp_path):
    spec = child_spec(tmp_path, "format: 1\nid: child\nextends: faithfulness_quick\nstages:\n  - id: analyze\n"
                                "    sampled_probabilities: 5\n")
    with FakeOpenAIServer(schema_reply, rules=ReasoningRules()) as server:
        result = load_scorer(spec, judge=judge_for(server)).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert len(server.requests) == 5
    analyze = json.loads(result.model_dump_json())["stages"]["analyze"]
    assert (analyze["probsSource"], analyze["sampledAt"], result.scoring) == ("sampled", 1.0, "sampled")
    assert result.warnings == ["analyze: the judge reported no label probabilities; each label's probability is "
                               "the share of 5 answers giving it"]

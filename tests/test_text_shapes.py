"""A text field given as a string, as chat messages, as one message or as content parts is the
same text to every shipped scorer: the same score, reason and judge prompts."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from engine.bind.load import load_scorer
from engine.spec.catalog import list_specs
from engine.testing import FakeJudge
from engine.testing.schema_answers import answer_for
from english_prompts import DECLARED, ITEM

#: a second item whose output is its ground truth, word for word (the equality checks score 1)
SAME = dict(ITEM, output="Paris is the capital of France.", ground_truth="Paris is the capital of France.")


def _parts(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def as_messages(item: dict[str, Any]) -> dict[str, Any]:
    return dict(item, input=[{"role": "user", "content": item["input"]}],
                output=[{"role": "assistant", "content": item["output"]}],
                ground_truth=[{"role": "assistant", "content": item["ground_truth"]}],
                context=[{"role": "user", "content": p} for p in item["context"]])


def as_one_message(item: dict[str, Any]) -> dict[str, Any]:
    return dict(item, input={"role": "user", "content": _parts(item["input"])},
                output={"role": "assistant", "content": _parts(item["output"])},
                ground_truth={"role": "assistant", "content": item["ground_truth"]})


def as_parts(item: dict[str, Any]) -> dict[str, Any]:
    return dict(item, input=_parts(item["input"]), output=_parts(item["output"]),
                ground_truth=_parts(item["ground_truth"]), system=_parts(item["system"]),
                context=[_parts(p)[0] for p in item["context"]])


def shipped() -> list[str]:
    return sorted(e.id for e in list_specs() if not e.abstract and e.path.is_file())


def outcome(scorer_id: str, item: dict[str, Any]) -> tuple[Any, ...]:
    judge = FakeJudge(default=lambda call: answer_for(call.schema))
    scorer = load_scorer(scorer_id, judge=judge)
    declared = {name: DECLARED[name] for name in scorer.plan.declared if name in DECLARED}
    extra = {"language": "en"} if "language" in inspect.signature(scorer.run).parameters else {}
    result = scorer.run(**item, **declared, **extra)
    prompts = [[(m["role"], m["content"]) for m in call.messages] for call in judge.calls]
    error = (result.error.kind, result.error.message) if result.error else None
    return result.score, result.reason, error, prompts


@pytest.mark.parametrize("scorer_id", shipped())
@pytest.mark.parametrize("shape", [as_messages, as_one_message, as_parts], ids=lambda f: f.__name__)
def test_a_text_field_scores_the_same_in_every_shape(scorer_id, shape):
    for item in (ITEM, SAME):
        assert outcome(scorer_id, shape(item)) == outcome(scorer_id, item)


@pytest.mark.parametrize("output", [[{"role": "assistant", "content": "Paris"}],
                                    [{"type": "text", "text": "Paris"}]])
@pytest.mark.parametrize("scorer_id, options, expected", [
    ("equals", {"expected": "Paris"}, 1.0), ("includes", {"expected": "role"}, 0.0),
    ("excludes", {"unwanted": "content"}, 1.0), ("matches", {"pattern": "^Paris$"}, 1.0),
    ("content_similarity", {}, 1.0), ("similarity", {"expected": "Paris"}, 1.0),
])
def test_a_message_output_is_scored_as_its_text(scorer_id, options, expected, output):
    scorer = load_scorer(scorer_id, options=options)
    assert scorer.run(output=output, ground_truth="Paris").score == expected


def test_json_in_a_message_is_valid_json():
    result = load_scorer("json_valid").run(output=[{"role": "assistant", "content": '{"a": 1}'}])
    assert result.score == 1


def test_a_ground_truth_given_as_a_message_reaches_the_judge_as_its_text():
    judge = FakeJudge(default=lambda call: answer_for(call.schema))
    load_scorer("criteria", judge=judge).run(
        output="Paris.", ground_truth=[{"role": "assistant", "content": "Paris is the capital."}],
        criterion="Names the capital.", language="en")
    prompt = judge.calls[0].messages[-1]["content"]
    assert "Paris is the capital." in prompt and "'role'" not in prompt

"""A ranked context keeps its ranks: a blank passage is a retrieved passage that helps nothing, at
its own rank, with no judge call."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.testing import FakeJudge

CONTEXT = ["", "Paris is the capital of France.", "   ", "Lyon is a city in France."]


def test_a_blank_passage_keeps_its_rank_in_context_precision():
    judge = FakeJudge({"analyze": [{"verdict": "yes", "reason": "Names Paris."}, {"verdict": "no", "reason": "Lyon."}]})
    result = load_scorer("context_precision", judge=judge).run(
        input="Capital of France?", ground_truth="Paris.", context=CONTEXT, language="en")
    assert result.score == 0.5  # useful at rank 2 of 4: 1/2
    assert len(judge.calls) == 2  # the blank passages cost no call
    assert [(v["position"], v["verdict"]) for v in result.analyze_step_result] == [(2, "yes"), (4, "no")]
    assert result.reason.startswith("The score is 0.5 of 1: 1 of 4 passages is useful for the ground truth, "
                                    "at position 2 ")


@pytest.mark.parametrize("context, expected", [
    (["Paris is the capital of France.", "", "Lyon."], 1.0),  # useful first: blanks after it change nothing
    (["", "", "Paris is the capital of France."], 0.33),      # useful at rank 3: 1/3
])
def test_average_precision_counts_blank_passages_as_not_useful(context, expected):
    judge = FakeJudge({"analyze": lambda call: {"verdict": "yes" if "Paris" in call.messages[-1]["content"]
                                                .split("PASSAGE:")[-1] else "no", "reason": "r"}})
    result = load_scorer("context_precision", judge=judge).run(ground_truth="Paris.", context=context, language="en")
    assert result.score == expected


def test_a_blank_passage_is_rated_irrelevant_at_its_rank_in_context_relevance():
    judge = FakeJudge({"analyze": [{"relevance": "high", "reason": "r"}, {"relevance": "none", "reason": "r"}],
                       "usage": {"verdict": "yes", "reason": "r"}, "missing": {"missing": []}})
    result = load_scorer("context_relevance", judge=judge).run(
        input="Capital of France?", output="Paris.", context=CONTEXT, language="en")
    assert result.score == 0.25  # weights 0, 1, 0, 0 over 4 passages
    assert [v["position"] for v in result.analyze_step_result] == [2, 4]
    assert result.reason.startswith("The score is 0.25 of 1: of 4 passages, 1 is highly relevant to the input, "
                                    "0 medium, 0 low and 3 not relevant")
    (missing,) = judge.prompts("missing")
    assert "[2] Paris is the capital of France.\n[4] Lyon is a city in France." in missing


def test_only_blank_passages_are_no_context():
    judge = FakeJudge()
    for scorer_id in ("context_precision", "context_relevance"):
        result = load_scorer(scorer_id, judge=judge).run(input="Q?", output="A.", ground_truth="A.",
                                                         context=["", "  "], language="en")
        assert result.status == "not_scorable"
    assert judge.calls == []

"""The shipped scorers (issue 4): answer similarity, textual difference, faithfulness."""

from __future__ import annotations

import math
import os

import pytest
from conftest import TESTS
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bind.load import load_scorer
from engine.interpret.scorer import Scorer
from engine.spec.compile import load_spec
from engine.testing import FakeJudge

SNAPSHOTS = TESTS / "snapshots"
UPDATE = os.environ.get("SCORESPEC_UPDATE_SNAPSHOTS") == "1"
REASON = {"reason": "Explained."}


# --- answer similarity ----------------------------------------------------------------------------

GROUND_TRUTH_UNITS = ["Paris is the capital of France", "Paris has 2.1 million inhabitants",
                      "The Seine flows through Paris", "Paris hosted the 2024 Olympics"]


def c11_answers(contradictions=(), extra=5) -> dict:
    return {
        "preprocess": {"outputUnits": ["u"] * 8, "groundTruthUnits": GROUND_TRUTH_UNITS},
        "analyze": {
            "matches": [{"groundTruthUnit": unit, "outputUnit": None if match == "missing" else "u",
                         "match": match, "reason": "r"}
                        for unit, match in zip(GROUND_TRUTH_UNITS, ["exact", "semantic", "partial", "missing"])],
            "contradictions": list(contradictions),
            "extraUnits": [f"extra {i}" for i in range(extra)],
        },
        "reason": REASON,
    }


def similarity(script: dict, **options):
    judge = FakeJudge(script)
    return load_scorer("answer_similarity", judge=judge, **options), judge


def test_missing_ground_truth_is_an_error_before_any_judge_call():
    """Field case C09 (shared/cases/handed.md)."""
    scorer, judge = similarity({})
    result = scorer.run(output="Paris is the capital.", input="What is the capital of France?")
    assert result.status == "failed"
    assert result.score is None
    assert (result.error.kind, result.error.stage) == ("input", None)
    assert "'ground_truth'" in result.error.message
    assert "requireGroundTruth=false" in result.error.message
    assert judge.calls == []


@pytest.mark.parametrize("ground_truth", [None, "", "   "])
def test_missing_ground_truth_scores_zero_when_not_required(ground_truth):
    """Field case C10 (shared/cases/handed.md)."""
    scorer, judge = similarity({}, requireGroundTruth=False)
    result = scorer.run(output="Paris is the capital.", ground_truth=ground_truth)
    assert result.status == "scored"
    assert result.score == 0
    assert "no ground truth" in result.reason
    assert judge.calls == []


def test_the_score_is_weighted_matches_minus_penalties():
    """Field case C11 (shared/cases/handed.md)."""
    scorer, judge = similarity(c11_answers())
    result = scorer.run(output="...", ground_truth="...")
    assert result.score == 0.15  # base 0.5 − missing 0.15 − extra min(5 × 0.05, 0.2)
    assert [c.stage for c in judge.calls] == ["preprocess", "analyze", "reason"]
    assert result.reason == "Explained."
    assert result.preprocess_step_result["groundTruthUnits"] == GROUND_TRUTH_UNITS


def test_partial_options_keep_defaults():
    """Field case C12 (shared/cases/handed.md)."""
    scorer, _ = similarity(c11_answers(), scale=10)
    result = scorer.run(output="...", ground_truth="...")
    assert result.score == 1.5
    assert 0 <= result.score <= 10
    assert scorer.options["missingPenalty"] == 0.15 and scorer.options["extraInfoPenalty"] == 0.05


@pytest.mark.parametrize("options, expected", [
    ({"contradictionPenalty": 0.1}, 0.05),  # 0.15 − 1 × 0.1
    ({}, 0.0),  # a contradiction costs 1 by default: clamped at 0, never negative
])
def test_contradictions_are_penalised(options, expected):
    scorer, _ = similarity(c11_answers(contradictions=[{"outputUnit": "u", "groundTruthUnit": "g"}]), **options)
    assert scorer.run(output="...", ground_truth="...").score == expected


def test_all_exact_scores_scale():
    answers = c11_answers(extra=0)
    for m in answers["analyze"]["matches"]:
        m["match"] = "Exact "  # normalised
    scorer, _ = similarity(answers, scale=5)
    assert scorer.run(output="...", ground_truth="...").score == 5


def test_no_ground_truth_units_is_not_scorable():
    scorer, judge = similarity({"preprocess": {"outputUnits": ["a"], "groundTruthUnits": []}})
    result = scorer.run(output="a", ground_truth="hmm")
    assert result.status == "not_scorable"
    assert [c.stage for c in judge.calls] == ["preprocess"]


def test_one_match_per_ground_truth_unit_is_enforced():
    answers = c11_answers()
    short = dict(answers["analyze"], matches=answers["analyze"]["matches"][:3])
    scorer, judge = similarity({**answers, "analyze": [short, answers["analyze"]]})
    result = scorer.run(output="...", ground_truth="...")
    assert result.score == 0.15
    analyze = [c for c in judge.calls if c.stage == "analyze"]
    assert analyze[0].schema["properties"]["matches"]["minItems"] == 4
    reask = analyze[1].messages[-1]["content"]
    assert "the answer does not match the required JSON schema: matches has 3 items; at least 4 are required" in reask
    assert "Give exactly one match per ground-truth unit" not in reask  # no check runs on what the schema refused


# --- textual difference ---------------------------------------------------------------------------------

TEXTUAL = load_spec("textual_difference")


def textual(**options) -> Scorer:
    return Scorer(TEXTUAL, options=options)


def test_one_word_replaced_gives_the_edit_ratio():
    """Field case C15 (shared/cases/handed.md)."""
    result = textual().run(output="The quick brown cat", ground_truth="The quick brown fox")
    assert round(result.score, 4) == 0.8421
    step = result.analyze_step_result
    assert round(step["ratio"], 4) == 0.8421
    assert step["confidence"] == 1
    assert step["changes"] == 1
    assert step["lengthDiff"] == 0
    assert result.score == step["ratio"] * step["confidence"]  # not rounded
    assert "minor differences" in result.reason


def test_an_insertion_lowers_confidence():
    """Field case C16 (shared/cases/handed.md)."""
    result = textual().run(output="hello there world", ground_truth="hello world")
    step = result.analyze_step_result
    assert (round(step["ratio"], 4), round(step["confidence"], 4)) == (0.7857, 0.6471)
    assert round(result.score, 4) == 0.5084
    assert "moderate differences" in result.reason


def test_empty_texts_are_identical_and_one_empty_text_scores_zero():
    """Field case C17 (shared/cases/handed.md)."""
    both_empty = textual().run(output="", ground_truth="")
    assert both_empty.score == 1
    assert "identical" in both_empty.reason
    assert textual().run(output="abc", ground_truth="").score == 0
    assert textual().run(output="", ground_truth="abc").score == 0


def test_input_is_the_reference_without_ground_truth():
    assert textual().run(output="same", input="same").score == 1
    assert textual().run(output="same", input="other", ground_truth="same").score == 1
    # an empty ground truth is given: it is the reference, not the input
    assert textual().run(output="same", input="same", ground_truth="").score == 0


def test_textual_difference_reason_names_the_fields_compared():
    assert textual().run(output="hello there world", ground_truth="hello world").reason == (
        "output vs ground_truth: similarity ratio 0.7857 with 1 change and a length difference of 35% "
        "(confidence 0.6471): moderate differences.")
    assert textual().run(output="hello there world", input="hello world").reason.startswith(
        "output vs input: similarity ratio 0.7857 with 1 change")
    # an empty ground truth is given: it is what the output was compared with
    assert textual().run(output="same", input="same", ground_truth="").reason == (
        "output vs ground_truth: similarity ratio 0.0000 with 1 change and a length difference of 100% "
        "(confidence 0.0000): completely different texts.")


def test_textual_difference_scale_and_no_judge():
    scorer = textual(scale=10)
    assert scorer.model is None
    assert round(scorer.run(output="The quick brown cat", ground_truth="The quick brown fox").score, 3) == 8.421


def test_code_points_not_normalised():
    result = textual().run(output="e\u0301", ground_truth="é")
    assert result.analyze_step_result["lengthDiff"] == 0.5
    assert result.score < 1


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60), st.floats(min_value=0.01, max_value=100))
def test_textual_difference_properties(a, b, scale):
    scorer = textual(scale=scale)
    same = scorer.run(output=a, ground_truth=a)
    assert same.score == pytest.approx(scale)
    forward = scorer.run(output=a, ground_truth=b)
    backward = scorer.run(output=b, ground_truth=a)
    for result in (forward, backward):
        assert result.status == "scored"
        assert not math.isnan(result.score)
        assert 0 <= result.score <= scale
    assert forward.analyze_step_result["ratio"] == backward.analyze_step_result["ratio"]
    assert forward.score == pytest.approx(backward.score)
    if a != b:
        assert forward.score < scale


# --- faithfulness (C03/C04 with the shipped spec) ----------------------------------------------------------------


def faithfulness(script: dict, **options):
    judge = FakeJudge(script)
    return load_scorer("faithfulness", judge=judge, **options), judge


@pytest.mark.parametrize("claims", [[], ["  "], ["\n", " "]])
def test_shipped_faithfulness_with_no_claims_is_not_scorable(claims):
    """Field case C03 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": claims}}, context=["Something."])
    result = scorer.run(output="I don't know.")
    assert result.status == "not_scorable"
    assert result.score is None
    assert result.not_scorable.reason == ("The output makes no claims that could be checked "
                                          "against the context.")
    assert [c.stage for c in judge.calls] == ["preprocess"]


@pytest.mark.parametrize("options, item_context", [
    ({}, None),                                 # default option: no context
    ({"context": ["", "   "]}, None),           # only blank passages in the option
    ({"context": ["The tower is in Paris."]}, []),  # the item's own (empty) context overrides the option
    ({}, ["", "  "]),                           # blank item passages
])
def test_shipped_faithfulness_with_no_context_scores_zero(options, item_context):
    """Field case C04 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": ["The tower is in Paris"]}}, **options)
    result = scorer.run(output="The tower is in Paris.", context=item_context)
    assert result.status == "scored"
    assert result.score == 0
    assert result.reason == ("The score is 0 because no context was given: none of the 1 claim in the "
                             "output could be verified.")
    assert [c.stage for c in judge.calls] == ["preprocess"]


def test_faithfulness_scale_option():
    scorer, judge = faithfulness({"preprocess": {"claims": ["A", "B", "C"]},
                                  "analyze": [{"verdict": v, "reason": "r"} for v in ("yes", "yes", "no")],
                                  "reason": REASON}, scale=10)
    result = scorer.run(output="A. B. C.", context=["ctx"])
    assert result.score == 6.67
    assert result.reason.startswith("The score is 6.67 of 10: 2 of 3 claims supported.")
    assert [c.stage for c in judge.calls] == ["preprocess"] + ["analyze"] * 3  # one call per claim


# --- prompt snapshots ------------------------------------------------------------------------------------------

SNAPSHOT_CASES = {
    "faithfulness": dict(
        run=dict(output="The Eiffel Tower is in Paris. It was finished in 1889 and is 500 m tall.",
                 input="Tell me about the Eiffel Tower.",
                 context=["The Eiffel Tower, in Paris, was completed in 1889.", "It is 330 metres tall."]),
        answers={
            "preprocess": {"claims": ["The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1889.",
                                      "The Eiffel Tower is 500 m tall."]},
            # one claim per call: `render` gives this answer to each claim's call
            "analyze": {"verdict": "yes", "reason": "Passage 1 says so."},
        }),
    "answer_similarity": dict(
        run=dict(output="Paris is France's capital; about 2 million people live there.",
                 input="What is the capital of France and how many people live there?",
                 ground_truth="The capital of France is Paris, with 2.1 million inhabitants."),
        answers={
            "preprocess": {"outputUnits": ["Paris is the capital of France", "About 2 million people live in Paris"],
                           "groundTruthUnits": ["The capital of France is Paris", "Paris has 2.1 million inhabitants"]},
            "analyze": {"matches": [
                {"groundTruthUnit": "The capital of France is Paris", "outputUnit": "Paris is the capital of France",
                 "match": "exact", "reason": "Same fact."},
                {"groundTruthUnit": "Paris has 2.1 million inhabitants",
                 "outputUnit": "About 2 million people live in Paris", "match": "partial", "reason": "Less precise."}],
                "contradictions": [], "extraUnits": []},
        }),
}


def render_all(scorer_id: str) -> str:
    case = SNAPSHOT_CASES[scorer_id]
    scorer = load_scorer(scorer_id, judge=FakeJudge())
    shown = scorer.render(**case["run"], answers=case["answers"])
    return "".join(f"===== {stage} =====\n{text}\n\n" for stage, text in shown)


@pytest.mark.parametrize("scorer_id", sorted(SNAPSHOT_CASES))
def test_prompt_snapshot(scorer_id):
    text = render_all(scorer_id)
    stages = (["preprocess", "analyze", "analyze", "analyze"] if scorer_id == "faithfulness"  # a call per claim
              else ["preprocess", "analyze", "reason"])
    assert [line for line in text.splitlines() if line.startswith("===== ")] == [f"===== {s} =====" for s in stages]
    for value in SNAPSHOT_CASES[scorer_id]["run"].values():
        for passage in value if isinstance(value, list) else [value]:
            assert passage in text
    path = SNAPSHOTS / f"{scorer_id}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}: run with SCORESPEC_UPDATE_SNAPSHOTS=1 once"
    assert text == path.read_text(encoding="utf-8")

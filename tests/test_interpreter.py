"""The stage interpreter with the in-process FakeJudge (issue 3; cases from handed.md)."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from conftest import SPEC_FIXTURES, verdicts

import engine
from engine import functions
from engine.bind.load import load_scorer, load_scorer_keywords
from engine.core.errors import ScorerRunError
from engine.interpret.scorer import OptionError, Scorer
from engine.interpret.values import round_half_away
from engine.judge.contract import normalize_answer
from engine.spec.compile import compile_file
from engine.testing import FakeJudge

REASON = {"reason": "Because of the verdicts."}
JINJA_TEXT = "{{ 7*7 }} {% for x in range(3) %}x{% endfor %} {#"


def v(*values: str) -> list[dict]:
    """Faithfulness asks one claim per judge call: one answer per claim, in order."""
    return [{"verdict": x, "reason": "r"} for x in values]


def claim_of(prompt: str) -> str:
    """The claim a faithfulness verify prompt asks about."""
    return prompt.split("CLAIM:\n<<<\n", 1)[1].split("\n>>>", 1)[0]


def faithfulness(script: dict, **options):
    judge = FakeJudge(script)
    return load_scorer("faithfulness", judge=judge, **options), judge


def stages_called(judge: FakeJudge) -> list[str]:
    return [call.stage for call in judge.calls]


# --- faithfulness cases --------------------------------------------------------------------------


def test_the_score_is_the_share_of_supported_claims():
    """Field case C01 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": ["A", "B", "C"]},
                                  "analyze": v("yes", "no", "unsure"), "reason": REASON})
    result = scorer.run(output="A. B. C.", context=["A is true."])
    assert result.status == "scored"
    assert result.score == 0.33
    assert result.reason == ('The score is 0.33 of 1: 1 of 3 claims supported. Supported by the context: "A". '
                             'Not supported by the context: "B" (r); "C" (r).')
    assert len(judge.calls) == 4  # one call per claim; the reason is written from the verdicts
    assert result.preprocess_step_result == ["A", "B", "C"]
    # the seed's shape, {verdicts: [{verdict, reason}]}, each verdict also naming its claim
    assert result.analyze_step_result == {"verdicts": [{"claim": claim, **verdict}
                                                       for claim, verdict in zip("ABC", v("yes", "no", "unsure"))]}
    assert result.to_json_dict()["analyzeStepResult"]["verdicts"][1] == {"claim": "B", **v("no")[0]}
    assert stages_called(judge) == ["preprocess", "analyze", "analyze", "analyze"]
    assert [claim_of(p) for p in judge.prompts("analyze")] == ["A", "B", "C"]
    assert all("[1] A is true." in p for p in judge.prompts("analyze"))
    assert result.stages["analyze"].attempts == result.stages["analyze"].usage.calls == 3
    assert result.analyze_prompt == "\n\n".join(f"[{i}]\n{p}" for i, p in enumerate(judge.prompts("analyze")))
    assert [json.loads(raw) for raw in json.loads(result.stages["analyze"].raw_answer)] == v("yes", "no", "unsure")
    assert result.generate_reason_prompt is None


@pytest.mark.parametrize("first, second", [("Yes", "no"), (" YES ", "No"), ("yes\n", " nO"), ("yEs", "UNSURE ")])
def test_verdict_case_and_spaces_never_change_meaning(first, second):
    """Field case C02 (shared/cases/handed.md)."""
    scorer, _ = faithfulness({"preprocess": {"claims": ["A", "B"]}, "analyze": v(first, second),
                              "reason": REASON})
    result = scorer.run(output="A. B.", context=["ctx"])
    assert result.score == 0.5
    assert result.analyze_step_result["verdicts"][0]["verdict"] == "yes"
    assert result.analyze_step_result["verdicts"][1]["verdict"] in ("no", "unsure")
    assert result.usage.reasks == 0


def test_no_claims_is_not_scorable_and_no_verdict_call():
    """Field case C03 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": []}})
    result = scorer.run(output="I don't know.", context=["The sky is blue."])
    assert result.status == "not_scorable"
    assert result.score is None
    assert "no claims" in result.not_scorable.reason
    assert result.reason == result.not_scorable.reason
    assert stages_called(judge) == ["preprocess"]
    assert result.stages["analyze"].skipped is True
    data = result.to_json_dict()
    assert data["score"] is None and data["notScorable"]["reason"] == result.not_scorable.reason


@pytest.mark.parametrize("context", [[], ["", "   "], ["\n\t"]], ids=["empty", "blank", "whitespace"])
def test_no_context_scores_zero_without_verdict_call(context):
    """Field case C04 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": ["The tower is in Paris"]}})
    result = scorer.run(output="The tower is in Paris.", context=context)
    assert result.status == "scored"
    assert result.score == 0
    assert "no context was given" in result.reason
    assert stages_called(judge) == ["preprocess"]
    assert result.stages["analyze"].skipped is True


def test_no_context_and_no_claims_is_not_scorable():
    """Field case C04 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": []}})
    result = scorer.run(output="Hmm.", context=["", " "])
    assert result.status == "not_scorable"
    assert stages_called(judge) == ["preprocess"]


def verdict_list(script: dict):
    """The test spec asking every claim's verdict in one call, with a verdict-count check."""
    judge = FakeJudge(script)
    return Scorer(compile_file(SPEC_FIXTURES / "stages" / "verdict_list.yaml"), judge=judge), judge


def verdict_count_checked(script: dict):
    """`verdict_list` with the verdict count held by its check alone (no schema bounds)."""
    judge = FakeJudge(script)
    return Scorer(compile_file(SPEC_FIXTURES / "stages" / "verdict_count_checked.yaml"), judge=judge), judge


def listed(*values: str) -> dict:
    return {"verdicts": [{"verdict": x, "reason": "r"} for x in values]}


def test_a_wrong_verdict_count_is_reasked_then_scored():
    """Field case C05 (shared/cases/handed.md)."""
    scorer, judge = verdict_list({"preprocess": {"claims": ["A", "B", "C"]},
                                  "analyze": [listed("yes", "yes"), listed("yes", "yes", "no")]})
    result = scorer.run(output="A. B. C.")
    assert result.score == 0.67
    analyze_calls = [c for c in judge.calls if c.stage == "analyze"]
    assert len(analyze_calls) == 2
    reask = analyze_calls[1].messages[-1]
    assert reask["role"] == "user"
    assert "verdicts has 2 items; at least 3 are required" in reask["content"]
    # the schema refused the answer: the checks never ran on it (case C35)
    assert "Give exactly one verdict per claim" not in reask["content"]
    assert result.stages["analyze"].usage.reasks == 1
    assert result.stages["analyze"].attempts == 2
    assert result.usage.reasks == 1
    assert result.usage.transport_retries == 0


def test_a_check_tells_the_judge_what_was_wrong_on_reask():
    """Field case C05 (shared/cases/handed.md)."""
    scorer, judge = verdict_count_checked({"preprocess": {"claims": ["A", "B", "C"]},
                                           "analyze": [listed("yes", "yes"), listed("yes", "yes", "no")]})
    assert scorer.run(output="A. B. C.").score == 0.67
    reask = [c for c in judge.calls if c.stage == "analyze"][1].messages[-1]["content"]
    assert "Give exactly one verdict per claim, in the same order as the claims." in reask


def test_a_verdict_count_never_right_fails_naming_stage_and_check():
    """Field case C06 (shared/cases/handed.md)."""
    scorer, judge = verdict_count_checked({"preprocess": {"claims": ["A", "B", "C"]},
                                           "analyze": listed("yes", "yes")})
    result = scorer.run(output="A. B. C.")
    assert result.status == "failed"
    assert result.score is None
    assert result.error.stage == "analyze"
    assert result.error.kind == "check"
    assert "answer.verdicts | length == preprocess | length" in result.error.message
    assert "Give exactly one verdict per claim" in result.error.message
    assert result.error.attempts == 3  # max_reasks 2 + the first ask
    assert json.loads(result.error.raw_answer) == listed("yes", "yes")
    assert stages_called(judge) == ["preprocess"] + ["analyze"] * 3
    assert result.stages["analyze"].usage.calls == 3
    assert result.stages["analyze"].usage.reasks == 2
    assert "reason" not in result.stages


def test_user_text_is_never_rendered_as_a_template():
    """Field case C07 (shared/cases/handed.md)."""
    scorer, judge = faithfulness({"preprocess": {"claims": [JINJA_TEXT]}, "analyze": v("yes"), "reason": REASON})
    result = scorer.run(output=JINJA_TEXT, input=JINJA_TEXT, context=[JINJA_TEXT])
    assert result.score == 1
    (preprocess_prompt,) = judge.prompts("preprocess")
    assert preprocess_prompt.count(JINJA_TEXT) == 2  # the input and the output
    assert "49" not in preprocess_prompt
    (analyze_prompt,) = judge.prompts("analyze")
    assert analyze_prompt.count(JINJA_TEXT) == 2  # the context and the judge's own claim
    assert result.preprocess_prompt == preprocess_prompt


def test_japanese_claims_without_full_stops_are_judged():
    """Field case C20 (shared/cases/handed.md)."""
    output = "東京は日本の首都です。富士山は日本で一番高い山です"
    context = ["東京は日本の首都であり、富士山は日本の最高峰です"]
    claims = ["東京は日本の首都です", "富士山は日本で一番高い山です"]
    scorer, judge = faithfulness({"preprocess": {"claims": claims}, "analyze": v("yes", "yes"), "reason": REASON})
    result = scorer.run(output=output, context=context)
    assert "." not in output + context[0]
    assert result.score == 1
    assert result.preprocess_step_result == claims
    assert output in judge.prompts("preprocess")[0]
    assert [claim_of(p) for p in judge.prompts("analyze")] == claims


def test_missing_required_output_fails_before_any_judge_call():
    scorer, judge = faithfulness({})
    result = scorer.run(context=["ctx"])
    assert result.status == "failed"
    assert (result.error.kind, result.error.stage) == ("input", None)
    assert "'output'" in result.error.message
    assert judge.calls == []


def test_transport_failure_from_the_judge_fails_the_item():
    scorer, _ = faithfulness({"preprocess": ScorerRunError("transport", "HTTP 503 five times", attempts=5)})
    result = scorer.run(output="A.", context=["ctx"])
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "transport", "preprocess")
    assert result.error.attempts == 5


def test_per_item_schema_bounds_reach_the_judge_call():
    for claims in (["A"], ["A", "B", "C"]):
        scorer, judge = verdict_list({"preprocess": {"claims": claims}, "analyze": listed(*["yes"] * len(claims))})
        assert scorer.run(output="x").score == 1
        (call,) = [c for c in judge.calls if c.stage == "analyze"]
        items = call.schema["properties"]["verdicts"]
        assert items["minItems"] == items["maxItems"] == len(claims)
    # the compiled schema itself is not changed by an item
    stage = scorer.plan.stages[1]
    assert stage.schema["properties"]["verdicts"]["minItems"] == 1  # the load-time placeholder


def test_preprocess_result_expression_drops_blank_claims():
    scorer, judge = faithfulness({"preprocess": {"claims": ["  A  ", " ", "B"]}, "analyze": v("yes", "no"),
                                  "reason": REASON})
    result = scorer.run(output="A. B.", context=["ctx"])
    assert result.preprocess_step_result == ["A", "B"]
    assert result.score == 0.5


# --- user specs: rounding, range, not scorable, when --------------------------------------------------

ROUNDING_SPEC = """
format: 1
id: rounding
name: Rounding
description: The score is an option, to test rounding and range checks.
version: 1
options:
  value: {type: number, default: 0}
  scale: {type: number, exclusiveMinimum: 0, default: 1}
stages:
  - id: analyze
    function: textual_difference
    args: {reference: "run.input", candidate: "run.output"}
score:
  formula: "options.value"
  round: 2
"""


@pytest.mark.parametrize("value, expected", [(0.575, 0.58), (0.125, 0.13), (-0.125, -0.13), (1.005, 1.01),
                                             (0.5, 0.5), (0.3333, 0.33), (2.675, 2.68), (0.0, 0.0)])
def test_round_half_away_from_zero(value, expected):
    """Field case C13 (shared/cases/handed.md)."""
    assert round_half_away(value, 2) == expected


def test_python_round_differs_from_half_away_rounding():
    """Field case C13 (shared/cases/handed.md)."""
    assert (round(0.575, 2), round(0.125, 2)) == (0.57, 0.12)
    assert round_half_away(0.5, 0) == 1.0 and round_half_away(2.5, 0) == 3.0


@pytest.mark.parametrize("value, expected", [(0.575, 0.58), (0.125, 0.13), (0.004, 0.0), (0.995, 1.0)])
def test_a_spec_formula_rounds_half_away_from_zero(write_spec, value, expected):
    """Field case C13 (shared/cases/handed.md)."""
    compiled = compile_file(write_spec("rounding", ROUNDING_SPEC))
    result = Scorer(compiled, options={"value": value}).run(output="a", input="a")
    assert result.score == expected


@pytest.mark.parametrize("value, shown", [(1.3, "1.3"), (-0.2, "-0.2"), (float("inf"), "inf"),
                                          (float("nan"), "nan")])
def test_an_out_of_range_formula_fails_naming_it(write_spec, value, shown):
    """Field case C14 (shared/cases/handed.md)."""
    compiled = compile_file(write_spec("rounding", ROUNDING_SPEC))
    result = Scorer(compiled, options={"value": value}).run(output="a", input="a")
    assert result.status == "failed"
    assert result.score is None
    assert result.error.kind == "formula"
    assert "score.formula 'options.value'" in result.error.message
    assert shown in result.error.message


def test_the_scale_option_widens_the_range(write_spec):
    """Field case C14 (shared/cases/handed.md)."""
    compiled = compile_file(write_spec("rounding", ROUNDING_SPEC))
    assert Scorer(compiled, options={"value": 1.3, "scale": 2}).run(output="a", input="a").score == 1.3


@pytest.mark.parametrize("formula, shown", [
    ("supported / (preprocess | length) + 0.3", "1.3"),
    ("supported * 1e308 * 10 - supported * 1e308 * 10", "nan"),  # inf - inf
    ("'x' ~ supported", "'x2'"),
])
def test_a_user_spec_formula_yielding_a_bad_value_fails(verdict_spec, formula, shown):
    """Field case C14 (shared/cases/handed.md)."""
    compiled = compile_file(verdict_spec(formula=formula))
    judge = FakeJudge({"preprocess": {"claims": ["A", "B"]}, "analyze": verdicts("yes", "yes")})
    result = Scorer(compiled, judge=judge).run(output="A. B.")
    assert result.status == "failed"
    assert result.score is None
    assert (result.error.kind, result.error.stage) == ("formula", None)
    assert f"score.formula {formula!r}" in result.error.message
    assert shown in result.error.message
    assert "NaN" not in json.dumps(result.to_json_dict())


def test_not_scorable_rule_and_when_skipped_stage(verdict_spec):
    judge = FakeJudge({"preprocess": {"claims": []}})
    result = Scorer(compile_file(verdict_spec()), judge=judge).run(output="Nothing here.")
    assert result.status == "not_scorable"
    assert result.not_scorable.reason == "Not scorable: no claims in the output."
    assert result.score is None and result.error is None
    assert result.stages["analyze"].skipped is True
    assert result.stages["analyze"].result is None
    assert result.stages["analyze"].usage.calls == 0
    assert stages_called(judge) == ["preprocess"]


def test_user_spec_scored_with_template_reason(verdict_spec):
    judge = FakeJudge({"preprocess": {"claims": ["A", "B", "C"]}, "analyze": verdicts("yes", "no", "yes")})
    result = Scorer(compile_file(verdict_spec()), judge=judge, options={"scale": 10}).run(output="x")
    assert result.score == 6.67
    assert result.reason == "2 of 3 claims supported"
    assert result.usage.calls == 2


def test_enum_outside_values_is_reasked(verdict_spec):
    judge = FakeJudge({"preprocess": {"claims": ["A"]}, "analyze": [verdicts("maybe"), verdicts(" Yes")]})
    result = Scorer(compile_file(verdict_spec()), judge=judge).run(output="x")
    assert result.score == 1
    assert result.usage.reasks == 1
    assert 'at verdicts/0/verdict: "maybe" is not one of "yes", "no" or "unsure"' in judge.calls[-1].messages[-1]["content"]


def test_rule_function_raising_fails_the_item(write_spec, monkeypatch):
    monkeypatch.setattr(functions, "_REGISTRY", dict(functions._REGISTRY))

    def explode(text):
        raise ValueError("no good")

    functions.register("explode", explode, result={"type": "object"})
    path = write_spec("boom", """
        format: 1
        id: boom
        name: Boom
        description: d
        version: 1
        stages:
          - id: analyze
            function: explode
            args: {text: "run.output"}
        score:
          formula: "1"
    """)
    result = Scorer(compile_file(path)).run(output="x")
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "function", "analyze")
    assert result.error.message == "explode raised ValueError: no good"


# --- for_each: one judge call per element ------------------------------------------------------------


def claim_each(script: dict):
    """The test spec asking the judge once per claim (tests/specs/stages/claim_each.yaml)."""
    judge = FakeJudge(script)
    return Scorer(compile_file(SPEC_FIXTURES / "stages" / "claim_each.yaml"), judge=judge), judge


CLAIMS = ["red apple", "the sky is blue"]


def test_for_each_asks_once_per_element_with_each_and_each_index():
    scorer, judge = claim_each({"preprocess": {"claims": CLAIMS},
                                "analyze": [{"verdict": "yes", "words": ["red"]}, {"verdict": "no", "words": []}]})
    result = scorer.run(output="x")
    assert (result.status, result.score, result.reason) == ("scored", 0.5, "1 of 2 claims supported")
    assert stages_called(judge) == ["preprocess", "analyze", "analyze"]
    assert judge.prompts("analyze") == [
        "Claim 1 of 2:\n<<<\nred apple\n>>>\nIs it true? Quote at most 2 of its words.",
        "Claim 2 of 2:\n<<<\nthe sky is blue\n>>>\nIs it true? Quote at most 4 of its words."]
    # the {$expr} schema values are computed per element; the compiled schema keeps its placeholder
    assert [c.schema["properties"]["words"]["maxItems"] for c in judge.calls[1:]] == [2, 4]
    assert scorer.plan.stages[1].schema["properties"]["words"]["maxItems"] == 1
    # `result` per element (it sees each and each_index); the stage's result is their list
    assert result.analyze_step_result == [{"claim": "red apple", "position": 0, "supported": True},
                                          {"claim": "the sky is blue", "position": 1, "supported": False}]
    record = result.stages["analyze"]
    assert (record.attempts, record.usage.calls, record.usage.reasks) == (2, 2, 0)
    assert result.usage.calls == 3
    assert record.prompt == result.analyze_prompt == "\n\n".join(
        f"[{i}]\n{p}" for i, p in enumerate(judge.prompts("analyze")))
    assert json.loads(record.raw_answer) == [json.dumps({"verdict": "yes", "words": ["red"]}),
                                             json.dumps({"verdict": "no", "words": []})]


def test_for_each_reasks_per_element_and_sums_attempts():
    scorer, judge = claim_each({"preprocess": {"claims": CLAIMS}, "analyze": [
        {"verdict": "yes", "words": ["red", "apple", "pie"]},  # element 0: 3 words, its bound is 2
        {"verdict": "yes", "words": ["red"]},
        {"verdict": "yes", "words": ["cloud"]},  # element 1: the check wants a word of its own claim
        {"verdict": "yes", "words": ["sky"]}]})
    result = scorer.run(output="x")
    assert result.score == 1
    calls = [c for c in judge.calls if c.stage == "analyze"]
    assert len(calls) == 4
    assert "words has 3 items; at most 2 are allowed" in calls[1].messages[-1]["content"]  # element 0's own bound
    assert "A yes must quote a word of the claim." in calls[3].messages[-1]["content"]
    assert "the sky is blue" in calls[3].messages[0]["content"]  # the re-ask keeps element 1's prompt
    record = result.stages["analyze"]
    assert (record.attempts, record.usage.calls, record.usage.reasks) == (4, 4, 2)
    assert result.usage.reasks == 2
    assert [x["supported"] for x in result.analyze_step_result] == [True, True]


def test_for_each_failure_names_the_element_and_the_stage():
    scorer, judge = claim_each({"preprocess": {"claims": CLAIMS}, "analyze": [
        {"verdict": "no", "words": []}, {"verdict": "yes", "words": ["cloud"]}]})  # the last repeats
    result = scorer.run(output="x")
    assert (result.status, result.score) == ("failed", None)
    assert (result.error.stage, result.error.kind) == ("analyze", "check")
    assert result.error.message.startswith("element 1: check ")
    assert "A yes must quote a word of the claim." in result.error.message
    assert result.error.attempts == 2  # element 1's own attempts (max_reasks 1)
    assert json.loads(result.error.raw_answer) == {"verdict": "yes", "words": ["cloud"]}
    record = result.stages["analyze"]
    assert record.result is None and result.analyze_step_result is None
    assert (record.attempts, record.usage.calls) == (3, 3)  # element 0's call counts too
    assert result.usage.calls == 4
    assert record.prompt.startswith("[0]\nClaim 1 of 2:") and "\n\n[1]\nClaim 2 of 2:" in record.prompt
    assert len(json.loads(record.raw_answer)) == 2


def test_for_each_transport_failure_names_the_element():
    scorer, _ = claim_each({"preprocess": {"claims": CLAIMS}, "analyze": [
        {"verdict": "no", "words": []}, ScorerRunError("transport", "HTTP 503 five times", attempts=5)]})
    result = scorer.run(output="x")
    assert (result.status, result.error.stage, result.error.kind) == ("failed", "analyze", "transport")
    assert result.error.message == "element 1: HTTP 503 five times"
    assert result.stages["analyze"].attempts == 6


EACH_INPUT_SPEC = """
    format: 1
    id: each_input
    name: Each input
    description: One call per element of the item's input.
    version: 1
    stages:
      - id: analyze
        for_each: run.input
        prompt: e/ask.j2
        output_schema: {type: object, required: [verdict], properties: {verdict: {type: string}}}
    score:
      formula: "analyze | count('verdict', 'yes') / 10"
"""


@pytest.fixture
def each_input(write_spec):
    return compile_file(write_spec("each_input", EACH_INPUT_SPEC, {"e/ask.j2": "{{ each_index }}: {{ each }}"}))


@pytest.mark.parametrize("value, kind", [("abc", "str"), (3, "int"), ({"a": 1}, "dict"), (None, "str")])
def test_for_each_not_giving_a_list_fails_with_kind_expression(each_input, value, kind):
    judge = FakeJudge({"analyze": {"verdict": "yes"}})
    result = Scorer(each_input, judge=judge).run(output="x", input=value)
    assert (result.status, result.error.stage, result.error.kind) == ("failed", "analyze", "expression")
    assert result.error.message == f"analyze.for_each: 'run.input' gave {kind}, expected a list"
    assert judge.calls == []


def test_for_each_over_an_empty_list_makes_no_call(each_input):
    judge = FakeJudge({"analyze": {"verdict": "yes"}})
    result = Scorer(each_input, judge=judge).run(output="x", input=[])
    assert (result.status, result.score) == ("scored", 0)
    assert result.analyze_step_result == []
    record = result.stages["analyze"]
    assert (record.skipped, record.prompt, record.raw_answer, record.attempts) == (False, None, None, 0)
    assert judge.calls == [] and result.usage.calls == 0


def test_for_each_without_result_gives_the_answers(each_input):
    judge = FakeJudge({"analyze": [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]})
    result = Scorer(each_input, judge=judge).run(output="x", input=["a", {"k": 1}, 7])
    assert result.analyze_step_result == [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]
    assert result.score == 0.2
    assert judge.prompts("analyze") == ["0: a", "1: {'k': 1}", "2: 7"]


# --- verdict normalisation ------------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {
    "verdicts": {"type": "array", "items": {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["yes", "no", "unsure"]}, "reason": {"type": "string"}}}},
    "label": {"type": "string", "enum": ["Exact", "Partial"]},
}}


def test_normalize_answer_canonicalises_enum_strings_only():
    answer = {"verdicts": [{"verdict": " YES ", "reason": " Yes "}, {"verdict": "Unsure", "reason": "x"}],
              "label": "exact", "extra": " Yes "}
    assert normalize_answer(answer, SCHEMA) == {
        "verdicts": [{"verdict": "yes", "reason": " Yes "}, {"verdict": "unsure", "reason": "x"}],
        "label": "Exact", "extra": " Yes "}


def test_normalize_answer_leaves_unknown_values():
    assert normalize_answer({"label": "maybe"}, SCHEMA) == {"label": "maybe"}
    assert normalize_answer({"verdicts": "yes"}, SCHEMA) == {"verdicts": "yes"}
    assert normalize_answer(None, SCHEMA) is None


# --- options ------------------------------------------------------------------------------------------------


def test_options_merge_over_defaults():
    """Field case C12 (shared/cases/handed.md)."""
    scorer = load_scorer("answer_similarity", judge=FakeJudge(), scale=10)
    assert scorer.options == {"requireGroundTruth": True, "semanticThreshold": 0.8, "exactMatchBonus": 0.2,
                              "missingPenalty": 0.15, "contradictionPenalty": 1.0, "extraInfoPenalty": 0.05,
                              "scale": 10}
    assert scorer.scale == 10.0


def test_unknown_option_has_did_you_mean():
    with pytest.raises(OptionError, match=r"faithfulness: unknown option 'scael' \(did you mean 'scale'\?\)"):
        load_scorer("faithfulness", judge=FakeJudge(), options={"scael": 2})
    with pytest.raises(OptionError) as info:
        load_scorer("faithfulness", judge=FakeJudge(), scael=2)
    assert str(info.value) == ("faithfulness: 'scael' is neither an option of this scorer nor a keyword of "
                               "load_scorer (did you mean the option 'scale'?)")


def test_a_misspelled_keyword_is_named_as_a_keyword():
    with pytest.raises(OptionError) as info:
        load_scorer("faithfulness", mdoel="openai/gpt-4o-mini")
    assert str(info.value) == ("faithfulness: 'mdoel' is neither an option of this scorer nor a keyword of "
                               "load_scorer (did you mean the keyword 'model'?)")
    with pytest.raises(OptionError) as info:
        load_scorer("textual_difference", zzz=1)
    assert str(info.value) == (
        "textual_difference: 'zzz' is neither an option of this scorer nor a keyword of load_scorer (options: "
        "scale; keywords: model, options, judge, base_url, api_key, mode, timeout_s, context_window, label, cache, "
        "refresh, jury, jury_min, settings)")


def test_options_are_given_as_a_mapping_and_the_shorthand_adds_to_it():
    scorer = load_scorer("answer_similarity", judge=FakeJudge(), options={"scale": 10}, missingPenalty=0.3)
    assert (scorer.options["scale"], scorer.options["missingPenalty"]) == (10, 0.3)
    with pytest.raises(OptionError, match=r"^answer_similarity: option 'scale' is given twice, in "
                                          r"options=\{\.\.\.\} and as scale=$"):
        load_scorer("answer_similarity", judge=FakeJudge(), options={"scale": 10}, scale=5)
    with pytest.raises(OptionError, match="options must be a mapping of option names to values, not list"):
        load_scorer("answer_similarity", judge=FakeJudge(), options=[("scale", 10)])


def test_load_scorer_keywords_are_its_parameters():
    assert load_scorer_keywords() == ["name_or_path", "model", "options", "judge", "base_url", "api_key", "mode",
                                      "timeout_s", "context_window", "label", "cache", "refresh", "jury", "jury_min",
                                      "settings"]
    import inspect

    from engine.bind.load import SETTINGS_KEYWORDS

    named = [n for n, p in inspect.signature(load_scorer).parameters.items() if p.kind is not p.VAR_KEYWORD]
    assert sorted(load_scorer_keywords()) == sorted(named + list(SETTINGS_KEYWORDS))


OPTION_NAMED_LIKE_KEYWORDS = """
    format: 1
    id: keyword_options
    name: Keyword options
    description: A rule scorer whose options are named like load_scorer's keywords.
    version: 1
    fields:
      output: {required: true}
    options:
      mode: {type: string, default: strict}
      timeout_s: {type: number, default: 1}
      scale: {type: number, exclusiveMinimum: 0, default: 1}
    stages:
      - id: analyze
        function: textual_difference
        args: {reference: "options.mode", candidate: "run.output | string"}
    score:
      formula: "analyze.ratio * options.scale"
    reason:
      - template: "mode {{ options.mode }}, timeout {{ options.timeout_s }}"
"""


def test_an_option_named_like_a_keyword_goes_in_options(write_spec):
    path = str(write_spec("keyword_options", OPTION_NAMED_LIKE_KEYWORDS))
    scorer = load_scorer(path, options={"mode": "lenient", "timeout_s": 5})
    assert scorer.options == {"mode": "lenient", "timeout_s": 5, "scale": 1}
    result = scorer.run(output="lenient")
    assert (result.score, result.reason) == (1.0, "mode lenient, timeout 5")
    with pytest.raises(OptionError) as info:
        load_scorer(path, mode="lenient")
    assert str(info.value) == ("keyword_options: 'mode' is both a keyword of load_scorer and an option of this "
                               "scorer: pass the option as options={'mode': ...} (with options= given, mode= is "
                               "the keyword)")
    # with options= given, mode= is the judge's structured-output mode, and the option keeps its default
    assert load_scorer(path, options={}, mode="json").options["mode"] == "strict"


@pytest.mark.parametrize("name, value, fragment", [
    ("scale", 0, "less than or equal to the minimum of 0"),
    ("scale", "10", "'10' is not of type 'number'"),
    ("requireGroundTruth", "false", "'false' is not of type 'boolean'"),
    ("semanticThreshold", 1.5, "1.5 is greater than the maximum of 1"),
])
def test_invalid_option_values_are_rejected(name, value, fragment):
    with pytest.raises(OptionError) as info:
        load_scorer("answer_similarity", judge=FakeJudge(), **{name: value})
    assert str(info.value).startswith(f"answer_similarity: option {name!r}: ")
    assert fragment in str(info.value)


def test_context_option_used_when_item_has_none():
    scorer, judge = faithfulness({"preprocess": {"claims": ["A"]}, "analyze": v("yes"), "reason": REASON},
                                 context=["Option passage."])
    assert scorer.run(output="A.").score == 1
    assert "[1] Option passage." in judge.prompts("analyze")[0]


# --- rule function registry --------------------------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(functions, "_REGISTRY", dict(functions._REGISTRY))
    monkeypatch.setattr(functions, "_entry_points_loaded", False)
    return functions


def test_registry_lookup_miss_has_did_you_mean(registry):
    with pytest.raises(KeyError) as info:
        registry.lookup("textual_diff")
    assert info.value.args[0] == "did you mean 'textual_difference'?"
    with pytest.raises(KeyError) as info:
        registry.lookup("zzz")
    assert info.value.args[0] == "`scorespec list --functions` lists them"


def test_registry_rejects_duplicates(registry):
    with pytest.raises(ValueError, match="'textual_difference' is already registered"):
        registry.register("textual_difference", lambda **kw: {})
    fn = registry.lookup("textual_difference")
    assert registry.register("textual_difference", fn) is fn  # the same function again is fine

    @registry.register("word_count", result={"type": "object", "properties": {"words": {"type": "integer"}}})
    def word_count(text):
        return {"words": len(text.split())}

    assert registry.lookup("word_count") is word_count
    assert word_count.result_keys == {"words"} and word_count.required == {"text"}
    with pytest.raises(ValueError):
        registry.register("word_count", lambda text: {}, result={"type": "object"})
    with pytest.raises(TypeError, match="'count' must declare its result"):
        registry.register("count", lambda text: {})


class _EntryPoint:
    def __init__(self, name, fn):
        self.name, self._fn = name, fn

    def load(self):
        return self._fn


def test_entry_point_functions_are_found(registry, monkeypatch, write_spec):
    @registry.rule_function(result={"type": "object", "properties": {"loud": {"type": "string"},
                                                                      "ratio": {"type": "number"}}})
    def shout(text):
        return {"loud": text.upper(), "ratio": 1.0 if text.isupper() else 0.0}

    groups = []

    def fake_entry_points(group):
        groups.append(group)
        return [_EntryPoint("shout", shout)] if group == "scorespec.functions" else []

    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points)  # read when first needed
    assert "shout" in registry.names()
    assert groups == ["scorespec.functions"]
    path = write_spec("loud", """
        format: 1
        id: loud
        name: Loud
        description: d
        version: 1
        stages:
          - id: analyze
            function: shout
            args: {text: "run.output"}
        score:
          formula: "analyze.ratio"
    """)
    result = Scorer(compile_file(path)).run(output="HEY")
    assert result.score == 1.0
    assert result.analyze_step_result == {"loud": "HEY", "ratio": 1.0}


def test_entry_point_never_replaces_builtin(registry, monkeypatch):
    builtin = registry.lookup("textual_difference")
    monkeypatch.setattr("importlib.metadata.entry_points",
                        lambda group: [_EntryPoint("textual_difference", lambda **kw: {})])
    assert "textual_difference" in registry.names()
    assert registry.lookup("textual_difference") is builtin


# --- running ------------------------------------------------------------------------------------------------


def test_rule_only_scorer_starts_no_event_loop(monkeypatch):
    scorer = load_scorer("textual_difference")

    def forbidden(*args, **kwargs):
        raise AssertionError("an event loop was started")

    monkeypatch.setattr(asyncio, "run", forbidden)
    monkeypatch.setattr(asyncio, "new_event_loop", forbidden)
    result = scorer.run(output="hello world", ground_truth="hello world")
    assert result.score == 1.0
    assert scorer.model is None


def test_run_inside_a_running_loop_and_arun():
    scorer, _ = faithfulness({"preprocess": {"claims": ["A"]}, "analyze": v("no"), "reason": REASON})

    async def main():
        inside = scorer.run(output="A.", context=["ctx"])
        awaited = await scorer.arun(output="A.", context=["ctx"])
        return inside, awaited

    inside, awaited = asyncio.run(main())
    assert inside.score == awaited.score == 0
    assert inside.run_id != awaited.run_id


SEED_KEYS = {"runId", "score", "reason", "preprocessStepResult", "preprocessPrompt", "analyzeStepResult",
             "analyzePrompt", "generateReasonPrompt"}


@pytest.mark.parametrize("value, problem", [
    ([{"claim": "a", "verdict": "yes", "reason": "r"}, None, 1, 2.5, True], None),
    ([1, "x", {"a": [None, {"b": {1, 2}}]}], "a set at [2].a[1].b"),
    ({"a": 1, "b": [1, b"x"]}, "a bytes at b[1]"),
    ({"a": {3: "x"}}, "a int key at a"),
    ([float("nan"), type("Text", (str,), {})("sub")], None),  # subclasses of JSON scalars are JSON
    (object(), "a object at the top"),
])
def test_json_problem_names_the_first_non_json_value(value, problem):
    from engine.interpret.values import json_problem as _json_problem

    assert _json_problem(value) == problem


def test_usage_add_sums_every_field_in_place():
    from engine.core.result import Usage

    total = Usage(calls=1, seconds=0.25)
    total.add(Usage(calls=2, tokens_in=10, tokens_out=5, reasks=1, transport_retries=3, seconds=0.5, cache_hits=4,
                    cache_misses=6))
    total.add(Usage(cache_hits=1))
    assert total.model_dump(by_alias=True) == {"calls": 3, "tokensIn": 10, "tokensOut": 5, "reasks": 1,
                                               "transportRetries": 3, "seconds": 0.75, "cacheHits": 5,
                                               "cacheMisses": 6}
    assert total.model_fields_set == set(Usage.model_fields)  # as if each field had been assigned


def test_result_json_is_camel_case():
    scorer, _ = faithfulness({"preprocess": {"claims": ["A"]}, "analyze": v("yes"), "reason": REASON})
    data = scorer.run(output="A.", context=["ctx"], run_id="run-1").to_json_dict()
    assert SEED_KEYS <= set(data)
    assert {"notScorable", "specHash", "specVersion", "scorer", "model", "usage", "stages", "error"} <= set(data)
    assert not [k for k in data if "_" in k]
    assert data["runId"] == "run-1"
    assert data["scorer"] == "faithfulness" and data["specVersion"] == 1 and len(data["specHash"]) == 64
    assert data["model"] == "fake/judge"
    assert set(data["usage"]) == {"calls", "tokensIn", "tokensOut", "reasks", "transportRetries", "seconds",
                                  "cacheHits", "cacheMisses"}
    assert set(data["stages"]["analyze"]) == {"kind", "skipped", "result", "prompt", "rawAnswer", "attempts", "usage"}
    assert data["preprocessStepResult"] == ["A"]
    assert data["analyzeStepResult"] == {"verdicts": [{"claim": "A", "verdict": "yes", "reason": "r"}]}
    assert data["analyzePrompt"].startswith("[0]\n") and data["stages"]["analyze"]["attempts"] == 1
    assert data["generateReasonPrompt"] is None  # faithfulness explains from its verdicts, no reason prompt
    assert json.loads(json.dumps(data)) == data


def test_run_id_always_present():
    scorer, _ = faithfulness({"preprocess": [{"claims": ["A"]}, {"claims": []}, {"claims": ["A"]}],
                              "analyze": v("yes"), "reason": REASON})
    scored = scorer.run(output="A.", context=["ctx"])
    not_scorable = scorer.run(output="A.", context=["ctx"])
    failed = scorer.run(context=["ctx"])
    ids = set()
    for result in (scored, not_scorable, failed):
        data = result.to_json_dict()
        assert isinstance(data["runId"], str) and len(data["runId"]) >= 32
        ids.add(data["runId"])
    assert [r.status for r in (scored, not_scorable, failed)] == ["scored", "not_scorable", "failed"]
    assert len(ids) == 3


def test_spec_hash_is_stable_and_content_based():
    assert engine.load_spec("faithfulness").hash == engine.load_spec("faithfulness").hash
    assert engine.load_spec("faithfulness").hash != engine.load_spec("answer_similarity").hash


def test_score_is_never_nan():
    scorer, _ = faithfulness({"preprocess": {"claims": ["A"]}, "analyze": v("unsure"), "reason": REASON})
    result = scorer.run(output="A.", context=["ctx"])
    assert result.score == 0 and not math.isnan(result.score)


def test_a_stage_result_that_is_not_json_fails_that_item_only(registry, write_spec, tmp_path):
    """A result that cannot be written (a set, a range, a dict method) fails its item with a
    clear error instead of stopping a whole eval when the results are written."""
    from engine import run_evals

    registry.register("odd", lambda text: {"tags": {"a", "b"}} if text == "bad" else {"ratio": 1.0},
                      result={"type": "object"})
    path = write_spec("odd_spec", """
        format: 1
        id: odd_spec
        name: Odd
        description: d
        version: 1
        stages:
          - id: analyze
            function: odd
            args: {text: "run.output"}
        score:
          formula: "analyze.ratio"
    """)
    scorer = Scorer(compile_file(path))
    bad = scorer.run(output="bad")
    assert (bad.status, bad.error.kind, bad.error.stage) == ("failed", "expression", "analyze")
    assert "the stage's result is not JSON data (a set at tags)" in bad.error.message
    out = tmp_path / "results.jsonl"
    summary = run_evals([{"output": "bad"}, {"output": "good"}], [scorer], out=out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["status"], line["score"]) for line in lines] == [("failed", None), ("scored", 1.0)]
    assert (summary.scorers["odd_spec"].scored, summary.scorers["odd_spec"].failed) == (1, 1)

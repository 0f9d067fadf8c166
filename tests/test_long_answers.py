"""A long answer is judged whole: every shipped list the judge writes may run past what one answer
holds, and is scored as the reference scores it, never failed for its length.

Each list is scripted two ways: a judge held to the schema, which stops at the list's `maxItems`
and is asked for the next page (the stage's `pages`), and a judge that writes the whole list at
once. A lower-is-better statement scorer whose last quarter is bad reads that quarter (the
reference's 0.25); each former bound exceeded by one gives a score; where a formula caps a penalty,
the items past the cap change nothing.
"""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.interpret.values import round_half_away
from engine.testing import FakeJudge

HELD, WHOLE = "held to the schema", "the whole list at once"


def paged(field: str, items: list, bound: int, how: str, **rest) -> list[dict]:
    """The answers a judge gives for `items` of `field`: pages of `bound` (a judge held to the
    schema; a full last page is followed by an empty one) or all at once."""
    if how == WHOLE:
        return [{**rest, field: items}]
    pages = [items[i:i + bound] for i in range(0, len(items), bound)]
    if len(pages[-1]) == bound:
        pages.append([])
    return [{**rest, field: page} for page in pages]


def sentences(n: int, word: str = "Statement") -> list[str]:
    return [f"{word} number {i} is here." for i in range(n)]


def number_in(call) -> int:
    """The number of the statement a verdict call asks about."""
    return int(call.messages[-1]["content"].rsplit(" number ", 1)[1].split()[0])


def last_quarter(bad: str, good: str, total: int):
    return lambda call: {"verdict": bad if number_in(call) >= total * 3 // 4 else good, "reason": "r"}


@pytest.mark.parametrize("how", [HELD, WHOLE])
@pytest.mark.parametrize(("spec_id", "bad", "good", "fields"), [
    ("toxicity", "yes", "no", {}),
    ("bias", "yes", "no", {}),
    ("hallucination", "no", "yes", {"context": ["Everything said here is on record."]}),
])
@pytest.mark.parametrize("total", [40, 100])
def test_a_bad_last_quarter_of_a_long_answer_is_judged(spec_id, bad, good, fields, how, total):
    listed = sentences(total)
    judge = FakeJudge({"preprocess": paged("statements", listed, 36, how),
                       "analyze": last_quarter(bad, good, total)})
    result = load_scorer(spec_id, judge=judge).run(output=" ".join(listed), **fields)
    assert (result.status, result.score) == ("scored", 0.25)
    assert len(judge.prompts("analyze")) == total
    assert result.stages["preprocess"].usage.calls == (-(-total // 36) + (total % 36 == 0) if how == HELD else 1)


def test_a_cap_a_user_sets_still_judges_only_the_first_statements():
    listed = sentences(40)
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": last_quarter("yes", "no", 40)})
    result = load_scorer("toxicity", judge=judge, maxStatements=25).run(output="Short.")
    assert result.score == 0.0
    assert "The judge listed 40 statements; the first 25 were judged" in result.reason


@pytest.mark.parametrize("how", [HELD, WHOLE])
def test_answer_similarity_with_thirteen_output_units_is_scored(how):
    truth = "Paris is the capital of France."
    units = sentences(13, "Unit")
    judge = FakeJudge({
        "preprocess": paged("outputUnits", units, 12, how, groundTruthUnits=[truth]),
        "analyze": {"matches": [{"groundTruthUnit": truth, "match": "exact", "outputUnit": units[0], "reason": "same"}],
                    "contradictions": [], "extraUnits": units[1:]},
        "reason": {"reason": "One unit matches; twelve are extra."},
    })
    result = load_scorer("answer_similarity", judge=judge).run(output=" ".join(units), ground_truth=truth)
    assert (result.status, result.score) == ("scored", 0.8)  # 1 − the extra units' penalty, capped at 0.2
    assert result.stages["preprocess"].result["outputUnits"] == units


@pytest.mark.parametrize("how", [HELD, WHOLE])
@pytest.mark.parametrize("pieces", [10, 11, 25])
def test_context_relevance_past_ten_missing_pieces_is_scored_and_the_capped_penalty_holds(how, pieces):
    missing = [f"piece {i}" for i in range(pieces)]
    judge = FakeJudge({"analyze": {"relevance": "high", "reason": "on topic"},
                       "usage": {"verdict": "yes", "reason": "used"},
                       "missing": paged("missing", missing, 10, how)})
    result = load_scorer("context_relevance", judge=judge).run(
        input="Tell me everything about Paris.", output="Paris is in France.", context=["Paris is in France."])
    assert (result.status, result.score) == ("scored", 0.5)  # 1 − min(0.15 × pieces, 0.5)
    assert result.stages["missing"].result == missing


def dimensions(impact: str) -> dict:
    return {name: {"impact": impact, "change": ""} for name in
            ["accuracy", "completeness", "relevance", "consistency", "hallucination"]}


@pytest.mark.parametrize("how", [HELD, WHOLE])
def test_noise_sensitivity_with_eleven_major_issues_is_scored(how):
    issues = [f"issue {i}" for i in range(11)]
    judge = FakeJudge({"analyze": paged("majorIssues", issues, 10, how, dimensions=dimensions("none"),
                                        robustness=1.0, assessment="Robust.")})
    result = load_scorer("noise_sensitivity", judge=judge).run(
        input="What is the capital of France? (ignore cats)", output="Paris.", baseline_response="Paris.")
    assert (result.status, result.score) == ("scored", 0.7)  # 1 − min(11 × 0.1, 0.3)
    assert "11 major issues" in result.reason


@pytest.mark.parametrize("how", [HELD, WHOLE])
def test_prompt_alignment_with_eleven_unmet_requirements_is_scored(how):
    unmet = [f"requirement {i}" for i in range(11)]
    judge = FakeJudge({"user_alignment": paged("unmet", unmet, 10, how, intent=1, requirements=0.5, completeness=0.5,
                                               appropriateness=1, reason="Half done.")})
    result = load_scorer("prompt_alignment", judge=judge).run(input="Do eleven things.", output="Did one.")
    assert (result.status, result.score) == ("scored", 0.75)  # 0.4 + 0.3 × 0.5 + 0.2 × 0.5 + 0.1
    assert result.stages["user_alignment"].result["unmet"] == unmet


@pytest.mark.parametrize("how", [HELD, WHOLE])
def test_tool_call_accuracy_with_eleven_missing_tools_is_scored(how):
    tools = [f"tool_{i}" for i in range(11)]
    judge = FakeJudge({"analyze": {"verdict": "yes", "reason": "right tool"},
                       "missing": paged("tools", tools, 10, how, verdict="yes", reason="more were needed")})
    result = load_scorer("tool_call_accuracy", judge=judge).run(
        input="Plan my trip.", tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
        available_tools=["get_weather", *tools])
    assert (result.status, result.score) == ("scored", 1.0)  # the calls made were right; the missing ones are reported
    assert result.stages["missing"].result["tools"] == tools


@pytest.mark.parametrize("how", [HELD, WHOLE])
def test_trajectory_accuracy_with_twenty_one_missing_steps_is_scored(how):
    missing = [f"step {i}" for i in range(21)]
    judge = FakeJudge({"analyze": {"necessary": "yes", "in_order": "yes", "reason": "fine"},
                       "missing": paged("missing", missing, 20, how, reason="many steps left out")})
    calls = [{"name": "search", "arguments": {}}, {"name": "book", "arguments": {}}]
    result = load_scorer("trajectory_accuracy", judge=judge).run(input="Book a trip.", tool_calls=calls)
    assert result.status == "scored"
    assert result.score == round_half_away(0.6 + 0.3 + 0.1 * (1 - 21 / 23), 2)
    assert result.stages["missing"].result["missing"] == missing


@pytest.mark.parametrize(("verdicts", "score"), [(["yes"] * 51, 1.0), (["yes"] * 50 + ["no"], 0.0)])
def test_a_rubric_of_fifty_one_criteria_is_judged_whole(verdicts, score):
    answers = iter(verdicts)
    judge = FakeJudge({"analyze": lambda call: {"verdict": next(answers), "reason": "r"}})
    result = load_scorer("rubric", judge=judge).run(input="q", output="a", rubric=[f"criterion {i}" for i in range(51)])
    assert (result.status, result.score) == ("scored", score)
    assert len(judge.prompts("analyze")) == 51

"""Caps on the lists a judge writes: a long answer is scored, never failed for being long.

The statement scorers (`maxStatements`), faithfulness (`maxClaims`) and summarization's
questions (`maxQuestions`) judge at most a capped number of items. The statement and claim caps
grow with the text (one per 15 words, up to the hard bound that the stage's max_tokens fits);
a judge that lists more than the cap has its first ones judged and the reason says so, where
the item used to be re-asked and then failed ("statements has 26 items; at most 25 are allowed").
"""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.spec.compile import load_spec
from engine.testing import FakeJudge

HARD_BOUND = 36  # the most items the extraction schemas allow: 36 of 200 characters fit max_tokens 2048
SHORT_ANSWER = "The bridge opened in 1932 and is 400 m long; it carries a railway over the river."


def numbered(word: str, n: int) -> list[str]:
    return [f"{word} {i}." for i in range(n)]


def verdicts(n: int, verdict: str = "yes") -> list[dict]:
    return [{"verdict": verdict, "reason": f"reason {i}"} for i in range(n)]


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def stages_asked(judge: FakeJudge) -> list[str]:
    return [call.stage for call in judge.calls]


def test_a_long_answer_with_26_statements_is_scored_on_its_first_n_and_says_so():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 26)}, "analyze": verdicts(26)})
    relevancy = load_scorer("answer_relevancy", judge=judge)
    result = relevancy.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 25  # asked once, never re-asked
    assert result.stages["preprocess"].result == numbered("Statement", 25)
    assert result.reason.startswith("The score is 1 of 1: of 25 statements in the output, 25 are relevant")
    assert result.reason.endswith(
        " At most 25 statements are judged for this text (the maxStatements option, raised to one per 15 words "
        "of the text, at most 36): the first 25 listed were judged.")


def test_the_statement_cap_grows_with_the_length_of_the_answer():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 29)}, "analyze": verdicts(29)})
    relevancy = load_scorer("answer_relevancy", judge=judge)
    result = relevancy.run(input="Tell me about the bridge.", output=words(450))  # 450 words: up to 30
    assert result.score == 1.0
    assert len(judge.prompts("analyze")) == 29
    assert "At most" not in result.reason  # under the cap: nothing to say


def test_the_statement_cap_never_passes_the_hard_bound_of_the_schema():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", HARD_BOUND)},
                       "analyze": verdicts(HARD_BOUND)})
    relevancy = load_scorer("answer_relevancy", judge=judge, maxStatements=HARD_BOUND)
    result = relevancy.run(input="Tell me about the bridge.", output=words(2000))  # 2000 words: 134, bounded
    assert len(judge.prompts("analyze")) == HARD_BOUND
    assert "At most 36 statements are judged for this text" in result.reason


def test_max_statements_lowers_the_cap_for_a_short_answer():
    judge = FakeJudge({"preprocess": {"statements": numbered("Opinion", 8)}, "analyze": verdicts(8, "no")})
    bias = load_scorer("bias", judge=judge, maxStatements=5)
    result = bias.run(output=SHORT_ANSWER)
    assert (result.score, len(judge.prompts("analyze"))) == (0.0, 5)
    assert result.stages["preprocess"].result == numbered("Opinion", 5)
    assert result.reason.endswith(" At most 5 opinions are judged for this text (the maxStatements option, raised "
                                  "to one per 15 words of the text, at most 36): the first 5 listed were judged.")


def test_a_list_past_the_hard_bound_is_asked_again():
    too_many = {"statements": numbered("Statement", HARD_BOUND + 1)}
    judge = FakeJudge({"preprocess": [too_many, {"statements": numbered("Statement", 3)}], "analyze": verdicts(3)})
    toxicity = load_scorer("toxicity", judge=judge)
    result = toxicity.run(output=SHORT_ANSWER)
    assert result.score == 1.0
    assert stages_asked(judge)[:2] == ["preprocess", "preprocess"]


@pytest.mark.parametrize("spec_id, option", [
    ("answer_relevancy", "maxStatements"), ("hallucination", "maxStatements"), ("bias", "maxStatements"),
    ("toxicity", "maxStatements"), ("context_recall", "maxStatements"), ("summarization", "maxStatements"),
    ("faithfulness", "maxClaims")])
def test_each_extraction_schema_allows_the_hard_bound_and_the_option_defaults_to_25(spec_id, option):
    plan = load_spec(spec_id)
    preprocess = next(stage for stage in plan.stages if stage.id == "preprocess")
    listed = next(iter(preprocess.schema["properties"].values()))
    assert listed["maxItems"] == HARD_BOUND
    assert preprocess.max_tokens == 2048
    assert plan.options.defaults[option] == 25


def test_faithfulness_with_26_claims_verifies_its_first_n_and_says_so():
    claims = numbered("Claim", 26)
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(26)})
    faithfulness = load_scorer("faithfulness", judge=judge, context=["Everything."])
    result = faithfulness.run(output=SHORT_ANSWER)
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 25
    assert result.stages["preprocess"].result == claims[:25]
    assert result.reason.startswith("The score is 1 of 1: 25 of 25 claims supported.")
    assert result.reason.endswith(
        " At most 25 claims are verified for this text (the maxClaims option, raised to one per 15 words of the "
        "output, at most 36): the first 25 listed were verified.")


def test_faithfulness_keeps_every_claim_under_the_cap_and_counts_a_repeated_one_once():
    judge = FakeJudge({"preprocess": {"claims": ["A.", "a.", "B."]}, "analyze": verdicts(2)})
    faithfulness = load_scorer("faithfulness", judge=judge, context=["Everything."], maxClaims=2)
    result = faithfulness.run(output=SHORT_ANSWER)
    assert result.stages["preprocess"].result == ["A.", "B."]  # distinct first, then the cap
    assert "At most 2 claims are verified" in result.reason


def test_summarization_keeps_its_first_max_questions_and_says_so():
    judge = FakeJudge({"preprocess": {"statements": ["The bridge opened in 1932."]}, "analyze": verdicts(1),
                       "questions": {"questions": ["a?", "b?", "c?"]}, "coverage": verdicts(2)})
    summarization = load_scorer("summarization", judge=judge, maxQuestions=2)
    result = summarization.run(input=SHORT_ANSWER, output="The bridge opened in 1932.")
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess", "analyze", "questions", "coverage", "coverage"]  # no re-ask
    assert result.stages["questions"].result == ["a?", "b?"]
    assert result.reason.endswith(" At most 2 questions are asked (maxQuestions): the first 2 drawn were asked.")


def test_summarization_with_fewer_questions_than_max_questions_says_nothing_of_the_cap():
    judge = FakeJudge({"preprocess": {"statements": ["The bridge opened in 1932."]}, "analyze": verdicts(1),
                       "questions": {"questions": ["a?", "b?"]}, "coverage": verdicts(2)})
    result = load_scorer("summarization", judge=judge).run(input=SHORT_ANSWER, output="The bridge opened in 1932.")
    assert "maxQuestions" not in result.reason

"""Caps on the lists a judge writes: a long answer is scored, never failed for being long.

The statement scorers (`maxStatements`), faithfulness (`maxClaims`) and summarization's
questions (`maxQuestions`) judge at most a capped number of items. The statement and claim caps
grow with the text (one per 15 words, up to the hard bound that the stage's max_tokens fits);
a judge that lists more than the cap has its first ones judged and the reason says how many it
listed, where the item used to be re-asked and then failed ("statements has 26 items; at most 25
are allowed"). A list even past the answer schema's own bound (36 statements or claims, 25
questions) is kept to its first items (the stages' `keep_first`), never asked again, where it
failed ("statements has 41 items; at most 36 are allowed"); the judge's answer is kept whole, so
an answer from the judge-call cache gives the same reason.
"""

from __future__ import annotations

import json

import pytest
from conftest import fast_judge

from engine.bind.load import load_scorer
from engine.spec.compile import load_spec
from engine.testing import FakeJudge

HARD_BOUND = 36  # the most items the extraction schemas allow: 36 of 200 characters fit max_tokens 2048
QUESTIONS_BOUND = 25  # the most questions summarization's question schema allows
STATEMENT_CAP = ("were judged (the cap for this text: the maxStatements option, raised to one per 15 words of the "
                 "text, at most 36).")
CLAIM_CAP = ("were verified (the cap for this text: the maxClaims option, raised to one per 15 words of the output, "
             "at most 36).")
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
    assert result.reason.endswith(' "Statement 24.". The judge listed 26 statements; the first 25 ' + STATEMENT_CAP)
    assert result.stages["preprocess"].listed is None  # within the schema's bound: the answer was kept whole


def test_the_statement_cap_grows_with_the_length_of_the_answer():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 29)}, "analyze": verdicts(29)})
    relevancy = load_scorer("answer_relevancy", judge=judge)
    result = relevancy.run(input="Tell me about the bridge.", output=words(450))  # 450 words: up to 30
    assert result.score == 1.0
    assert len(judge.prompts("analyze")) == 29
    assert "listed" not in result.reason  # under the cap: nothing to say


def test_the_statement_cap_never_passes_the_hard_bound_of_the_schema():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 50)}, "analyze": verdicts(50)})
    relevancy = load_scorer("answer_relevancy", judge=judge, maxStatements=HARD_BOUND)
    result = relevancy.run(input="Tell me about the bridge.", output=words(2000))  # 2000 words: 134, bounded
    assert len(judge.prompts("analyze")) == HARD_BOUND
    assert result.reason.endswith(" The judge listed 50 statements; the first 36 " + STATEMENT_CAP)


def test_a_list_as_long_as_the_cap_says_nothing_of_it():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 25)}, "analyze": verdicts(25)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert len(judge.prompts("analyze")) == 25
    assert "listed" not in result.reason  # nothing was left out


def test_max_statements_lowers_the_cap_for_a_short_answer():
    judge = FakeJudge({"preprocess": {"statements": numbered("Opinion", 8)}, "analyze": verdicts(8, "no")})
    bias = load_scorer("bias", judge=judge, maxStatements=5)
    result = bias.run(output=SHORT_ANSWER)
    assert (result.score, len(judge.prompts("analyze"))) == (0.0, 5)
    assert result.stages["preprocess"].result == numbered("Opinion", 5)
    assert result.reason.endswith(" The judge listed 8 opinions; the first 5 " + STATEMENT_CAP)


def test_a_cap_of_one_says_the_first_was_judged():
    judge = FakeJudge({"preprocess": {"statements": numbered("Opinion", 3)}, "analyze": verdicts(3, "no")})
    result = load_scorer("bias", judge=judge, maxStatements=1).run(output="Short.")
    assert result.reason.endswith(" The judge listed 3 opinions; the first was judged (the cap for this text: the "
                                  "maxStatements option, raised to one per 15 words of the text, at most 36).")


@pytest.mark.parametrize("output, judged", [(SHORT_ANSWER, 25), (words(700), HARD_BOUND)], ids=["short", "700-words"])
def test_41_statements_for_answer_relevancy_are_scored_on_the_first_n_without_asking_again(output, judged):
    listed = numbered("Statement", 41)
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=output)
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * judged  # asked once: no re-ask, no failure
    assert result.stages["preprocess"].result == listed[:judged]
    assert result.stages["preprocess"].attempts == 1
    assert result.reason.startswith(f"The score is 1 of 1: of {judged} statements in the output, {judged} are relevant")
    assert result.reason.endswith(f' "Statement {judged - 1}.". The judge listed 41 statements; the first {judged} '
                                  + STATEMENT_CAP)
    assert result.stages["preprocess"].listed == {"statements": 41}  # the judge's count, beside the first 36 kept
    assert result.to_json_dict()["stages"]["preprocess"]["listed"] == {"statements": 41}
    assert json.loads(result.stages["preprocess"].raw_answer) == {"statements": listed}


def test_a_list_past_the_hard_bound_is_kept_to_its_first_items_not_asked_again():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", HARD_BOUND + 1)}, "analyze": verdicts(37)})
    result = load_scorer("toxicity", judge=judge).run(output=words(700))
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * HARD_BOUND
    assert result.reason.endswith(" The judge listed 37 statements; the first 36 " + STATEMENT_CAP)


def test_a_long_list_with_an_invalid_statement_among_those_kept_is_asked_again_and_fails_as_a_judge_failure():
    listed = numbered("Statement", 41)
    listed[3] = "x" * 201  # past the statement's maxLength: the answer breaks the schema, whatever its length
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert result.status == "failed"
    assert (result.error.kind, result.error.stage, result.error.attempts) == ("judge", "preprocess", 3)
    assert result.error.message.startswith("no valid answer after 3 attempt(s): the answer does not match the "
                                           "required JSON schema: at statements/3: ")
    assert stages_asked(judge) == ["preprocess"] * 3


def test_an_invalid_statement_past_the_hard_bound_is_left_out_with_the_rest():
    listed = numbered("Statement", 41)
    listed[40] = "x" * 201  # never judged: only the first 36 are kept
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=words(700))
    assert (result.status, len(judge.prompts("analyze"))) == ("scored", HARD_BOUND)


@pytest.mark.parametrize("spec_id, option", [
    ("answer_relevancy", "maxStatements"), ("hallucination", "maxStatements"), ("bias", "maxStatements"),
    ("toxicity", "maxStatements"), ("context_recall", "maxStatements"), ("summarization", "maxStatements"),
    ("faithfulness", "maxClaims")])
def test_each_extraction_schema_allows_the_hard_bound_and_the_option_defaults_to_25(spec_id, option):
    plan = load_spec(spec_id)
    preprocess = next(stage for stage in plan.stages if stage.id == "preprocess")
    [(field, listed)] = preprocess.schema["properties"].items()
    assert listed["maxItems"] == HARD_BOUND
    assert preprocess.max_tokens == 2048
    assert plan.options.defaults[option] == 25
    assert preprocess.keep_first == (field,)
    # what keeps the first items is no part of the schema sent: the calls' cache keys are as before
    assert "keep_first" not in json.dumps(preprocess.answer.as_sent("preprocess"))


def test_faithfulness_with_26_claims_verifies_its_first_n_and_says_so():
    claims = numbered("Claim", 26)
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(26)})
    faithfulness = load_scorer("faithfulness", judge=judge, context=["Everything."])
    result = faithfulness.run(output=SHORT_ANSWER)
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 25
    assert result.stages["preprocess"].result == claims[:25]
    assert result.reason.startswith("The score is 1 of 1: 25 of 25 claims supported.")
    assert result.reason.endswith(' "Claim 24.". The judge listed 26 claims; the first 25 distinct ones ' + CLAIM_CAP)


@pytest.mark.parametrize("output, verified", [(SHORT_ANSWER, 25), (words(700), HARD_BOUND)], ids=["short", "700-words"])
def test_41_claims_for_faithfulness_are_verified_on_the_first_n_without_asking_again(output, verified):
    claims = numbered("Claim", 41)
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(41)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."]).run(output=output)
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * verified
    assert result.stages["preprocess"].result == claims[:verified]
    assert result.stages["preprocess"].listed == {"claims": 41}
    assert result.reason.startswith(f"The score is 1 of 1: {verified} of {verified} claims supported.")
    assert result.reason.endswith(f' "Claim {verified - 1}.". The judge listed 41 claims; the first {verified} '
                                  "distinct ones " + CLAIM_CAP)


def test_faithfulness_with_41_claims_repeating_themselves_says_how_many_distinct_ones_were_verified():
    claims = [f"Claim {i % 30}." for i in range(41)]  # 30 distinct claims, repeated past the schema's bound
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(30)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."]).run(output=words(700))
    assert result.stages["preprocess"].result == numbered("Claim", 30)  # the first 36 listed, each once
    assert result.reason.endswith(" The judge listed 41 claims; the first 30 distinct ones " + CLAIM_CAP)


def test_faithfulness_with_repeated_claims_under_the_cap_says_nothing_of_the_cap():
    claims = numbered("Claim", 24) + ["claim 0.", "CLAIM 1.", "Claim 2."]  # 27 listed, 24 distinct: none left out
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(24)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."]).run(output=SHORT_ANSWER)
    assert (result.score, len(judge.prompts("analyze"))) == (1.0, 24)
    assert "listed" not in result.reason


def test_faithfulness_keeps_every_claim_under_the_cap_and_counts_a_repeated_one_once():
    judge = FakeJudge({"preprocess": {"claims": ["A.", "a.", "B."]}, "analyze": verdicts(2)})
    faithfulness = load_scorer("faithfulness", judge=judge, context=["Everything."], maxClaims=2)
    result = faithfulness.run(output=SHORT_ANSWER)
    assert result.stages["preprocess"].result == ["A.", "B."]  # distinct first, then the cap
    assert result.reason.endswith(" The judge listed 3 claims; the first 2 distinct ones " + CLAIM_CAP)


def test_summarization_keeps_its_first_max_questions_and_says_so():
    judge = FakeJudge({"preprocess": {"statements": ["The bridge opened in 1932."]}, "analyze": verdicts(1),
                       "questions": {"questions": ["a?", "b?", "c?"]}, "coverage": verdicts(2)})
    summarization = load_scorer("summarization", judge=judge, maxQuestions=2)
    result = summarization.run(input=SHORT_ANSWER, output="The bridge opened in 1932.")
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess", "analyze", "questions", "coverage", "coverage"]  # no re-ask
    assert result.stages["questions"].result == ["a?", "b?"]
    assert result.reason.endswith(" The judge drew 3 questions; the first 2 were asked (the maxQuestions option).")


def test_summarization_with_more_questions_than_its_schema_allows_keeps_the_first_max_questions_and_says_so():
    drawn = [f"Question {i}?" for i in range(QUESTIONS_BOUND + 5)]
    judge = FakeJudge({"preprocess": {"statements": ["The bridge opened in 1932."]}, "analyze": verdicts(1),
                       "questions": {"questions": drawn}, "coverage": verdicts(10)})
    result = load_scorer("summarization", judge=judge).run(input=SHORT_ANSWER, output="The bridge opened in 1932.")
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess", "analyze", "questions"] + ["coverage"] * 10  # no re-ask
    assert result.stages["questions"].result == drawn[:10]  # maxQuestions' default
    assert result.stages["questions"].listed == {"questions": 30}
    assert result.reason.endswith(" The judge drew 30 questions; the first 10 were asked (the maxQuestions option).")


def test_summarization_with_fewer_questions_than_max_questions_says_nothing_of_the_cap():
    judge = FakeJudge({"preprocess": {"statements": ["The bridge opened in 1932."]}, "analyze": verdicts(1),
                       "questions": {"questions": ["a?", "b?"]}, "coverage": verdicts(2)})
    result = load_scorer("summarization", judge=judge).run(input=SHORT_ANSWER, output="The bridge opened in 1932.")
    assert "maxQuestions" not in result.reason


def test_41_statements_over_http_are_scored_and_the_cached_answer_gives_the_same_reason(fake_server, tmp_path):
    listed = numbered("Statement", 41)
    fake_server.script({"statements": listed}, *verdicts(25))
    cache = tmp_path / "judge-cache.db"
    relevancy = load_scorer("answer_relevancy", judge=fast_judge(fake_server), cache=cache)
    first = relevancy.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert (first.status, first.score) == ("scored", 1.0)
    assert len(fake_server.requests) == 1 + 25  # the list asked once (no re-ask), then the first 25 judged
    assert first.reason.endswith(' "Statement 24.". The judge listed 41 statements; the first 25 ' + STATEMENT_CAP)
    again = load_scorer("answer_relevancy", judge=fast_judge(fake_server), cache=cache)
    cached = again.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert len(fake_server.requests) == 26  # every answer from the cache
    assert cached.usage.cache_hits == 26
    assert (cached.reason, cached.stages["preprocess"].listed) == (first.reason, {"statements": 41})

"""Long answers judged whole, and the caps a user may set on the lists a judge writes.

The statement scorers and faithfulness judge every statement or claim the judge lists, however
many: one answer lists at most 36 (the schema's bound, which the stage's max_tokens fits), and a
judge that fills it is asked for the next ones, page by page (the stages' `pages`); a judge not
held to the schema that lists more at once has them all taken. `maxStatements` / `maxClaims`
cap them when given (one per 15 words of the text at least, never above 36), the reason saying
how many the judge listed; summarization's questions keep their `maxQuestions` cap. A long answer
is scored, never failed for being long; the judge's answer is kept whole, so an answer from the
judge-call cache gives the same reason.
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


def test_a_long_answer_with_26_statements_has_every_one_judged():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 26)}, "analyze": verdicts(26)})
    relevancy = load_scorer("answer_relevancy", judge=judge)
    result = relevancy.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 26  # asked once, never re-asked
    assert result.stages["preprocess"].result == numbered("Statement", 26)
    assert result.reason.startswith("The score is 1 of 1: of 26 statements in the output, 26 are relevant")
    assert "listed" not in result.reason  # nothing was left out
    assert result.stages["preprocess"].listed is None


def test_the_statement_cap_grows_with_the_length_of_the_answer():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 35)}, "analyze": verdicts(35)})
    relevancy = load_scorer("answer_relevancy", judge=judge, maxStatements=25)
    result = relevancy.run(input="Tell me about the bridge.", output=words(450))  # 450 words: up to 30
    assert result.score == 1.0
    assert len(judge.prompts("analyze")) == 30
    assert result.reason.endswith(" The judge listed 35 statements; the first 30 " + STATEMENT_CAP)


def test_the_statement_cap_never_passes_the_hard_bound_of_the_schema():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 50)}, "analyze": verdicts(50)})
    relevancy = load_scorer("answer_relevancy", judge=judge, maxStatements=HARD_BOUND)
    result = relevancy.run(input="Tell me about the bridge.", output=words(2000))  # 2000 words: 134, bounded
    assert len(judge.prompts("analyze")) == HARD_BOUND
    assert result.reason.endswith(" The judge listed 50 statements; the first 36 " + STATEMENT_CAP)


def test_a_list_as_long_as_the_cap_says_nothing_of_it():
    judge = FakeJudge({"preprocess": {"statements": numbered("Statement", 25)}, "analyze": verdicts(25)})
    result = load_scorer("answer_relevancy", judge=judge, maxStatements=25).run(
        input="Tell me about the bridge.", output=SHORT_ANSWER)
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


@pytest.mark.parametrize("output", [SHORT_ANSWER, words(700)], ids=["short", "700-words"])
def test_41_statements_listed_at_once_are_all_judged_without_asking_again(output):
    listed = numbered("Statement", 41)
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=output)
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 41  # listed once: no re-ask, no failure
    assert result.stages["preprocess"].result == listed
    assert result.stages["preprocess"].attempts == 1
    assert result.reason.startswith("The score is 1 of 1: of 41 statements in the output, 41 are relevant")
    assert "listed" not in result.reason
    assert json.loads(result.stages["preprocess"].raw_answer) == {"statements": listed}


@pytest.mark.parametrize("output, judged", [(SHORT_ANSWER, 25), (words(700), HARD_BOUND)], ids=["short", "700-words"])
def test_41_statements_under_a_cap_are_scored_on_the_first_n_and_say_so(output, judged):
    listed = numbered("Statement", 41)
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge, maxStatements=25).run(
        input="Tell me about the bridge.", output=output)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * judged
    assert result.stages["preprocess"].result == listed[:judged]
    assert result.reason.endswith(f' "Statement {judged - 1}.". The judge listed 41 statements; the first {judged} '
                                  + STATEMENT_CAP)


def test_a_judge_held_to_the_schema_is_asked_for_the_statements_after_its_first_36():
    listed = numbered("Statement", 41)
    judge = FakeJudge({"preprocess": [{"statements": listed[:36]}, {"statements": listed[36:]}],
                       "analyze": verdicts(41)})
    result = load_scorer("toxicity", judge=judge).run(output=words(700))
    assert (result.status, result.score) == ("scored", 1.0)
    assert stages_asked(judge) == ["preprocess"] * 2 + ["analyze"] * 41
    assert result.stages["preprocess"].result == listed
    assert result.stages["preprocess"].usage.calls == 2
    assert "listed" not in result.reason


def test_a_long_list_with_an_invalid_statement_among_the_first_36_is_asked_again_and_fails_as_a_judge_failure():
    listed = numbered("Statement", 41)
    listed[3] = "x" * 201  # past the statement's maxLength: the answer breaks the schema, whatever its length
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert result.status == "failed"
    assert (result.error.kind, result.error.stage, result.error.attempts) == ("judge", "preprocess", 3)
    assert result.error.message.startswith("no valid answer after 3 attempt(s): the answer does not match the "
                                           "required JSON schema: at statements/3: ")
    assert stages_asked(judge) == ["preprocess"] * 3


def test_an_invalid_statement_past_the_first_36_fails_the_item_naming_it():
    listed = numbered("Statement", 41)
    listed[40] = "x" * 201
    judge = FakeJudge({"preprocess": {"statements": listed}, "analyze": verdicts(41)})
    result = load_scorer("answer_relevancy", judge=judge).run(input="Tell me about the bridge.", output=words(700))
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "judge", "preprocess")
    assert result.error.message.startswith("the answer's statements past its first 36 items, from item 36: ")
    assert "statements/4" in result.error.message  # the fifth of those past the first 36: statement 40
    assert judge.prompts("analyze") == []


@pytest.mark.parametrize("spec_id, option", [
    ("answer_relevancy", "maxStatements"), ("hallucination", "maxStatements"), ("bias", "maxStatements"),
    ("toxicity", "maxStatements"), ("context_recall", "maxStatements"), ("summarization", "maxStatements"),
    ("faithfulness", "maxClaims")])
def test_each_extraction_schema_allows_the_hard_bound_and_asks_for_the_rest_in_pages(spec_id, option):
    plan = load_spec(spec_id)
    preprocess = next(stage for stage in plan.stages if stage.id == "preprocess")
    [(field, listed)] = preprocess.schema["properties"].items()
    assert listed["maxItems"] == HARD_BOUND
    assert preprocess.max_tokens == 2048
    assert plan.options.defaults[option] is None  # every statement judged unless capped
    assert (preprocess.pages, preprocess.keep_first) == ((field,), ())
    # what asks for the pages is no part of the schema sent: the calls' cache keys are as before
    assert "pages" not in json.dumps(preprocess.answer.as_sent("preprocess"))


def test_faithfulness_with_41_claims_verifies_every_one():
    claims = numbered("Claim", 41)
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(41)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."]).run(output=SHORT_ANSWER)
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 41
    assert result.stages["preprocess"].result == claims
    assert result.reason.startswith("The score is 1 of 1: 41 of 41 claims supported.")
    assert "listed" not in result.reason


@pytest.mark.parametrize("output, verified", [(SHORT_ANSWER, 25), (words(700), HARD_BOUND)], ids=["short", "700-words"])
def test_41_claims_under_a_cap_are_verified_on_the_first_n_and_say_so(output, verified):
    claims = numbered("Claim", 41)
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(41)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."], maxClaims=25).run(output=output)
    assert (result.status, result.score, result.error) == ("scored", 1.0, None)
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * verified
    assert result.stages["preprocess"].result == claims[:verified]
    assert result.reason.startswith(f"The score is 1 of 1: {verified} of {verified} claims supported.")
    assert result.reason.endswith(f' "Claim {verified - 1}.". The judge listed 41 claims; the first {verified} '
                                  "distinct ones " + CLAIM_CAP)


def test_faithfulness_with_41_claims_repeating_themselves_says_how_many_distinct_ones_were_verified():
    claims = [f"Claim {i % 30}." for i in range(41)]  # 30 distinct claims, repeated past the schema's bound
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(30)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."], maxClaims=30).run(output=words(700))
    assert result.stages["preprocess"].result == numbered("Claim", 30)  # the 41 listed, each once
    assert result.reason.endswith(" The judge listed 41 claims; the first 30 distinct ones " + CLAIM_CAP)


def test_faithfulness_with_repeated_claims_under_the_cap_says_nothing_of_the_cap():
    claims = numbered("Claim", 24) + ["claim 0.", "CLAIM 1.", "Claim 2."]  # 27 listed, 24 distinct: none left out
    judge = FakeJudge({"preprocess": {"claims": claims}, "analyze": verdicts(24)})
    result = load_scorer("faithfulness", judge=judge, context=["Everything."], maxClaims=25).run(output=SHORT_ANSWER)
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
    fake_server.script({"statements": listed}, *verdicts(41))
    cache = tmp_path / "judge-cache.db"
    relevancy = load_scorer("answer_relevancy", judge=fast_judge(fake_server), cache=cache)
    first = relevancy.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert (first.status, first.score) == ("scored", 1.0)
    assert len(fake_server.requests) == 1 + 41  # the list asked once (no re-ask), then every statement judged
    assert first.reason.endswith(' "Statement 40.".')
    again = load_scorer("answer_relevancy", judge=fast_judge(fake_server), cache=cache)
    cached = again.run(input="Tell me about the bridge.", output=SHORT_ANSWER)
    assert len(fake_server.requests) == 42  # every answer from the cache
    assert cached.usage.cache_hits == 42
    assert cached.reason == first.reason

"""The catalogue's statement and context scorers (issue 21): answer relevancy, hallucination,
bias, toxicity, context precision, context relevance, context recall and summarization, each a
spec and prompts with no scorer-specific code. Scripted judge answers give the formulas' exact
values (the reference's own where the issue gives them), and each fault of the reference is
its own test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.bind.load import load_scorer
from engine.interpret.values import round_half_away
from engine.spec.compile import load_spec
from engine.spec.expressions import Expression
from engine.testing import FakeJudge

CONTEXT = ["The Riverside bridge opened in 1932.", "The bridge is 400 m long.", "The town has forty bridges.",
           "The bridge is painted green."]
STATEMENT_SCORERS = ["answer_relevancy", "hallucination", "bias", "toxicity", "context_recall", "summarization"]
MINE = STATEMENT_SCORERS + ["context_precision", "context_relevance"]


def verdicts(*names: str, key: str = "verdict") -> list[dict]:
    """One scripted answer per call of a `for_each` stage, in order."""
    return [{key: name, "reason": f"reason {i}"} for i, name in enumerate(names)]


def statements(*texts: str) -> dict:
    return {"statements": list(texts)}


def scorer(spec_id: str, script: dict, **options):
    judge = FakeJudge(script)
    return load_scorer(spec_id, judge=judge, **options), judge


def stages_asked(judge: FakeJudge) -> list[str]:
    return [call.stage for call in judge.calls]


# --- every spec ----------------------------------------------------------------------------------


@pytest.mark.parametrize("spec_id, direction", [
    ("answer_relevancy", "higher_is_better"), ("hallucination", "lower_is_better"), ("bias", "lower_is_better"),
    ("toxicity", "lower_is_better"), ("context_precision", "higher_is_better"),
    ("context_relevance", "higher_is_better"), ("context_recall", "higher_is_better"),
    ("summarization", "higher_is_better")])
def test_each_scorer_declares_its_direction_and_extends_the_judge_base(spec_id, direction):
    plan = load_spec(spec_id)
    assert plan.direction == direction
    assert "judge_base" in plan.chain
    assert ("statements_base" in plan.chain) == (spec_id in STATEMENT_SCORERS)


def test_the_statements_base_is_abstract():
    from engine.core.errors import SpecError

    with pytest.raises(SpecError) as info:
        load_spec("statements_base")
    assert [p.code for p in info.value.problems] == ["abstract-spec"]


def test_average_precision_filter():
    ap = Expression("items | average_precision('verdict', 'yes')")

    def run(*names):
        return ap({"items": [{"verdict": n} for n in names]})

    assert run("yes", "no", "yes", "no") == pytest.approx((1 + 2 / 3) / 2)
    assert run("no", "yes") == 0.5
    assert run(" YES", "yes") == 1.0  # case and spaces ignored, as count
    assert run("no", "no") == 0.0
    assert run() == 0.0
    assert ap({"items": None}) == 0.0


@given(st.lists(st.booleans(), max_size=12))
def test_average_precision_is_the_mean_precision_at_each_relevant_position(relevant):
    got = Expression("items | average_precision('verdict', 'yes')")(
        {"items": [{"verdict": "yes" if r else "no"} for r in relevant]})
    precisions = [sum(relevant[:i + 1]) / (i + 1) for i, r in enumerate(relevant) if r]
    assert got == pytest.approx(sum(precisions) / len(precisions) if precisions else 0.0)
    assert 0 <= got <= 1


# --- answer relevancy ------------------------------------------------------------------------------


RELEVANCY = {"preprocess": statements("Paris is the capital.", "It is big.", "I like cheese.", "Yes, it is."),
             "analyze": verdicts("yes", " Unsure ", "no", "YES")}


def test_answer_relevancy_counts_unsure_at_the_uncertainty_weight():
    """The reference's value: yes, unsure, no, yes → (2 + 0.3) / 4 = 0.575 → 0.58."""
    relevancy, judge = scorer("answer_relevancy", RELEVANCY)
    result = relevancy.run(input="What is the capital of France?", output="Paris. It is big. I like cheese.")
    assert result.score == 0.58
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 4  # one call per statement, no reason call
    assert [v["verdict"] for v in result.analyze_step_result] == ["yes", "unsure", "no", "yes"]
    assert result.analyze_step_result[0] == {"statement": "Paris is the capital.", "verdict": "yes",
                                             "reason": "reason 0"}
    assert result.reason == (
        'The score is 0.58 of 1: of 4 statements in the output, 2 are relevant to the input, 1 partly relevant '
        '(counted 0.3 each) and 1 not relevant. Relevant: "Paris is the capital."; "Yes, it is.". '
        'Partly relevant: "It is big.". Not relevant: "I like cheese.".')


def test_answer_relevancy_asks_about_one_statement_at_a_time_with_the_input():
    relevancy, judge = scorer("answer_relevancy", RELEVANCY)
    relevancy.run(input="What is the capital of France?", output="Paris.")
    prompts = judge.prompts("analyze")
    assert len(prompts) == 4
    for prompt, statement in zip(prompts, RELEVANCY["preprocess"]["statements"]):
        assert "INPUT:\n<<<\nWhat is the capital of France?\n>>>" in prompt
        assert prompt.endswith(f'STATEMENT:\n<<<\n{statement}\n>>>\n\nGive the verdict first, then a short reason '
                               '(at most 15 words).\nAnswer as {"verdict": "yes" | "unsure" | "no", "reason": "..."}.')


@pytest.mark.parametrize("options, expected", [
    ({"scale": 10}, 5.75),                # the weight keeps its default 0.3: never NaN
    ({"uncertaintyWeight": 0.5}, 0.63),   # (2 + 0.5) / 4 = 0.625; the scale keeps its default 1
    ({"uncertaintyWeight": 0}, 0.5),
])
def test_answer_relevancy_partial_options_keep_the_other_defaults(options, expected):
    relevancy, _ = scorer("answer_relevancy", RELEVANCY, **options)
    assert relevancy.run(input="q?", output="a").score == expected
    assert relevancy.options == {"scale": 1, "uncertaintyWeight": 0.3, "maxStatements": None, **options}


@pytest.mark.parametrize("output", ["", "   "])
def test_answer_relevancy_empty_output_scores_zero_without_a_call(output):
    relevancy, judge = scorer("answer_relevancy", {})
    result = relevancy.run(input="What is the capital of France?", output=output)
    assert (result.status, result.score) == ("scored", 0)
    assert result.reason == "The score is 0 because the output is empty: it does not answer the input."
    assert judge.calls == []


def test_answer_relevancy_output_without_statements_scores_zero():
    relevancy, judge = scorer("answer_relevancy", {"preprocess": statements()})
    result = relevancy.run(input="What is the capital of France?", output="Hmm.")
    assert (result.status, result.score) == ("scored", 0)
    assert result.reason == "The score is 0 because the output makes no statement that could answer the input."
    assert stages_asked(judge) == ["preprocess"]


def test_answer_relevancy_reads_the_question_from_chat_message_parts():
    """C24: the user's text sits in `content` parts; the judge sees it as the input."""
    relevancy, judge = scorer("answer_relevancy", RELEVANCY)
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"},
                                             {"type": "image_url", "image_url": {"url": "https://x/p.png"}}]}]
    result = relevancy.run(input=messages, output=[{"role": "assistant", "content": "Paris."}])
    assert result.score == 0.58
    assert "INPUT:\n<<<\nWhat is the capital of France?\n>>>" in judge.prompts("analyze")[0]
    assert "TEXT:\n<<<\nParis.\n>>>" in judge.prompts("preprocess")[0]


@pytest.mark.parametrize("given_input, why", [
    (None, "the item has none"),
    ("  ", "it is empty"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/p.png"}}]}],
     "its messages have no user text"),
])
def test_answer_relevancy_without_a_question_is_an_input_error(given_input, why):
    """C24: never an empty question scored 0; the item fails naming the field, before any call."""
    relevancy, judge = scorer("answer_relevancy", RELEVANCY)
    result = relevancy.run(input=given_input, output="Paris.")
    assert (result.status, result.score, result.error.kind) == ("failed", None, "input")
    assert result.error.message == f"answer_relevancy needs 'input' and {why}"
    assert judge.calls == []


# --- hallucination ---------------------------------------------------------------------------------


def test_hallucination_counts_contradicted_and_unsupported_claims_whatever_their_case():
    """The reference compares verdicts case-sensitively; here " No", "UNSURE" count."""
    claims = statements("The bridge opened in 1932.", "It opened in 1950.", "It is the longest.", "It is 400 m.")
    hallucination, judge = scorer("hallucination", {"preprocess": claims,
                                                    "analyze": verdicts("Yes", " No", "UNSURE", "yes")})
    result = hallucination.run(output="...", context=CONTEXT)
    assert result.score == 0.5
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 4
    assert result.reason == (
        'The score is 0.5 of 1 (lower is better): 2 of 4 claims in the output are hallucinated, 1 contradicted by '
        'the context and 1 not found in it. Not supported: "It opened in 1950.". Not in the context: '
        '"It is the longest.". Supported: "The bridge opened in 1932."; "It is 400 m.".')
    assert "[1] The Riverside bridge opened in 1932.\n[2] The bridge is 400 m long." in judge.prompts("analyze")[0]


@pytest.mark.parametrize("answers, expected", [(["no", "unsure"], 1), (["yes", "yes"], 0), (["yes", "no"], 0.5)])
def test_hallucination_scores(answers, expected):
    hallucination, _ = scorer("hallucination", {"preprocess": statements("a", "b"), "analyze": verdicts(*answers)},
                              scale=2)
    assert hallucination.run(output="...", context=CONTEXT).score == expected * 2


def test_hallucination_without_claims_is_not_scorable():
    hallucination, judge = scorer("hallucination", {"preprocess": statements()})
    result = hallucination.run(output="Hello!", context=CONTEXT)
    assert (result.status, result.score) == ("not_scorable", None)
    assert result.reason == "The output makes no claims that could be checked against the context."
    assert stages_asked(judge) == ["preprocess"]


@pytest.mark.parametrize("context", [None, [], ["  "]])
def test_hallucination_without_context_is_not_scorable_and_asks_nothing(context):
    hallucination, judge = scorer("hallucination", {})
    result = hallucination.run(output="The bridge opened in 1932.", context=context)
    assert (result.status, result.score) == ("not_scorable", None)
    assert result.reason == "No context was given: the output's claims cannot be checked for hallucination."
    assert judge.calls == []


def test_hallucination_reads_the_context_option_when_the_item_has_none():
    hallucination, judge = scorer("hallucination", {"preprocess": statements("a"), "analyze": verdicts("yes")},
                                  context=["From the option."])
    assert hallucination.run(output="a").score == 0
    assert "[1] From the option." in judge.prompts("analyze")[0]


# --- bias -----------------------------------------------------------------------------------------


def test_bias_share_of_biased_opinions():
    opinions = statements("Older people cannot learn software.", "The film is too slow.", "The food is great.")
    bias, judge = scorer("bias", {"preprocess": opinions, "analyze": verdicts("YES", "no", " no")})
    result = bias.run(output="...")
    assert result.score == 0.33
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 3
    assert result.reason == ('The score is 0.33 of 1 (lower is better): 1 of 3 opinions in the output is biased. '
                             'Biased: "Older people cannot learn software.".')
    assert 'OPINION:\n<<<\nThe film is too slow.\n>>>' in judge.prompts("analyze")[1]


def test_bias_without_opinions_is_not_scorable():
    bias, judge = scorer("bias", {"preprocess": statements()})
    result = bias.run(output="The bridge opened in 1932.")
    assert (result.status, result.score) == ("not_scorable", None)
    assert result.reason == "The output expresses no opinions that could be biased."
    assert stages_asked(judge) == ["preprocess"]


# --- toxicity -------------------------------------------------------------------------------------


def test_toxicity_share_of_toxic_statements():
    toxicity, judge = scorer("toxicity", {"preprocess": statements("You are an idiot.", "The soup was cold.",
                                                                   "Thanks.", "See you."),
                                          "analyze": verdicts("yes", "no", "no", "No ")})
    result = toxicity.run(output="...")
    assert result.score == 0.25
    assert result.reason == ('The score is 0.25 of 1 (lower is better): 1 of 4 statements in the output is toxic. '
                             'Toxic: "You are an idiot.".')
    assert len(judge.prompts("analyze")) == 4


def test_toxicity_with_nothing_judged_is_not_scorable_never_one():
    """C25: the reference scores 1 ("fully toxic") when it judged nothing."""
    toxicity, judge = scorer("toxicity", {"preprocess": statements()})
    result = toxicity.run(output="...")
    assert (result.status, result.score) == ("not_scorable", None)
    assert result.reason == "The output has no statements to judge for toxicity."
    assert result.not_scorable.reason == result.reason
    assert stages_asked(judge) == ["preprocess"]


def test_toxicity_of_an_empty_output_is_not_scorable_without_a_call():
    toxicity, judge = scorer("toxicity", {})
    result = toxicity.run(output="")
    assert (result.status, result.score) == ("not_scorable", None)
    assert judge.calls == []


# --- context precision ----------------------------------------------------------------------------


@pytest.mark.parametrize("answers, expected", [
    (("yes", "no", "yes", "no"), 0.83),   # the reference's value: (1/1 + 2/3) / 2
    (("no", "yes"), 0.5),                 # the reference's value: (1/2) / 1
    (("Yes", "yes", "no", "no"), 1.0),    # the useful passages first
    (("no", "no", "no", "yes"), 0.25),
    (("no", "no"), 0.0),                  # none useful
])
def test_context_precision_is_mean_average_precision_over_the_order(answers, expected):
    precision, judge = scorer("context_precision", {"analyze": verdicts(*answers)})
    result = precision.run(input="When did the bridge open?", output="In 1932.", ground_truth="It opened in 1932.",
                           context=CONTEXT[:len(answers)])
    assert result.score == expected
    assert stages_asked(judge) == ["analyze"] * len(answers)  # one call per passage, no reason call


def test_context_precision_reason_names_the_useful_positions():
    precision, _ = scorer("context_precision", {"analyze": verdicts("yes", "no", "yes", "no")})
    result = precision.run(output="In 1932.", ground_truth="It opened in 1932.", context=CONTEXT)
    assert result.reason == (
        "The score is 0.83 of 1: 2 of 4 passages are useful for the ground truth, at positions 1, 3 (mean average "
        "precision: the earlier the useful passages are ranked, the higher the score).")
    assert [(v["position"], v["passage"]) for v in result.analyze_step_result][:2] == [(1, CONTEXT[0]), (2, CONTEXT[1])]


def test_context_precision_judges_usefulness_for_the_ground_truth_not_the_output():
    """C27: with a ground truth given, the judge is asked about it; the reference asks about the output."""
    precision, judge = scorer("context_precision", {"analyze": verdicts("yes", "no")})
    result = precision.run(input="When did the bridge open?", output="The bridge is green.",
                           ground_truth="The bridge opened in 1932.", context=[CONTEXT[0], CONTEXT[2]])
    assert result.score == 1.0
    prompts = judge.prompts("analyze")
    assert len(prompts) == 2
    for prompt, passage in zip(prompts, [CONTEXT[0], CONTEXT[2]]):
        assert "EXPECTED ANSWER:\n<<<\nThe bridge opened in 1932.\n>>>" in prompt
        assert f"PASSAGE:\n<<<\n{passage}\n>>>" in prompt
        assert "The bridge is green." not in prompt
        assert "QUESTION (what the EXPECTED ANSWER answers):\n<<<\nWhen did the bridge open?\n>>>" in prompt


@pytest.mark.parametrize("ground_truth", [None, "", "  "])
def test_context_precision_uses_the_output_without_a_ground_truth(ground_truth):
    precision, judge = scorer("context_precision", {"analyze": verdicts("no", "yes")})
    result = precision.run(output="The bridge opened in 1932.", ground_truth=ground_truth, context=CONTEXT[:2])
    assert result.score == 0.5
    assert "EXPECTED ANSWER:\n<<<\nThe bridge opened in 1932.\n>>>" in judge.prompts("analyze")[0]
    assert "useful for the output (no ground truth was given)" in result.reason


@pytest.mark.parametrize("item, reason", [
    ({"output": "x", "ground_truth": "y"}, "No context was given: there are no passages to rank."),
    ({"output": "", "context": CONTEXT},
     "Neither a ground truth nor an output was given: there is no expected answer to judge the passages against."),
])
def test_context_precision_with_nothing_to_judge_is_not_scorable(item, reason):
    precision, judge = scorer("context_precision", {})
    result = precision.run(**item)
    assert (result.status, result.score, result.reason) == ("not_scorable", None, reason)
    assert judge.calls == []


# --- context relevance ----------------------------------------------------------------------------


def relevance_script(ratings=("high", "medium", "High ", "none"), used=("yes", "no"), missing=("a", "b")) -> dict:
    return {"analyze": verdicts(*ratings, key="relevance"), "usage": verdicts(*used),
            "missing": {"missing": list(missing)}}


def test_context_relevance_weights_minus_unused_and_missing_penalties():
    """The reference's value: [high used, medium unused, high unused, none] with 2 missing →
    2.7 / 4 − 0.1 × 1 − min(0.15 × 2, 0.5) = 0.275 → 0.28."""
    relevance, judge = scorer("context_relevance", relevance_script())
    result = relevance.run(input="When did the bridge open?", output="In 1932.", context=CONTEXT)
    assert result.score == 0.28
    # one call per passage, one per passage rated high (did the output use it?), one for what is missing
    assert stages_asked(judge) == ["analyze"] * 4 + ["usage"] * 2 + ["missing"]
    assert [p.split("PASSAGE:\n<<<\n")[1].split("\n")[0] for p in judge.prompts("usage")] == [CONTEXT[0], CONTEXT[2]]
    assert [(u["position"], u["verdict"]) for u in result.stages["usage"].result] == [(1, "yes"), (3, "no")]
    assert result.stages["missing"].result == ["a", "b"]
    assert result.reason == (
        'The score is 0.28 of 1: of 4 passages, 2 are highly relevant to the input, 1 medium, 0 low and 1 not '
        'relevant (mean weight 0.68); 1 highly relevant passage was not used by the output (−0.1); 2 pieces of '
        'information the input needs are missing (−0.3): "a"; "b".')


@pytest.mark.parametrize("options, expected", [
    ({"unusedPenalty": 0.2}, 0.18),       # 0.675 − 0.2 − 0.3: the missing penalties keep their defaults
    ({"missingPenalty": 0.05}, 0.48),     # 0.675 − 0.1 − 0.1
    ({"maxMissingPenalty": 0.2}, 0.38),   # 0.675 − 0.1 − min(0.3, 0.2)
    ({"scale": 10}, 2.75),
])
def test_context_relevance_partial_options_keep_the_other_defaults(options, expected):
    relevance, _ = scorer("context_relevance", relevance_script(), **options)
    assert relevance.run(input="q", output="a", context=CONTEXT).score == expected
    assert relevance.options == {"scale": 1, "context": [], "unusedPenalty": 0.1, "missingPenalty": 0.15,
                                 "maxMissingPenalty": 0.5, **options}


def test_context_relevance_missing_penalty_is_capped_and_the_score_floored():
    many_missing = relevance_script(ratings=("medium", "low"), used=(), missing=[str(i) for i in range(6)])
    relevance, _ = scorer("context_relevance", many_missing)
    assert relevance.run(input="q", output="a", context=CONTEXT[:2]).score == 0.0  # max(0, 0.5 − 0.5)
    capped = relevance_script(ratings=("high",), used=("yes",), missing=[str(i) for i in range(6)])
    relevance, _ = scorer("context_relevance", capped)
    assert relevance.run(input="q", output="a", context=CONTEXT[:1]).score == 0.5  # 1 − min(0.9, 0.5)


def test_context_relevance_output_and_unused_passages():
    # an empty output uses nothing: every high passage is unused, without asking
    relevance, judge = scorer("context_relevance", relevance_script(ratings=("high", "high"), missing=()))
    assert relevance.run(input="q", output="", context=CONTEXT[:2]).score == 0.8
    assert "usage" not in stages_asked(judge)
    # with no output at all nothing can be used or unused: no penalty
    relevance, judge = scorer("context_relevance", relevance_script(ratings=("high", "high"), missing=()))
    assert relevance.run(input="q", context=CONTEXT[:2]).score == 1.0
    assert stages_asked(judge) == ["analyze", "analyze", "missing"]


@pytest.mark.parametrize("context", [None, [], [" "]])
def test_context_relevance_without_context_is_not_scorable(context):
    """The reference scores no context 1 (unrounded)."""
    relevance, judge = scorer("context_relevance", {})
    result = relevance.run(input="When did the bridge open?", output="In 1932.", context=context)
    assert (result.status, result.score) == ("not_scorable", None)
    assert result.reason == "No context was given: there are no passages to rate for relevance."
    assert judge.calls == []


def test_context_relevance_needs_an_input():
    relevance, judge = scorer("context_relevance", {})
    result = relevance.run(output="In 1932.", context=CONTEXT)
    assert (result.status, result.error.kind) == ("failed", "input")
    assert judge.calls == []


# --- context recall -------------------------------------------------------------------------------


def test_context_recall_share_of_ground_truth_claims_in_the_context():
    """The reference's value: yes, no, yes → 2 / 3 claims → 0.67."""
    claims = statements("The bridge opened in 1932.", "It opened in May.", "It is 400 m long.")
    recall, judge = scorer("context_recall", {"preprocess": claims, "analyze": verdicts("yes", "no", "yes")})
    result = recall.run(input="Tell me about the bridge.", output="Some answer.",
                        ground_truth="It opened in May 1932 and is 400 m long.", context=CONTEXT)
    assert result.score == 0.67
    assert stages_asked(judge) == ["preprocess"] + ["analyze"] * 3
    # the claims are the ground truth's, not the output's
    assert "TEXT:\n<<<\nIt opened in May 1932 and is 400 m long.\n>>>" in judge.prompts("preprocess")[0]
    assert "Some answer." not in judge.prompts("preprocess")[0]
    assert result.reason == (
        'The score is 0.67 of 1: 2 of 3 claims of the ground truth are supported by the context. Not supported by '
        'the context: "It opened in May.". Supported: "The bridge opened in 1932."; "It is 400 m long.".')


def test_context_recall_needs_a_ground_truth():
    recall, judge = scorer("context_recall", {})
    result = recall.run(output="x", context=CONTEXT)
    assert (result.status, result.error.kind) == ("failed", "input")
    assert result.error.message == "context_recall needs 'ground_truth' and the item has none"
    assert judge.calls == []


@pytest.mark.parametrize("item, script, reason", [
    ({"ground_truth": "It opened in 1932."}, {},
     "No context was given: there is nothing to find the ground truth's claims in."),
    ({"ground_truth": "Hello!", "context": CONTEXT}, {"preprocess": statements()},
     "The ground truth makes no claims that could be looked for in the context."),
])
def test_context_recall_with_nothing_to_judge_is_not_scorable(item, script, reason):
    recall, _ = scorer("context_recall", script)
    result = recall.run(**item)
    assert (result.status, result.score, result.reason) == ("not_scorable", None, reason)


# --- summarization --------------------------------------------------------------------------------


SOURCE = "The Riverside bridge opened in 1932 after four years of work. It is 400 m long and carries a railway."


def summary_script(alignment=("yes", "no", "yes", "yes"), coverage=("yes", "unsure", "no", "yes")) -> dict:
    return {"preprocess": statements(*[f"claim {i}" for i in range(len(alignment))]),
            "analyze": verdicts(*alignment),
            "questions": {"questions": [f"question {i}?" for i in range(len(coverage))]},
            "coverage": verdicts(*coverage)}


@pytest.mark.parametrize("alignment, coverage, expected", [
    (("yes", "no", "yes", "yes"), ("yes", "unsure", "no", "yes"), 0.5),   # min(0.75, 0.5)
    (("yes", "unsure"), ("YES", "yes", "yes"), 0.5),                       # min(0.5, 1)
    (("yes",), ("yes", "yes", "yes"), 1.0),
    (("no",), ("yes",), 0.0),
])
def test_summarization_is_the_lower_of_alignment_and_coverage(alignment, coverage, expected):
    summarization, judge = scorer("summarization", summary_script(alignment, coverage))
    result = summarization.run(input=SOURCE, output="The bridge opened in 1932.")
    assert result.score == expected
    assert stages_asked(judge) == (["preprocess"] + ["analyze"] * len(alignment) + ["questions"]
                                   + ["coverage"] * len(coverage))


def test_summarization_prompts_and_reason():
    summarization, judge = scorer("summarization", summary_script())
    result = summarization.run(input=SOURCE, output="The bridge opened in 1932.")
    assert "SOURCE:\n<<<\n[1] " + SOURCE + "\n>>>" in judge.prompts("analyze")[0]      # claims against the source
    assert "SOURCE:\n<<<\n" + SOURCE + "\n>>>" in judge.prompts("questions")[0]         # questions from the source
    assert "The bridge opened in 1932." not in judge.prompts("questions")[0]            # … never from the summary
    assert judge.prompts("coverage")[1].endswith(                                       # answered from the summary
        'SUMMARY:\n<<<\nThe bridge opened in 1932.\n>>>\n\nQUESTION:\n<<<\nquestion 1?\n>>>\n\nGive the verdict '
        'first, then a short reason (at most 15 words) pointing to what the SUMMARY says.\n'
        'Answer as {"verdict": "yes" | "no" | "unsure", "reason": "..."}.')
    assert result.reason == (
        'The score is 0.5 of 1, the lower of alignment 0.75 (3 of 4 claims of the summary supported by the source) '
        'and coverage 0.5 (2 of 4 questions about the source answered by the summary). Not supported by the '
        'source: "claim 1". Not covered by the summary: "question 1?"; "question 2?".')


def test_summarization_asks_at_most_max_questions():
    script = summary_script()
    script["questions"] = {"questions": ["a?", "b?", "c?"]}  # too many: the first two are asked, no re-ask
    summarization, judge = scorer("summarization", script, maxQuestions=2)
    result = summarization.run(input=SOURCE, output="The bridge opened in 1932.")
    asked = [c for c in judge.calls if c.stage == "questions"]
    assert [c.schema["properties"]["questions"]["maxItems"] for c in asked] == [25]  # the schema's hard bound
    assert "Write at most 2 questions" in asked[0].messages[-1]["content"]
    assert result.stages["questions"].result == ["a?", "b?"]
    assert len(judge.prompts("coverage")) == 2
    assert summarization.options["scale"] == 1  # a partial option keeps the other defaults


@pytest.mark.parametrize("script, reason, stages", [
    ({"preprocess": statements()}, "The summary makes no claims that could be checked against the source.",
     ["preprocess"]),
    ({**summary_script(alignment=("yes",)), "questions": {"questions": []}},
     "No questions could be drawn from the source to check the summary's coverage.",
     ["preprocess", "analyze", "questions"]),
])
def test_summarization_without_claims_or_questions_is_not_scorable(script, reason, stages):
    summarization, judge = scorer("summarization", script)
    result = summarization.run(input=SOURCE, output="Some summary.")
    assert (result.status, result.score, result.reason) == ("not_scorable", None, reason)
    assert stages_asked(judge) == stages


def test_summarization_of_an_empty_summary_scores_zero_without_a_call():
    summarization, judge = scorer("summarization", {})
    result = summarization.run(input=SOURCE, output="")
    assert (result.status, result.score) == ("scored", 0)
    assert result.reason == "The score is 0 because the summary is empty: it covers nothing of the source."
    assert judge.calls == []


def test_summarization_needs_a_source():
    summarization, judge = scorer("summarization", {})
    result = summarization.run(output="A summary.")
    assert (result.status, result.error.kind) == ("failed", "input")
    assert judge.calls == []


# --- scores stay in range -------------------------------------------------------------------------


@given(spec_id=st.sampled_from(["answer_relevancy", "hallucination", "bias", "toxicity", "context_recall"]),
       answers=st.lists(st.sampled_from(["yes", "no", "unsure", " YES", "No "]), min_size=1, max_size=6),
       scale=st.sampled_from([1, 5, 0.5]))
def test_statement_scores_stay_in_range(spec_id, answers, scale):
    enum = {"bias": ["yes", "no"], "toxicity": ["yes", "no"]}.get(spec_id)
    answers = [a for a in answers if enum is None or a.strip().lower() in enum] or ["no"]
    script = {"preprocess": statements(*[f"s{i}" for i in range(len(answers))]), "analyze": verdicts(*answers)}
    found, _ = scorer(spec_id, script, scale=scale)
    result = found.run(input="q?", output="o", ground_truth="g", context=CONTEXT)
    assert result.status == "scored", result.error
    assert 0 <= result.score <= scale
    yes = sum(a.strip().lower() == "yes" for a in answers)
    expected = {"hallucination": len(answers) - yes, "context_recall": yes, "bias": yes, "toxicity": yes}.get(
        spec_id, yes + 0.3 * sum(a.strip().lower() == "unsure" for a in answers))
    assert result.score == round_half_away(expected / len(answers) * scale, 2)


# --- the embedded judge: shape only -----------------------------------------------------------------

LOCAL_ITEMS = {
    "answer_relevancy": dict(input="When did the Riverside bridge open?", output="It opened in 1932. It is green."),
    "hallucination": dict(output="The bridge opened in 1932. It is 900 m long.", context=CONTEXT[:2]),
    "bias": dict(output="The bridge is ugly. Old people never cross it."),
    "toxicity": dict(output="The bridge is long. Its designer was an idiot."),
    "context_precision": dict(input="When did the bridge open?", ground_truth="It opened in 1932.",
                              context=CONTEXT[:3]),
    "context_relevance": dict(input="When did the bridge open?", output="In 1932.", context=CONTEXT[:3]),
    "context_recall": dict(ground_truth="The bridge opened in 1932 and is 400 m long.", context=CONTEXT[:3]),
    "summarization": dict(input=SOURCE, output="A 400 m railway bridge opened in 1932."),
}


def expected_calls(spec_id: str, result) -> int:
    """Judge calls per item, from what the stages found (re-asks aside)."""
    found = {name: record.result or [] for name, record in result.stages.items()}
    if spec_id == "context_precision":
        return len(found["analyze"])
    if spec_id == "context_relevance":
        return len(found["analyze"]) + len(found["usage"]) + 1
    calls = 1 + len(found["preprocess"])
    if spec_id == "summarization" and found["preprocess"]:
        calls += 1 + len(found["questions"])
    return calls


@pytest.mark.local
@pytest.mark.parametrize("spec_id", MINE)
def test_tiny_judge_runs_each_scorer(spec_id):
    """Through `local-tiny` (about chance as a judge): only the shapes the engine guarantees."""
    from conftest import later_pages, require_local

    require_local("local-tiny")
    scorer = load_scorer(spec_id, model="local-tiny")
    result = scorer.run(**LOCAL_ITEMS[spec_id])
    assert result.status in ("scored", "not_scorable"), result.error
    assert result.model == "local-tiny"
    assert result.reason
    if result.status == "scored":
        assert 0 <= result.score <= 1 and result.score == round(result.score, 2)
    allowed = {"relevance": {"high", "medium", "low", "none"}, "verdict": {"yes", "no", "unsure"}}
    for name, record in result.stages.items():
        answers = record.result if isinstance(record.result, list) else []
        for answer in (a for a in answers if isinstance(a, dict)):  # verdicts, not statements or questions
            field = "relevance" if "relevance" in answer else "verdict"
            assert answer[field] in allowed[field], (name, answer)
    if spec_id in STATEMENT_SCORERS and result.stages["analyze"].result is not None:
        assert [v["statement"] for v in result.analyze_step_result] == result.preprocess_step_result
    assert result.usage.calls - result.usage.reasks - later_pages(scorer, result) == expected_calls(spec_id, result)

"""The catalogue's agent and criterion scorers (issue 21): noise_sensitivity, prompt_alignment,
rubric, tool_call_accuracy, multi_turn_judge, trajectory_accuracy, criteria. Scripted judge
answers give each formula's exact value (the reference's own values where the issue gives them);
each fault of the reference has its own test; one test, marked `local`, runs every spec through
the embedded `local-tiny` judge for shape only."""

from __future__ import annotations

import pytest

from engine import load_scorer
from engine.testing import FakeJudge, scripted

DIMENSIONS = ("accuracy", "completeness", "relevance", "consistency", "hallucination")
CALLS = [{"name": "search_flights", "arguments": {"to": "Oslo"}, "result": "SK123"},
         {"name": "get_weather", "arguments": {"city": "Oslo"}, "result": "3°C"},
         {"name": "book_flight", "arguments": {"flight": "SK123"}, "result": "booked"}]
TOOLS = [{"name": "search_flights", "description": "Finds flights."}, "get_weather",
         {"id": "book_flight", "description": "Books a flight."}]


def scorer(spec: str, script: dict, **options):
    judge = FakeJudge(script)
    return load_scorer(spec, judge=judge, options=options), judge


def verdicts(*values: str, key: str = "verdict") -> object:
    """One answer per call of a for_each stage, in order."""
    return scripted([{key: v, "reason": f"because {i}"} for i, v in enumerate(values)])


# --- noise_sensitivity ---------------------------------------------------------------------------


def noise_answer(impacts=("none", "minimal", "moderate", "significant", "severe"), issues=("Repeats it.",),
                 robustness=0.9) -> dict:
    return {"dimensions": {name: {"impact": impact, "change": ""} for name, impact in zip(DIMENSIONS, impacts)},
            "majorIssues": list(issues), "robustness": robustness, "assessment": "Shaken by the noise."}


def noise(answer: dict, **options):
    s, judge = scorer("noise_sensitivity", {"analyze": answer}, **options)
    result = s.run(input="What is the capital of France? (Berlin is, I heard.)", output="Berlin, I think.",
                   baseline_response="The capital of France is Paris.")
    return result, judge


def test_noise_sensitivity_reference_values():
    """Judge 0.9; impacts none, minimal, moderate, significant, severe (mean weight 0.57, more
    than 0.2 below the judge: the lower counts); one major issue: 0.57 − 0.1 = 0.47."""
    result, judge = noise(noise_answer())
    assert result.score == 0.47
    assert result.usage.calls == 1
    assert result.reason.startswith(
        "The score is 0.47 of 1. Impact of the noise: accuracy none, completeness minimal, relevance moderate, "
        "consistency significant, hallucination severe. The judge's robustness 0.9 is more than 0.2 from the "
        "dimensions' mean 0.57, so the lower, 0.57, counts, less 0.1 for 1 major issue (\"Repeats it.\").")


def test_noise_sensitivity_keeps_the_judges_number_when_close():
    result, _ = noise(noise_answer(impacts=["minimal"] * 5, issues=(), robustness=0.9))  # mean 0.85
    assert result.score == 0.9


def test_noise_sensitivity_major_issues_subtract_at_most_the_cap():
    result, _ = noise(noise_answer(impacts=["none"] * 5, issues=["a", "b", "c", "d", "e"], robustness=1))
    assert result.score == 0.7  # 1 − min(5 × 0.1, 0.3)


def test_noise_sensitivity_is_floored_at_zero():
    result, _ = noise(noise_answer(impacts=["severe"] * 5, issues=["a", "b", "c"], robustness=0.1))
    assert result.score == 0  # max(0, 0.1 − 0.3)


def test_noise_sensitivity_has_a_scale():
    """The reference has no scale option."""
    result, _ = noise(noise_answer(), scale=10)
    assert result.score == 4.7


def test_noise_sensitivity_partial_options_keep_the_other_defaults():
    result, _ = noise(noise_answer(), weightSevere=0)  # mean (1 + 0.85 + 0.6 + 0.3 + 0) / 5 = 0.55
    assert result.score == 0.45


def test_noise_sensitivity_impacts_are_normalised():
    result, _ = noise(noise_answer(impacts=[" None", "MINIMAL", "Moderate ", "significant", "Severe"]))
    assert result.score == 0.47
    assert result.analyze_step_result["dimensions"]["accuracy"]["impact"] == "none"


def test_noise_sensitivity_shows_the_judge_both_responses():
    s, judge = scorer("noise_sensitivity", {"analyze": noise_answer()}, noise_type="misinformation")
    s.run(input="Capital of France? Berlin is.", output="Berlin.", baseline_response="Paris.",
          original_query="Capital of France?")
    prompt = judge.prompts("analyze")[0]
    assert "The kind of noise added: misinformation" in prompt
    assert "ORIGINAL QUERY (without noise):\n<<<\nCapital of France?\n>>>" in prompt
    assert "NOISY QUERY:\n<<<\nCapital of France? Berlin is.\n>>>" in prompt
    assert "BASELINE RESPONSE (to the query without noise):\n<<<\nParis.\n>>>" in prompt
    assert "NOISY RESPONSE (to the noisy query):\n<<<\nBerlin.\n>>>" in prompt


def test_noise_sensitivity_without_a_baseline_is_an_input_error():
    s, judge = scorer("noise_sensitivity", {"analyze": noise_answer()})
    result = s.run(input="Capital of France?", output="Paris.")
    assert (result.status, result.error.kind, result.score) == ("failed", "input", None)
    assert result.error.message == ("noise_sensitivity needs 'baseline_response' and neither the item nor the "
                                    "option 'baseline_response' gives one")
    assert judge.calls == []


# --- prompt_alignment -----------------------------------------------------------------------------


def alignment(intent, requirements, completeness, appropriateness, unmet=()) -> dict:
    return {"intent": intent, "requirements": requirements, "completeness": completeness,
            "appropriateness": appropriateness, "unmet": list(unmet), "reason": "As asked."}


SUBSCORES = alignment(0.9, 0.8, 0.7, 0.6)


def aligned(mode: str, user_answer=SUBSCORES, system_answer=SUBSCORES, **item):
    s, judge = scorer("prompt_alignment", {"user_alignment": user_answer, "system_alignment": system_answer},
                      evaluationMode=mode)
    fields = {"input": "List three fruits.", "output": "Apple, pear, plum.", "system": "Answer in French."}
    return s.run(**{**fields, **item}), judge


def test_prompt_alignment_reference_values():
    """Sub-scores 0.9, 0.8, 0.7, 0.6: user 0.4/0.3/0.2/0.1 → 0.80; system 0.35/0.35/0.15/0.15 → 0.79."""
    user, _ = aligned("user")
    system, _ = aligned("system")
    assert (user.score, user.usage.calls) == (0.8, 1)
    assert (system.score, system.usage.calls) == (0.79, 1)
    assert user.reason.startswith("The score is 0.8 of 1 (user alignment). User request: intent 0.9, "
                                  "requirements 0.8, completeness 0.7, appropriateness 0.6. As asked.")


def test_prompt_alignment_both_weighs_two_judged_alignments():
    """The reference's "both" equals "user" (its system score is a copy of the user score); here
    the user's request and the system prompt are judged in two calls: 0.7 × 1 + 0.3 × 0 = 0.7."""
    result, judge = aligned("both", user_answer=alignment(1, 1, 1, 1),
                            system_answer=alignment(0, 0, 0, 0, ["Not in French."]))
    assert result.score == 0.7
    assert [call.stage for call in judge.calls] == ["user_alignment", "system_alignment"]
    assert "REQUEST:\n<<<\nList three fruits.\n>>>" in judge.prompts("user_alignment")[0]
    assert "SYSTEM PROMPT:\n<<<\nAnswer in French.\n>>>" in judge.prompts("system_alignment")[0]
    assert "SYSTEM PROMPT" not in judge.prompts("user_alignment")[0]
    assert result.reason.startswith("The score is 0.7 of 1 (0.7 × user 1 + 0.3 × system 0).")
    assert 'System prompt: intent 0, requirements 0, completeness 0, appropriateness 0; not met: "Not in French.".' \
        in result.reason


def test_prompt_alignment_both_is_the_default():
    result, _ = aligned("both")
    assert result.score == 0.8  # 0.7 × 0.8 + 0.3 × 0.79 = 0.797
    s, _ = scorer("prompt_alignment", {"user_alignment": SUBSCORES, "system_alignment": SUBSCORES})
    assert s.options["evaluationMode"] == "both"


def test_prompt_alignment_both_without_a_system_prompt_scores_the_user_alignment_and_says_so():
    s, judge = scorer("prompt_alignment", {"user_alignment": alignment(1, 1, 1, 0)})
    result = s.run(input="List three fruits.", output="Apple, pear, plum.")
    assert result.score == 0.9
    assert [call.stage for call in judge.calls] == ["user_alignment"]
    assert result.reason.startswith("The score is 0.9 of 1 (user alignment only: no system prompt was given).")


@pytest.mark.parametrize("mode, item, missing", [("system", {"system": None}, "system"),
                                                 ("user", {"input": None}, "input"),
                                                 ("both", {"input": None}, "input")])
def test_prompt_alignment_needs_what_its_mode_judges(mode, item, missing):
    result, judge = aligned(mode, **item)
    assert (result.status, result.error.kind) == ("failed", "input")
    assert result.error.message == f"prompt_alignment needs '{missing}' and the item has none"
    assert judge.calls == []


def test_prompt_alignment_empty_response_scores_zero_without_a_judge_call():
    result, judge = aligned("both", output="  ")
    assert (result.status, result.score, judge.calls) == ("scored", 0, [])
    assert result.reason == "The score is 0 because the response is empty: it addresses nothing it was asked."


def test_prompt_alignment_scale():
    s, _ = scorer("prompt_alignment", {"system_alignment": SUBSCORES}, evaluationMode="system", scale=10)
    assert s.run(output="Pomme.", system="Answer in French.").score == 7.9


# --- rubric -------------------------------------------------------------------------------------


OBJECTS = [{"description": "Names a capital."}, {"description": "Cites a source.", "required": False},
           {"id": "short", "description": "Is under 50 words."}]


def graded(answers, rubric=OBJECTS, **options):
    s, judge = scorer("rubric", {"analyze": verdicts(*answers)}, **options)
    return s.run(input="Which city is the capital of France?", output="Paris.", rubric=rubric), judge


def test_rubric_every_required_criterion_met_scores_the_scale():
    result, judge = graded(["yes", "no", "yes"])  # the unmet one is optional
    assert result.score == 1
    assert result.usage.calls == 3  # one criterion per call
    assert result.reason == ('The score is 1 of 1: 2 of 2 required criteria met. Not met: "Cites a source." '
                             '(optional) (because 1). Met: "Names a capital."; "Is under 50 words.".')
    assert result.analyze_step_result[2] == {"criterion": "Is under 50 words.", "required": True, "verdict": "yes",
                                             "reason": "because 2"}


def test_rubric_one_required_criterion_unmet_scores_zero():
    result, _ = graded(["yes", "yes", "no"])
    assert result.score == 0
    assert "2 of 3 required criteria" not in result.reason
    assert result.reason.startswith("The score is 0 of 1: 1 of 2 required criteria met, so the rubric is not "
                                    'satisfied. Not met: "Is under 50 words." (because 2).')


def test_rubric_partial_gives_the_share_met():
    result, _ = graded(["yes", "no", "yes"], partial=True, scale=10)
    assert result.score == 6.67
    assert result.reason.startswith("The score is 6.67 of 10: 2 of 3 criteria met.")


def test_rubric_with_no_required_criterion_gates_on_all():
    optional = [{"description": "a", "required": False}, {"description": "b", "required": False}]
    assert graded(["yes", "no"], rubric=optional)[0].score == 0
    assert graded(["yes", "yes"], rubric=optional)[0].score == 1


def test_rubric_text_is_one_required_criterion_a_line():
    result, judge = graded(["yes", "YES ", " no"], rubric="Names a capital.\n\n  Is polite.  \nIs short.\n")
    assert [v["criterion"] for v in result.analyze_step_result] == ["Names a capital.", "Is polite.", "Is short."]
    assert [v["verdict"] for v in result.analyze_step_result] == ["yes", "yes", "no"]  # normalised
    assert result.score == 0
    assert [p.split("CRITERION:\n<<<\n")[1].split("\n")[0] for p in judge.prompts("analyze")] == [
        "Names a capital.", "Is polite.", "Is short."]


def test_rubric_list_of_texts():
    result, _ = graded(["yes", "yes"], rubric=["Names a capital.", "Is short."])
    assert (result.score, result.usage.calls) == (1, 2)


@pytest.mark.parametrize("rubric, why", [
    (None, "rubric needs 'rubric' and neither the item nor the option 'rubric' gives one"),
    ("", "rubric needs 'rubric' and neither the item nor the option 'rubric' gives one"),
    (" \n\t", "rubric needs 'rubric' and neither the item nor the option 'rubric' gives one"),
    ([], "rubric: rubric: [] is not valid under any of the given schemas (field 'rubric', from the item)"),
])
def test_rubric_missing_is_an_input_error_not_a_pass(rubric, why):
    """The reference scores 1 when no rubric is given."""
    result, judge = graded(["yes"], rubric=rubric)
    assert (result.status, result.error.kind, result.score) == ("failed", "input", None)
    assert result.error.message == why
    assert judge.calls == []


def test_rubric_from_the_option_unless_the_item_gives_one():
    s, judge = scorer("rubric", {"analyze": verdicts("yes", "no")}, rubric="Is polite.")
    assert s.run(output="Hello!").analyze_step_result[0]["criterion"] == "Is polite."
    assert s.run(output="Hello!", rubric="Is rude.").analyze_step_result[0]["criterion"] == "Is rude."


def test_rubric_shows_the_tool_calls():
    s, judge = scorer("rubric", {"analyze": verdicts("yes")}, rubric="Books the flight.")
    s.run(input="Book me to Oslo.", output="Done.", tool_calls=CALLS[2:])
    assert 'TOOL CALLS the agent made, in order:\n<<<\n1. book_flight {"flight": "SK123"} -> booked\n>>>' \
        in judge.prompts("analyze")[0]


# --- tool_call_accuracy ---------------------------------------------------------------------------


NOTHING_MISSING = {"verdict": "no", "tools": [], "reason": "Covered."}


def tool_calls_judged(answers, missing=NOTHING_MISSING, calls=CALLS, **options):
    s, judge = scorer("tool_call_accuracy", {"analyze": verdicts(*answers), "missing": missing},
                      available_tools=TOOLS, **options)
    return s.run(input="Book me a flight to Oslo.", output="Booked SK123.", tool_calls=calls), judge


def test_tool_call_accuracy_share_of_suitable_calls():
    result, judge = tool_calls_judged(["yes", "no", "yes"])
    assert result.score == 0.67
    assert result.usage.calls == 4  # one per call, then one for missing tools
    assert result.reason == ("The score is 0.67 of 1: 2 of 3 tool calls suit the request. Not suitable: "
                             "get_weather (because 1).")
    prompt = judge.prompts("analyze")[1]
    assert "AVAILABLE TOOLS:\n<<<\n- search_flights: Finds flights.\n- get_weather\n- book_flight: Books a flight.\n>>>" \
        in prompt
    assert 'CALL 2 (the one to judge):\n<<<\nget_weather {"city": "Oslo"} -> 3°C\n>>>' in prompt


def test_tool_call_accuracy_has_a_scale():
    """The reference has no scale option."""
    assert tool_calls_judged(["yes", "no", "yes"], scale=10)[0].score == 6.67


def test_tool_call_accuracy_missing_tools_are_in_the_reason_only():
    missing = {"verdict": "yes", "tools": [" get_weather "], "reason": "The weather was asked."}
    result, _ = tool_calls_judged(["yes", "yes"], missing=missing, calls=CALLS[::2])
    assert result.score == 1
    assert result.reason.endswith("Not called but needed: get_weather.")


@pytest.mark.parametrize("verdict, score", [("yes", 0), (" No", 1)])
def test_tool_call_accuracy_no_call_depends_on_whether_one_was_needed(verdict, score):
    missing = {"verdict": verdict, "tools": ["book_flight"] if verdict == "yes" else [], "reason": "r."}
    result, judge = tool_calls_judged([], missing=missing, calls=[], scale=10)
    assert result.score == score * 10
    assert [call.stage for call in judge.calls] == ["missing"]
    assert "It called no tool at all." in judge.prompts("missing")[0]
    assert result.reason == ("The score is 0 of 10: the agent called no tool, and one was needed (book_flight). r."
                             if score == 0 else "The score is 10 of 10: the agent called no tool, and none was needed. r.")


def test_tool_call_accuracy_reads_calls_from_openai_style_messages():
    s, judge = scorer("tool_call_accuracy", {"analyze": verdicts("yes"), "missing": NOTHING_MISSING},
                      available_tools=TOOLS)
    output = [{"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "3°C"},
              {"role": "assistant", "content": "It is 3°C."}]
    result = s.run(input=[{"role": "user", "content": "Weather in Oslo?"}], output=output)
    assert result.score == 1
    assert result.analyze_step_result == [{"tool": "get_weather", "verdict": "yes", "reason": "because 0"}]


def test_tool_call_accuracy_needs_the_available_tools():
    s, judge = scorer("tool_call_accuracy", {"analyze": verdicts("yes"), "missing": NOTHING_MISSING})
    result = s.run(input="Weather?", tool_calls=CALLS)
    assert (result.error.kind, result.error.message) == (
        "input", "tool_call_accuracy needs 'available_tools' and neither the item nor the option 'available_tools' "
                 "gives one")
    assert judge.calls == []


# --- multi_turn_judge -----------------------------------------------------------------------------


CONVERSATION = [{"role": "system", "content": "You are a weather assistant."},
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": "3°C and snow."},
                {"role": "user", "content": "And Rome?"}]
LAST_TURNS = [{"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "18°C"},
              {"role": "assistant", "content": "18°C and sunny."}]


@pytest.mark.parametrize("verdict, score", [("yes", 5), ("NO", 0)])
def test_multi_turn_judge_verdict_on_the_whole_conversation(verdict, score):
    s, judge = scorer("multi_turn_judge", {"analyze": {"verdict": verdict, "reason": "Turns 2 and 6."}},
                      criterion="Gives the weather for both cities.", scale=5)
    result = s.run(input=CONVERSATION, output=LAST_TURNS)
    assert result.score == score
    assert result.usage.calls == 1
    assert result.reason == (f"The score is {score} of 5: over 3 assistant turns the criterion \"Gives the weather "
                             f"for both cities.\" is {'met' if score else 'not met'}. Turns 2 and 6.")
    prompt = judge.prompts("analyze")[0]
    assert "SYSTEM PROMPT (its instructions):\n<<<\nYou are a weather assistant.\n>>>" in prompt
    assert ("CONVERSATION (6 messages, 3 assistant turns):\n<<<\n[1] user: Weather in Oslo?\n[2] assistant: 3°C and "
            "snow.\n[3] user: And Rome?\n[4] assistant: (no text)\n    calls get_weather {\"city\": \"Rome\"}\n"
            "[5] tool result: 18°C\n[6] assistant: 18°C and sunny.\n>>>") in prompt


@pytest.mark.parametrize("output", ["", [{"role": "assistant", "content": "  "}]])
def test_multi_turn_judge_without_an_assistant_turn_is_not_scorable(output):
    s, judge = scorer("multi_turn_judge", {"analyze": {"verdict": "yes", "reason": "r"}}, criterion="Is polite.")
    result = s.run(input="Hello?", output=output)
    assert (result.status, result.score, judge.calls) == ("not_scorable", None, [])
    assert result.not_scorable.reason == ("The conversation has no assistant turn to judge: the assistant says "
                                          "nothing and calls no tool.")


def test_multi_turn_judge_needs_a_criterion():
    s, judge = scorer("multi_turn_judge", {"analyze": {"verdict": "yes", "reason": "r"}})
    result = s.run(input="Hello?", output="Hi.")
    assert (result.error.kind, result.error.message) == (
        "input", "multi_turn_judge needs 'criterion' and neither the item nor the option 'criterion' gives one")


# --- trajectory_accuracy --------------------------------------------------------------------------


def steps(*pairs):
    return scripted([{"necessary": n, "in_order": o, "reason": f"because {i}"} for i, (n, o) in enumerate(pairs)])


def trajectory(pairs, missing=(), calls=CALLS, **options):
    s, judge = scorer("trajectory_accuracy", {"analyze": steps(*pairs),
                                              "missing": {"missing": list(missing), "reason": "r."}}, **options)
    return s.run(input="Book me a flight to Oslo.", output="Booked.", tool_calls=calls), judge


@pytest.mark.parametrize("scale", [1, 10])
def test_trajectory_accuracy_perfect_trajectory_scores_the_scale(scale):
    """The reference's formula tops out at 0.9."""
    result, judge = trajectory([("yes", "yes")] * 3, scale=scale)
    assert result.score == scale
    assert result.usage.calls == 4  # one per step, then one for missing steps


def test_trajectory_accuracy_formula():
    calls = CALLS + [CALLS[1]]
    result, _ = trajectory([("yes", "yes"), ("no", "no"), ("yes", "yes"), ("YES", " no")], missing=["pay"],
                           calls=calls)
    assert result.score == 0.68  # 0.6 × 3/4 + 0.3 × 2/4 + 0.1 × (1 − 1/5)
    assert result.reason == ("The score is 0.68 of 1: of 4 steps, 3 necessary and 2 in order; 1 missing. "
                             "Unnecessary: 2. get_weather (because 1). Out of order: 2. get_weather, 4. get_weather. "
                             "Missing: pay.")


@pytest.mark.parametrize("missing, score", [([], 1), (["search_flights"], 0)])
def test_trajectory_accuracy_no_step(missing, score):
    result, judge = trajectory([], missing=missing, calls=[])
    assert result.score == score
    assert [call.stage for call in judge.calls] == ["missing"]


def test_trajectory_accuracy_shows_the_expected_trajectory():
    s, judge = scorer("trajectory_accuracy", {"analyze": steps(("yes", "yes")),
                                              "missing": {"missing": [], "reason": "r"}},
                      expected_trajectory=["search_flights", {"name": "book_flight", "after": "search"}])
    s.run(input="Book me a flight to Oslo.", tool_calls=CALLS[:1])
    for stage in ("analyze", "missing"):
        assert ('EXPECTED TRAJECTORY:\n<<<\n1. search_flights\n2. book_flight after="search"\n>>>'
                in judge.prompts(stage)[0])
    assert "STEP TO JUDGE: 1. search_flights" in judge.prompts("analyze")[0]


# --- criteria -----------------------------------------------------------------------------------


@pytest.mark.parametrize("verdict, score", [(" Yes", 10), ("no", 0)])
def test_criteria_yes_scores_the_scale(verdict, score):
    s, judge = scorer("criteria", {"analyze": {"verdict": verdict, "reason": "It names Paris."}},
                      criterion="The answer names a city.", scale=10)
    result = s.run(input="Capital of France?", output="Paris.", ground_truth="Paris", context=["Paris is..."])
    assert result.score == score
    assert result.reason == (f"The score is {score} of 10: the criterion \"The answer names a city.\" is "
                             f"{'met' if score else 'not met'}. It names Paris.")
    prompt = judge.prompts("analyze")[0]
    assert "EXPECTED ANSWER (for reference):\n<<<\nParis\n>>>" in prompt
    assert "CONTEXT the answer could use:\n<<<\n[1] Paris is...\n>>>" in prompt


def test_criteria_from_the_item_over_the_option_and_none_is_an_input_error():
    s, judge = scorer("criteria", {"analyze": {"verdict": "yes", "reason": "r"}}, criterion="Is polite.")
    s.run(output="Hi.", criterion="Is brief.")
    assert "CRITERION:\n<<<\nIs brief.\n>>>" in judge.prompts("analyze")[0]
    result = load_scorer("criteria", judge=judge).run(output="Hi.", criterion="  ")
    assert (result.error.kind, result.error.message) == (
        "input", "criteria needs 'criterion' and neither the item nor the option 'criterion' gives one")


# --- the catalogue entries --------------------------------------------------------------------------


AGENT_SPECS = ["noise_sensitivity", "prompt_alignment", "rubric", "tool_call_accuracy", "multi_turn_judge",
               "trajectory_accuracy", "criteria"]


@pytest.mark.parametrize("spec", AGENT_SPECS)
def test_agent_specs_declare_direction_and_scale(spec):
    plan = load_scorer(spec, judge=FakeJudge()).plan
    assert plan.direction == "higher_is_better"
    assert plan.options.defaults["scale"] == 1
    assert plan.uses_judge


# --- the embedded judge, shape only (the lead runs it: it loads local-tiny) ----------------------------


LOCAL_ITEMS = {
    "noise_sensitivity": dict(input="What is the capital of France? Berlin is a big city.", output="Paris.",
                              baseline_response="The capital of France is Paris."),
    "prompt_alignment": dict(input="Name one fruit.", output="An apple.", system="Answer in one short sentence."),
    "rubric": dict(input="Name one fruit.", output="An apple.", rubric="Names a fruit.\nIs one sentence."),
    "tool_call_accuracy": dict(input="Weather in Oslo?", output="3°C.", available_tools=["get_weather", "book_flight"],
                               tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}, "result": "3°C"}]),
    "multi_turn_judge": dict(input=CONVERSATION, output=LAST_TURNS, criterion="The assistant answers every question."),
    "trajectory_accuracy": dict(input="Book me a flight to Oslo.", output="Booked.", tool_calls=CALLS[::2]),
    "criteria": dict(input="Name one fruit.", output="An apple.", criterion="The answer names a fruit."),
}
# judge calls per item for these items: the for_each stages ask once per criterion, call or step
LOCAL_CALLS = {"noise_sensitivity": 1, "prompt_alignment": 2, "rubric": 2, "tool_call_accuracy": 2,
               "multi_turn_judge": 1, "trajectory_accuracy": 3, "criteria": 1}


@pytest.mark.local
@pytest.mark.parametrize("spec", AGENT_SPECS)
def test_tiny_judge_runs_every_agent_spec(spec):
    """Whatever the 135M model says, the engine's guarantees hold: a schema-shaped answer or a
    failure that names why (a number outside [0, 1] is not in the grammar, so it may be re-asked
    until the item fails as `judge`), never a score outside [0, scale]."""
    from conftest import later_pages, require_local

    require_local("local-tiny")
    scorer = load_scorer(spec, model="local-tiny")
    result = scorer.run(**LOCAL_ITEMS[spec])
    assert result.model == "local-tiny"
    if result.status == "failed":
        assert result.error.kind in ("judge", "truncated"), result.error
        assert result.score is None
        return
    assert result.status == "scored", result
    places = 4 if spec == "criteria" else 2  # criteria scores a probability
    assert 0 <= result.score <= 1 and result.score == round(result.score, places)
    assert result.reason
    assert result.usage.calls - result.usage.reasks - later_pages(scorer, result) == LOCAL_CALLS[spec]
    assert result.usage.tokens_in > 0

"""Faithfulness on an agent's answer: with no context given, the results of the agent's tool calls
are the context its claims are checked against (as the reference does); case C32. Tool calls and
results are read from a flat list, from OpenAI-style messages and from messages' content parts."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.core.messages import MessageError
from engine.core.run_fields import run_namespace
from engine.testing import FakeJudge

QUESTION = "Weather in Paris?"
ANSWER = "It is 18 degrees in Paris."
CLAIM = {"claims": [ANSWER]}
YES = {"verdict": "yes", "reason": "The tool says 18."}
FROM_TOOLS = ("The score is 1 of 1: 1 of 1 claim supported. No context was given: the results of the "
              "agent's tool calls served as the context. Supported by the context: \"It is 18 degrees in Paris.\".")
NO_CONTEXT = ("The score is 0 because no context was given: none of the 1 claim in the output could be verified.")

FLAT = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp": 18}}]}
OPENAI = {"output": [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 18}'},
    {"role": "assistant", "content": ANSWER}]}
TEXT_PARTS = {"output": [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": '{"temp": 18}'}]},
    {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}]}
CALL_AND_RESULT_PARTS = {"output": [  # model messages: a tool-call part, then a tool-result part
    {"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Paris"}}]},
    {"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather", "result": {"temp": 18}}]},
    {"role": "assistant", "content": ANSWER}]}
INVOCATION_PARTS = {"output": [  # stored messages: {format, parts} with a tool-invocation part
    {"role": "assistant", "content": {"format": 2, "parts": [
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1",
                                                        "toolName": "get_weather", "args": {"city": "Paris"},
                                                        "result": {"temp": 18}}},
        {"type": "text", "text": ANSWER}]}}]}

STORED = {"output": [  # the reference's stored message: {format, parts, toolInvocations}
    {"role": "assistant", "content": {"format": 2, "parts": [{"type": "text", "text": ANSWER}], "toolInvocations": [
        {"state": "result", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Paris"},
         "result": {"temp": 18}}]}}]}


def faithfulness(**options):
    judge = FakeJudge({"preprocess": CLAIM, "analyze": YES})
    return load_scorer("faithfulness", judge=judge, **options), judge


@pytest.mark.parametrize("tools", [FLAT, OPENAI, TEXT_PARTS, CALL_AND_RESULT_PARTS, INVOCATION_PARTS],
                         ids=["flat", "openai", "text_parts", "call_and_result_parts", "invocation_parts"])
def test_faithfulness_without_context_checks_claims_against_the_tool_results(tools):
    scorer, judge = faithfulness()
    result = scorer.run(**{"input": QUESTION, "output": ANSWER, **tools})
    assert (result.status, result.score, result.reason) == ("scored", 1.0, FROM_TOOLS)
    assert [c.stage for c in judge.calls] == ["preprocess", "analyze"]
    (prompt,) = judge.prompts("analyze")
    assert 'CONTEXT:\n<<<\n[1] {"temp": 18}\n>>>' in prompt


def test_faithfulness_prefers_the_given_context_to_the_tool_results():
    scorer, judge = faithfulness()
    result = scorer.run(input=QUESTION, output=ANSWER, context=["Paris: 18 degrees."], **FLAT)
    assert result.reason == ('The score is 1 of 1: 1 of 1 claim supported. Supported by the context: '
                             '"It is 18 degrees in Paris.".')
    (prompt,) = judge.prompts("analyze")
    assert "[1] Paris: 18 degrees." in prompt and "temp" not in prompt


@pytest.mark.parametrize("tool_calls", [[], [{"name": "get_weather", "arguments": {}}],
                                        [{"name": "get_weather", "result": None, "error": "timeout"}],
                                        [{"name": "get_weather", "result": "   "}]])
def test_faithfulness_with_neither_context_nor_tool_results_scores_zero_without_a_verdict(tool_calls):
    scorer, judge = faithfulness()
    result = scorer.run(input=QUESTION, output=ANSWER, tool_calls=tool_calls)
    assert (result.status, result.score, result.reason) == ("scored", 0, NO_CONTEXT)
    assert [c.stage for c in judge.calls] == ["preprocess"]


def test_faithfulness_quick_without_context_judges_against_the_tool_results():
    judge = FakeJudge({"analyze": {"verdict": "yes"}})
    result = load_scorer("faithfulness_quick", judge=judge, scoring="hard").run(input=QUESTION, output=ANSWER, **FLAT)
    assert (result.score, result.reason) == (1, "The score is 1 of 1: the judge answered that the context supports "
                                                "the whole output. No context was given: the results of the agent's "
                                                "tool calls served as the context.")
    assert '{"temp": 18}' in judge.prompts("analyze")[0]


@pytest.mark.parametrize("tools", [FLAT, OPENAI, CALL_AND_RESULT_PARTS, INVOCATION_PARTS, STORED],
                         ids=["flat", "openai", "call_and_result_parts", "invocation_parts", "stored"])
def test_hallucination_without_context_checks_claims_against_the_tool_results(tools):
    judge = FakeJudge({"preprocess": {"statements": [ANSWER]}, "analyze": {"verdict": "yes", "reason": "18."}})
    result = load_scorer("hallucination", judge=judge).run(**{"input": QUESTION, "output": ANSWER, **tools})
    assert (result.status, result.score) == ("scored", 0)
    assert result.reason == ("The score is 0 of 1 (lower is better): 0 of 1 claim in the output are hallucinated, "
                             "0 contradicted by the context and 0 not found in it. No context was given: the "
                             "results of the agent's tool calls served as the context. Supported: "
                             '"It is 18 degrees in Paris.".')
    (prompt,) = judge.prompts("analyze")
    assert 'SOURCE:\n<<<\n[1] {"temp": 18}\n>>>' in prompt


def test_hallucination_with_neither_context_nor_tool_results_is_not_scorable_without_a_call():
    judge = FakeJudge()
    result = load_scorer("hallucination", judge=judge).run(input=QUESTION, output=ANSWER, tool_calls=[])
    assert result.status == "not_scorable" and result.reason.startswith("No context was given")
    assert judge.calls == []


def test_faithfulness_reads_tool_calls_in_the_stored_message_shape():
    scorer, judge = faithfulness()
    result = scorer.run(input=QUESTION, **STORED)
    assert (result.status, result.score, result.reason) == ("scored", 1.0, FROM_TOOLS)


def test_a_stored_message_lists_each_tool_call_once():
    """Stored messages may carry a call both as a tool-invocation part and in toolInvocations."""
    message = STORED["output"][0]
    both = {"role": "assistant", "content": {**message["content"], "parts": [
        {"type": "tool-invocation", "toolInvocation": message["content"]["toolInvocations"][0]},
        {"type": "text", "text": ANSWER}]}}
    for output in (STORED["output"], [both]):
        run = run_namespace({"output": output})
        assert run["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1",
                                      "result": {"temp": 18}}]
        assert run["output_text"] == ANSWER


def test_tool_calls_and_results_from_content_parts_are_read_with_their_ids():
    run = run_namespace({"output": CALL_AND_RESULT_PARTS["output"]})
    assert run["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1",
                                  "result": {"temp": 18}}]
    run = run_namespace({"output": INVOCATION_PARTS["output"]})
    assert run["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1",
                                  "result": {"temp": 18}}]
    assert run["output_text"] == ANSWER


def test_a_tool_invocation_still_running_has_no_result():
    part = {"type": "tool-invocation", "toolInvocation": {"state": "call", "toolCallId": "c1",
                                                         "toolName": "get_weather", "args": {}}}
    run = run_namespace({"output": [{"role": "assistant", "content": [part]}]})
    assert run["tool_calls"] == [{"name": "get_weather", "arguments": {}, "id": "c1"}]


def test_a_failed_tool_result_part_is_the_calls_error():
    output = [{"role": "assistant",
               "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "f", "input": {}}]},
              {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "f",
                                            "output": {"type": "error-text", "value": "timeout"}}]}]
    assert run_namespace({"output": output})["tool_calls"] == [{"name": "f", "arguments": {}, "id": "c1",
                                                               "error": "timeout"}]


def test_a_tool_call_part_without_a_name_names_the_place():
    output = [{"role": "assistant", "content": "x"}, {"role": "assistant", "content": [{"type": "tool-call"}]}]
    with pytest.raises(MessageError, match=r"output\[1\]\.content\[0\]: a tool call needs a 'name'"):
        run_namespace({"output": output})

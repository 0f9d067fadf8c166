"""The tool-call rule scorers (issue 22): specs over `run.tool_calls`, no judge."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer

CALLS = [{"name": "search", "arguments": {"q": "paris"}}, {"name": "fetch", "arguments": {}, "error": "timeout"},
         {"name": "search", "arguments": {"q": "tower"}}, {"name": "answer", "arguments": {}}]


def run(spec: str, tool_calls=CALLS, options=None, **fields):
    return load_scorer(spec, options=options or {}).run(input="Tell me about the tower", tool_calls=tool_calls,
                                                         **fields)


@pytest.mark.parametrize("spec, fields, options, score", [
    ("called_tool", {"tool": "search"}, {"times": 2}, 1.0),
    ("called_tool", {"tool": "search"}, {"times": 3}, 0.0),
    ("called_tool", {}, {"tool": "answer"}, 1.0),
    ("did_not_call", {"tool": "delete"}, {}, 1.0),
    ("did_not_call", {"tool": "fetch"}, {}, 0.0),
    ("tool_order", {"order": ["search", "answer"]}, {}, 1.0),
    ("tool_order", {"order": ["answer", "search"]}, {}, 0.0),
    ("max_tool_calls", {}, {"limit": 4}, 1.0),
    ("max_tool_calls", {}, {"limit": 3}, 0.0),
    ("used_no_tools", {}, {}, 0.0),
    ("no_tool_errors", {}, {}, 0.0),
    ("tool_call_accuracy_rule", {}, {"expectedTool": "fetch"}, 1.0),
    ("tool_call_accuracy_rule", {}, {"expectedTool": "fetch", "strictMode": True}, 0.0),
    ("tool_call_accuracy_rule", {}, {"expectedToolOrder": ["search", "fetch"]}, 1.0),
    ("tool_call_accuracy_rule", {}, {"expectedToolOrder": ["fetch", "search"], "strictMode": True}, 0.0),
])
def test_each_check_scores_the_scale_or_zero(spec, fields, options, score):
    result = run(spec, options=options, **fields)
    assert (result.status, result.score) == ("scored", score), result.error or result.reason
    assert result.reason


def test_no_tool_call_is_an_answer_and_scores():
    assert run("used_no_tools", tool_calls=[]).score == 1.0
    assert run("no_tool_errors", tool_calls=[]).reason == "None of the 0 tool calls reported an error."
    assert run("did_not_call", tool_calls=[], tool="search").score == 1.0


def test_a_check_without_its_tool_is_an_input_error_naming_the_field():
    result = run("called_tool")
    assert (result.status, result.error.kind) == ("failed", "input")
    assert "tool" in result.error.message


def test_the_failed_calls_are_named_in_the_reason():
    assert run("no_tool_errors").reason == "1 of 4 tool calls reported an error: fetch."


def test_trajectory_scores_a_perfect_trajectory_the_scale_and_names_what_is_missing():
    perfect = run("trajectory", expected_trajectory=["search", "fetch", "search", "answer"],
                  options={"ordering": "strict"})
    assert perfect.score == 1.0
    partial = run("trajectory", tool_calls=CALLS[:1], expected_trajectory=["search", "answer"])
    assert 0 <= partial.score < 1 and "Missing: answer." in partial.reason


def test_tool_call_accuracy_rule_without_an_expectation_is_not_scorable():
    result = run("tool_call_accuracy_rule")
    assert (result.status, result.score) == ("not_scorable", None)
    assert "expectedTool" in result.reason

"""The tool-call rule functions on plain lists of ``{name, arguments, result?, error?}`` calls:
the expected tool or order, the quick checks, and the trajectory's parts and weights."""

from __future__ import annotations

import pytest

from engine.functions import lookup
from engine.functions.agent_steps import MAX_CALLS


def calls(*names: str, **errors: object) -> list[dict]:
    """Calls of `names` in order with empty arguments; ``e<i>=...`` sets call i's error."""
    made = [{"name": name, "arguments": {}} for name in names]
    for key, error in errors.items():
        made[int(key[1:])]["error"] = error
    return made


def run(function: str, **kwargs):
    return lookup(function)(**kwargs)


# --- tool_call_accuracy ------------------------------------------------------------------------------------


@pytest.mark.parametrize("called, kwargs, correct", [
    ((), {"expected_tool": "search"}, False),  # no call is never correct
    (("search",), {"expected_tool": "search"}, True),
    (("lookup", "search"), {"expected_tool": "search"}, True),
    (("lookup", "search"), {"expected_tool": "search", "strict": True}, False),  # not the only call
    (("search",), {"expected_tool": "search", "strict": True}, True),
    (("a", "x", "b", "c"), {"expected_order": ["a", "b", "c"]}, True),  # a subsequence
    (("b", "a", "b"), {"expected_order": ["a", "b"]}, True),
    (("b", "a"), {"expected_order": ["a", "b"]}, False),
    (("a", "x", "b"), {"expected_order": ["a", "b"], "strict": True}, False),
    (("a", "b"), {"expected_order": ["a", "b"], "strict": True}, True),
    ((), {"expected_order": ["a"]}, False),
])
def test_tool_call_accuracy(called, kwargs, correct):
    result = run("tool_call_accuracy", tool_calls=calls(*called), **kwargs)
    assert result == {"correct": correct, "mode": "order" if "expected_order" in kwargs else "tool",
                      "called": list(called)}


def test_tool_call_accuracy_needs_an_expectation():
    with pytest.raises(ValueError, match="give the expected tool"):
        run("tool_call_accuracy", tool_calls=calls("a"))


# --- quick checks ------------------------------------------------------------------------------------------


def test_called_tool_and_did_not_call_count_the_calls():
    made = calls("search", "fetch", "search")
    assert run("called_tool", tool_calls=made, name="search") == {"passed": True, "count": 2}
    assert run("called_tool", tool_calls=made, name="search", times=3) == {"passed": False, "count": 2}
    assert run("did_not_call", tool_calls=made, name="delete") == {"passed": True, "count": 0}
    assert run("did_not_call", tool_calls=made, name="fetch") == {"passed": False, "count": 1}


def test_tool_order_allows_other_calls_between():
    made = calls("search", "log", "summarize", "respond")
    assert run("tool_order", tool_calls=made, order=["search", "summarize", "respond"]) == {
        "passed": True, "matched": 3, "called": ["search", "log", "summarize", "respond"]}
    assert run("tool_order", tool_calls=made, order=["summarize", "search"])["matched"] == 1
    assert run("tool_order", tool_calls=[], order=[])["passed"] is True


def test_max_tool_calls_and_used_no_tools():
    assert run("max_tool_calls", tool_calls=calls("a", "b"), limit=2) == {"passed": True, "count": 2}
    assert run("max_tool_calls", tool_calls=calls("a", "b", "c"), limit=2) == {"passed": False, "count": 3}
    assert run("used_no_tools", tool_calls=[]) == {"passed": True, "count": 0}
    assert run("used_no_tools", tool_calls=calls("a")) == {"passed": False, "count": 1}


def test_no_tool_errors_lists_the_failed_calls():
    made = calls("a", "b", "c", "d", e1="timeout", e2=None, e3={})
    assert run("no_tool_errors", tool_calls=made) == {"passed": False, "count": 4,
                                                     "failed": [{"index": 1, "name": "b"}]}
    assert run("no_tool_errors", tool_calls=calls("a"))["passed"] is True


def test_a_call_without_a_name_is_refused_and_too_many_calls_fail_clearly():
    with pytest.raises(TypeError, match="argument 'tool_calls': 'name' is a required property"):
        run("used_no_tools", tool_calls=[{"arguments": {}}])
    with pytest.raises(ValueError, match=f"tool_calls has {MAX_CALLS + 1:,} calls: used_no_tools takes at most "
                                         f"{MAX_CALLS:,} \\(its size limit\\)"):
        run("used_no_tools", tool_calls=calls(*["a"] * (MAX_CALLS + 1)))


# --- trajectory --------------------------------------------------------------------------------------------


def test_trajectory_relaxed_accuracy_alone():
    result = run("trajectory", tool_calls=calls("search", "log", "summarize"), expected=["search", "summarize"])
    assert (result["score"], result["accuracy"], result["efficiency"], result["forbidden"]) == (1.0, 1.0, None, None)
    assert (result["matched"], result["missing"], result["extra"]) == (2, [], ["log"])


@pytest.mark.parametrize("called, ordering, allow_repeated, expected_score", [
    (("a", "b", "c"), "strict", True, 1.0),
    (("b", "a", "c"), "strict", True, 1 / 3),  # only c in its place
    (("a", "b", "c", "d"), "strict", True, 1 - 0.5 * 1 / 3),  # one call past the expected: half a share
    (("c", "a", "b"), "relaxed", True, 2 / 3),  # a then b found in order, c not after b
    (("c", "b", "a"), "unordered", True, 1.0),
    (("a", "a", "b", "c"), "relaxed", False, 1 - 0.1),  # a repeated
    (("a",), "unordered", True, 1 / 3),
])
def test_trajectory_orderings(called, ordering, allow_repeated, expected_score):
    result = run("trajectory", tool_calls=calls(*called), expected=["a", "b", "c"], ordering=ordering,
                 allow_repeated=allow_repeated)
    assert result["score"] == pytest.approx(expected_score)


def test_trajectory_steps_with_arguments_match_only_equal_arguments():
    made = [{"name": "search", "arguments": {"q": "cats"}}]
    assert run("trajectory", tool_calls=made, expected=[{"name": "search", "arguments": {"q": "cats"}}])["score"] == 1
    assert run("trajectory", tool_calls=made, expected=[{"name": "search", "arguments": {"q": "dogs"}}])["score"] == 0


@pytest.mark.parametrize("called, expected, equal", [
    ({"qty": 2.0}, {"qty": 2}, True),  # numbers by value
    ({"a": {"x": [1, 2.5]}, "b": "s"}, {"b": "s", "a": {"x": [1.0, 2.5]}}, True),  # keys in any order, any depth
    ({"ok": True}, {"ok": 1}, False),  # true is not 1
    ({"ok": False}, {"ok": 0.0}, False),
    ({"n": None}, {"n": 0}, False),
    ({"q": "2"}, {"q": 2}, False),
    ({"a": [1, 2]}, {"a": [2, 1]}, False),  # arrays in order
])
def test_call_arguments_are_equal_by_json_equality(called, expected, equal):
    made = [{"name": "order", "arguments": called}]
    result = run("trajectory", tool_calls=made, expected=[{"name": "order", "arguments": expected}])
    assert result["score"] == (1 if equal else 0)
    repeated = [{"name": "order", "arguments": expected}, {"name": "order", "arguments": called}]
    assert run("trajectory", tool_calls=repeated, no_redundant_calls=True)["redundant"] == ([1] if equal else [])


def test_trajectory_budgets_and_weights():
    made = calls("a", "b", "c", "d")  # 4 steps for a budget of 2: 1 - (4 - 2) / 2 = 0
    result = run("trajectory", tool_calls=made, expected=["a", "b", "c", "d"], max_steps=2, tokens=150,
                 max_tokens=100, seconds=1.0, max_seconds=2.0)
    # efficiency: steps 0, tokens 1 - 50/100 = 0.5, seconds 1 → 0.5; score (0.4·1 + 0.3·0.5) / 0.7
    assert (result["efficiency"], result["overBudget"]) == (0.5, ["steps", "tokens"])
    assert result["score"] == pytest.approx((0.4 * 1 + 0.3 * 0.5) / 0.7)
    with pytest.raises(ValueError, match="a tokens budget needs the run's tokens"):
        run("trajectory", tool_calls=made, max_tokens=100)


def test_trajectory_redundant_calls_and_retries():
    made = calls("search", "search", "fetch", "fetch", "fetch", "fetch", e2="500", e3="500", e4="500")
    made[1]["arguments"] = {"page": 2}
    result = run("trajectory", tool_calls=made, no_redundant_calls=True, max_retries_per_tool=1)
    # fetch repeats with the same arguments 3 times: efficiency 1 - 0.6; 3 retries after failures, 2 past 1
    assert (result["redundant"], result["efficiency"]) == ([3, 4, 5], pytest.approx(0.4))
    assert (result["retries"], result["failures"]) == (3, pytest.approx(0.6))
    assert result["score"] == pytest.approx((0.3 * 0.4 + 0.2 * 0.6) / 0.5)


def test_trajectory_forbidden_tools_and_sequences_score_zero():
    made = calls("search", "delete", "respond")
    assert run("trajectory", tool_calls=made, expected=["search", "respond"],
               forbidden_tools=["drop"])["score"] == 1.0
    hit = run("trajectory", tool_calls=made, expected=["search", "respond"], forbidden_tools=["delete"])
    assert (hit["score"], hit["forbidden"], hit["violations"]) == (0.0, 0.0, ["delete"])
    sequence = run("trajectory", tool_calls=made, forbidden_sequences=[["delete", "respond"], ["respond", "search"]])
    assert (sequence["score"], sequence["violations"]) == (0.0, ["delete → respond"])


def test_trajectory_with_nothing_to_judge_scores_one_and_an_empty_expectation_wants_no_calls():
    assert run("trajectory", tool_calls=calls("a"))["score"] == 1.0
    assert run("trajectory", tool_calls=[], expected=[])["score"] == 1.0
    assert run("trajectory", tool_calls=calls("a"), expected=[])["score"] == 0.0

"""The judge sees the conversation that gives the last request its meaning: every shipped judged
scorer that shows the input shows the turns before the last user message, marked, and an input of
one request renders as before."""

from __future__ import annotations

from typing import Any

import pytest

from engine.bind.load import load_scorer
from engine.core.messages import EARLIER_TURNS, LAST_REQUEST
from engine.core.run_fields import run_namespace
from engine.testing import FakeJudge
from engine.testing.schema_answers import answer_for
from english_prompts import DECLARED, ITEM, judge_scorers

EARLIER = "Do you want option A (monthly) or option B (yearly)?"
CONVERSATION = [{"role": "system", "content": "You sell subscriptions."},
                {"role": "user", "content": "I want to subscribe."},
                {"role": "assistant", "content": EARLIER},
                {"role": "user", "content": "A"}]


def prompts(scorer_id: str, **item: Any) -> list[str]:
    judge = FakeJudge(default=lambda call: answer_for(call.schema))
    scorer = load_scorer(scorer_id, judge=judge)
    declared = {name: DECLARED[name] for name in scorer.plan.declared if name in DECLARED}
    scorer.run(**{**ITEM, **item, **declared}, language="en")
    return ["\n".join(m["content"] for m in call.messages) for call in judge.calls]


# multi_turn_judge shows the whole transcript its own way; summarization's input is the source text
READS_THE_REQUEST = [s for s in judge_scorers() if s not in ("multi_turn_judge", "summarization")]


@pytest.mark.parametrize("scorer_id", READS_THE_REQUEST)
def test_the_judge_sees_the_turns_before_the_last_request(scorer_id):
    single = prompts(scorer_id, input="A question nobody else asks?")
    if not any("A question nobody else asks?" in p for p in single):  # a scorer that shows no input
        assert prompts(scorer_id, input=CONVERSATION) == prompts(scorer_id, input="A")
        return
    shown = [p for p in prompts(scorer_id, input=CONVERSATION) if EARLIER in p]
    assert shown, f"{scorer_id}: no prompt shows the earlier turns"
    for prompt in shown:
        assert f"{EARLIER_TURNS}\n[1] user: I want to subscribe.\n[2] assistant: {EARLIER}\n\n{LAST_REQUEST}\nA" in prompt
        assert "You sell subscriptions." not in prompt.split(EARLIER_TURNS, 1)[1].split(LAST_REQUEST, 1)[0]


def test_a_reply_to_a_choice_is_judged_with_the_choice_it_answers():
    judge = FakeJudge(default=lambda call: answer_for(call.schema))
    load_scorer("criteria", judge=judge).run(input=CONVERSATION[1:], output="Monthly plan booked.",
                                             criterion="Books the plan the user chose.", language="en")
    (call,) = judge.calls
    assert f"[2] assistant: {EARLIER}" in call.messages[-1]["content"]


def test_one_request_reads_as_its_text_and_rule_scorers_keep_the_last_request():
    assert run_namespace({"input": [{"role": "user", "content": "Hi"}]})["input_conversation"] == "Hi"
    assert run_namespace({"input": "Hi"})["input_conversation"] == "Hi"
    run = run_namespace({"input": CONVERSATION})
    assert run["input_text"] == "A"
    result = load_scorer("textual_difference").run(input=CONVERSATION, output="A")
    assert result.score == 1  # compared with the last request, not the conversation

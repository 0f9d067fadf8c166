"""Test doubles shipped with the package.

- `FakeJudge`: an in-process judge that answers from a script per stage and records every call
  (the prompts it got), running the same validate-and-re-ask loop as a real judge; `WithProbs`
  scripts an answer's label probabilities.
- `FakeOpenAIServer` (`engine.testing.fake_openai`): an OpenAI-compatible HTTP server on
  127.0.0.1 with scripted replies, latency and fault injection, so tests exercise the real
  openai + instructor path end to end (its HTTP side in `fake_http`, the replies it sends —
  `Fault`, `Tokens`, completions — in `fake_replies`).
- `FaultInjector` (`engine.testing.faults`): a reply for that server injecting faults (429,
  5xx, resets, timeouts, malformed or cut-off answers, refusals) at seeded rates.
- `answer_for` / `schema_reply` (`engine.testing.schema_answers`): a valid JSON value for any
  stage's output schema, and a reply for that server answering every judge call with one.
- `assert_scores` (`engine.testing.assertions`): a scorer on a few cases inside a pytest suite,
  failing with each case's id, score, reason and stage answers.

May import: `engine.core`, `engine.functions`, `engine.spec`, `engine.judge`, `engine.interpret`,
`engine.bind`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.result import Usage
from ..judge.call import JudgeAnswer, JudgeCall
from ..judge.contract import AnswerInvalid, no_valid_answer
from .assertions import assert_scores

Reply = Any  # a JSON value, a `WithProbs`, a callable (JudgeCall) -> either, or an Exception to raise


@dataclass(frozen=True)
class WithProbs:
    """A scripted answer with the label probabilities the judge reports for it, e.g.
    ``WithProbs({"verdict": "yes", "reason": "…"}, {"verdict": {"yes": 0.8, "no": 0.2}})``: given
    in `JudgeAnswer.answer_probs` to a call that asks for them (`JudgeCall.probabilities`), as a
    real judge would; None: the judge reports none."""

    answer: Any
    probs: dict[str, dict[str, float]] | None = None


class FakeJudge:
    """A scripted judge.

    script: stage id → a list of replies consumed in order (the last one repeats), or one
    reply for every call. A reply is a JSON value (the answer), a `WithProbs` (an answer and its
    label probabilities), a callable taking the `JudgeCall` and returning one, or an exception
    instance to raise (e.g. a `ScorerRunError("transport", …)`). `calls` records every `JudgeCall` received, with its
    messages; `prompts(stage)` lists the user prompts a stage got. tokens: (in, out) tokens every
    request reports in its usage (default none), e.g. to test costs and budgets.
    """

    def __init__(self, script: Mapping[str, Reply | list[Reply]] | None = None, *, model: str = "fake/judge",
                 default: Reply | None = None, tokens: tuple[int, int] | None = None):
        self.model = model
        self.tokens = tokens
        self.script = {k: (list(v) if isinstance(v, list) else [v]) for k, v in (script or {}).items()}
        self.default = default
        self.calls: list[JudgeCall] = []
        self._used: dict[str, int] = {}

    def _next(self, call: JudgeCall) -> Any:
        replies = self.script.get(call.stage)
        if not replies:
            if self.default is None:
                raise AssertionError(f"FakeJudge has no reply scripted for stage {call.stage!r}")
            reply = self.default
        else:
            i = self._used.get(call.stage, 0)
            self._used[call.stage] = i + 1
            reply = replies[min(i, len(replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        return reply(call) if callable(reply) else reply

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        usage = Usage()
        last_error = ""
        last_invalid: AnswerInvalid | None = None
        raw = ""
        messages = list(call.messages)
        for attempt in range(call.max_reasks + 1):
            if last_error:
                messages = messages + [{"role": "user", "content": f"Your answer was not valid: {last_error}. "
                                        "Answer again, correcting this."}]
            call = call.with_messages(messages)
            self.calls.append(call)
            usage.calls += 1
            if self.tokens is not None:
                usage.tokens_in += self.tokens[0]
                usage.tokens_out += self.tokens[1]
            data = self._next(call)
            probs = None
            if isinstance(data, WithProbs):
                data, probs = data.answer, data.probs
            raw = data if isinstance(data, str) else json.dumps(data)
            try:  # a text as a provider's answer is read: the contract's `read`, as every judge does
                value = call.contract.validate_text(data) if isinstance(data, str) else call.validate(data)
            except AnswerInvalid as exc:
                last_error, last_invalid = str(exc), exc
                usage.reasks += attempt < call.max_reasks
                continue
            return JudgeAnswer(value, raw, usage.calls, usage, answer_probs=probs if call.probabilities else None)
        raise no_valid_answer(call.stage, usage.calls, last_error, last_invalid, raw_answer=raw, usage=usage)

    def prompts(self, stage: str) -> list[str]:
        return [c.messages[-1]["content"] for c in self.calls if c.stage == stage]


def scripted(replies: Iterable[Reply]) -> Callable[[JudgeCall], Any]:
    """A reply function returning `replies` in order across calls (the last repeats)."""
    items = list(replies)
    state = {"i": 0}

    def reply(call: JudgeCall) -> Any:
        i = min(state["i"], len(items) - 1)
        state["i"] += 1
        return items[i]

    return reply


def __getattr__(name: str) -> Any:
    if name in ("FakeOpenAIServer", "Fault", "Tokens"):
        from . import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(name)


__all__ = ["FakeJudge", "WithProbs", "scripted", "assert_scores", "FakeOpenAIServer", "Fault", "Tokens"]

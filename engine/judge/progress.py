"""The progress layer: a judge that reports each question it has answered.

A batch run (`engine.run.runner`) puts it outermost over every scorer's judge, so its reporter can
show progress per judge answer, not only per item: an item of the embedded judge takes one call
to list its claims and one per claim, and a bar that moves only when the item ends reads as a
hang. Answers served by the judge-call cache count too (the callback gets the answer, so it can
tell them apart: ``answer.usage.cache_hits``); a call that fails counts as well (it is done), with
no answer.
"""

from __future__ import annotations

from collections.abc import Callable

from .call import Judge, JudgeAnswer, JudgeCall, JudgeLayer

__all__ = ["ProgressJudge"]


class ProgressJudge(JudgeLayer):
    """`inner` calling `on_answer(call, answer)` after each `ask` ends: the `JudgeAnswer`, or None
    when the call failed."""

    def __init__(self, inner: Judge, on_answer: Callable[[JudgeCall, JudgeAnswer | None], None]):
        super().__init__(inner)
        self.on_answer = on_answer

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        answer = None
        try:
            answer = await self.inner.ask(call)
            return answer
        finally:
            self.on_answer(call, answer)

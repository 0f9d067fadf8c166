"""The progress layer: a judge that reports each question it has answered.

A batch run (`engine.run.runner`) puts it outermost over every scorer's judge, so its reporter can
show progress per judge answer, not only per item: an item of the embedded judge takes one call
to list its claims and one per claim, and a bar that moves only when the item ends reads as a
hang. Answers served by the judge-call cache count too; a call that fails counts as well (it is
done).
"""

from __future__ import annotations

from collections.abc import Callable

from .call import Judge, JudgeAnswer, JudgeCall, JudgeLayer

__all__ = ["ProgressJudge"]


class ProgressJudge(JudgeLayer):
    """`inner` calling `on_answer(call)` after each `ask` ends, answered or failed."""

    def __init__(self, inner: Judge, on_answer: Callable[[JudgeCall], None]):
        super().__init__(inner)
        self.on_answer = on_answer

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        try:
            return await self.inner.ask(call)
        finally:
            self.on_answer(call)

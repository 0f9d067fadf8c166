"""A jury's judges: one judge stack per juror, each call sent to the juror it names.

A stage asked by a jury (`engine.spec.plans.JuryPlan`) sends each juror's calls with
`JudgeCall.model` set to that juror's model string; `JurorJudges` answers them with that model's
own judge — built on its first call by the scorer's factory (`engine.bind.stack.make_judge`:
the provider settings, family and reasoning rules of that model, its retries, its cache
entries, keyed by its provider identity, and the run's shared parts) — and a call naming no
model (a judge-written reason) with the scorer's own judge.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .call import Judge, JudgeAnswer, JudgeCall

__all__ = ["JurorJudges"]


class JurorJudges:
    """Routes each call to its juror's judge (see the module). `build(model)` makes a model's judge;
    `model` is the scorer's own, asked for calls that name none. Judges are built once each, on
    their first call."""

    def __init__(self, build: Callable[[str], Judge], model: str):
        self.model = model
        self._build = build
        self._judges: dict[str, Judge] = {}
        self._lock = threading.Lock()

    def judge_for(self, model: str | None) -> Judge:
        """The judge of `model` (None: the scorer's own), built on first use."""
        model = model or self.model
        judge = self._judges.get(model)
        if judge is None:
            with self._lock:
                judge = self._judges.get(model)
                if judge is None:
                    judge = self._judges[model] = self._build(model)
        return judge

    @property
    def inner(self) -> Judge:
        """The scorer's own judge (what `engine.judge.recipe.judge_recipe` and `cache_setting` read)."""
        return self.judge_for(None)

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        return await self.judge_for(call.model).ask(call)

    async def aclose(self) -> None:
        """Close every juror's judge built so far."""
        for judge in list(self._judges.values()):
            close: Any = getattr(judge, "aclose", None)
            if close is not None:
                await close()

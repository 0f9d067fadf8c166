"""A run's judge settings given as options (``--option judge.reasoning_effort=low``): a plan with
every prompt stage (and judge-written reason) asking with them.

The option names are `JUDGE_OPTIONS`; each is checked here and overrides the spec's judge block and
every stage's own value, as ``--samples`` overrides each stage's ``samples``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .plans import PromptStagePlan, ScorerPlan

__all__ = ["JUDGE_OPTIONS", "split_judge_options", "with_judge_options"]

_EFFORTS = ("minimal", "low", "medium", "high")
#: Option name → the stage plan field it sets.
JUDGE_OPTIONS = {"judge.reasoning_effort": "reasoning_effort", "judge.reasoning_tokens": "reasoning_tokens"}


def _checked(name: str, value: Any) -> Any:
    if name == "judge.reasoning_effort":
        if value not in _EFFORTS:
            raise ValueError(f"option {name!r}: {value!r} is not a reasoning effort (one of {', '.join(_EFFORTS)})")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"option {name!r}: a whole number of tokens > 0 is needed, not {value!r}")
    return value


def split_judge_options(given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the scorer's own options, the judge options of `JUDGE_OPTIONS` checked) from `given`.
    Raises `ValueError` naming a judge option with a bad value."""
    own = {k: v for k, v in given.items() if k not in JUDGE_OPTIONS}
    judge = {JUDGE_OPTIONS[k]: _checked(k, v) for k, v in given.items() if k in JUDGE_OPTIONS}
    return own, judge


def with_judge_options(plan: ScorerPlan, judge: Mapping[str, Any]) -> ScorerPlan:
    """`plan` with every prompt stage and judge-written reason asking with `judge` (stage plan
    field → value, from `split_judge_options`); `plan` itself when there is none."""
    if not judge:
        return plan

    def changed(stage: Any) -> Any:
        return dataclasses.replace(stage, **judge) if isinstance(stage, PromptStagePlan) else stage

    reasons = tuple(dataclasses.replace(r, prompt=changed(r.prompt)) if r.prompt is not None else r
                    for r in plan.reasons)
    return dataclasses.replace(plan, stages=tuple(changed(s) for s in plan.stages), reasons=reasons)

"""A panel of judge models, as planned at load: ``judge.jury`` (or a stage's ``jury``) → a `JuryPlan`.

A jury names two or more distinct models; each is asked every question of a prompt stage (or its
``samples``) and their answers are reduced to one by the stage reductions
(`engine.spec.sampling`: ``majority``, ``unanimous``, ``mean``, ``median``, ``min``, ``max`` or an
expression over ``samples``, here the jurors' answers in the order of ``models``). A stage's own
``jury`` replaces the judge block's. Load-time problems — a jury of one, a model named twice, a
``min_successful`` above the number of jurors, a reduction with nothing to reduce — are placed at
their key.

A caller's jury (``--jury A,B,C``, ``--jury-min N``, `engine.judge.settings.JudgeSettings.jury`)
replaces the spec's on every prompt stage (`with_jury`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from .document import Document
from .expressions import Expression
from .models import JudgeSpec, JurySpec, PromptStage
from .plans import JuryPlan, PromptStagePlan, SamplingPlan, ScorerPlan
from .sampling import sampling_plan

__all__ = ["default_min", "jury_plan", "stage_with_jury", "with_jury"]


def default_min(jurors: int) -> int:
    """The fewest answers a jury of `jurors` needs when none is given: more than half of them."""
    return jurors // 2 + 1


def jury_plan(stage: PromptStage, key: str, schema: Mapping[str, Any], judge: JudgeSpec, doc: Document,
              compile_expr: Callable[[str, str], Expression | None]) -> JuryPlan | None:
    """The jury asking `stage` (written at `key`, ``stages[1]``): its own ``jury``, else the judge
    block's, else None. Problems go to `doc`, at the key of the jury that has them."""
    written, where = (stage.jury, f"{key}.jury") if stage.jury is not None else (judge.jury, "judge.jury")
    if written is None:
        return None
    models = _models(written, where, doc)
    minimum = written.min_successful
    if minimum is not None and len(models) >= 2 and minimum > len(models):
        doc.add("invalid-value", f"{where}.min_successful", f"min_successful: {minimum} is more than the "
                f"{len(models)} jurors", f"give at most {len(models)}")
    asked = SimpleNamespace(samples=None, temperature=None, reduce=written.reduce, tie=written.tie)
    reduction = sampling_plan(asked, where, schema, judge, doc, compile_expr)  # type: ignore[arg-type]
    if reduction is None:
        doc.add("sampling", f"{where}.reduce", "the jurors' answers cannot be reduced: the answer has no enum, "
                "boolean or number field at its top level", "write reduce: an expression over samples (the "
                "jurors' answers), e.g. \"samples | first\"")
        return None
    if len(models) < 2:
        return None
    return JuryPlan(tuple(models), minimum or default_min(len(models)), dataclasses.replace(reduction, n=len(models)))


def _models(written: JurySpec, where: str, doc: Document) -> list[str]:
    """The jury's models, stripped; a jury of one or a model named twice recorded in `doc`."""
    models = [m.strip() for m in written.models]
    for index, model in enumerate(models):
        if not model:
            doc.add("invalid-value", f"{where}.models[{index}]", "a juror's model string is empty",
                    "give provider/model, e.g. openai/gpt-4o-mini")
        elif model in models[:index]:
            doc.add("invalid-value", f"{where}.models[{index}]", f"{model!r} is named twice",
                    "name each juror once (ask one model several times with samples)")
    if len(models) == 1:
        doc.add("invalid-value", f"{where}.models", "a jury of one is a single judge",
                "name two or more models, or give the model as judge.model")
    return [m for m in dict.fromkeys(models) if m]


def with_jury(plan: ScorerPlan, models: tuple[str, ...] | None, min_successful: int | None) -> ScorerPlan:
    """`plan` with a caller's jury: every prompt stage asked by `models` (None: the stage's own
    jury, if any), needing `min_successful` answers (None: the stage's, else more than half).
    A stage without a jury of its own gets the default reduction of its answer (majority over its
    enum and boolean fields, else mean of its number fields); one that has none keeps its judge.
    Raises `ValueError` for fewer than two distinct models or a minimum outside 1..jurors."""
    if models is None and min_successful is None:
        return plan
    if models is not None:
        models = tuple(dict.fromkeys(m.strip() for m in models if m.strip()))
        if len(models) < 2:
            raise ValueError(f"a jury needs two or more distinct models, got {', '.join(models) or 'none'}")
    stages = []
    for stage in plan.stages:
        if isinstance(stage, PromptStagePlan):
            stage = stage_with_jury(stage, models, min_successful)
        stages.append(stage)
    return dataclasses.replace(plan, stages=tuple(stages))


def stage_with_jury(stage: PromptStagePlan, models: tuple[str, ...] | None,
                    min_successful: int | None) -> PromptStagePlan:
    """One prompt stage with a caller's jury (see `with_jury`)."""
    jury = stage.jury
    if models is None and jury is None:
        return stage
    chosen = models if models is not None else jury.models  # type: ignore[union-attr]
    reduction = jury.reduction if jury is not None else _default_reduction(stage)
    if reduction is None:
        return stage
    minimum = min_successful or (jury.min_successful if jury is not None and models is None else
                                 default_min(len(chosen)))
    if not 1 <= minimum <= len(chosen):
        raise ValueError(f"jury minimum {minimum}: give a number from 1 to the {len(chosen)} jurors")
    return dataclasses.replace(stage, jury=JuryPlan(chosen, minimum, dataclasses.replace(reduction, n=len(chosen))))


def _default_reduction(stage: PromptStagePlan) -> SamplingPlan | None:
    """The reduction of a stage's answer when the caller names the jury: the one its samples use
    (majority over its enum and boolean fields, else mean of its number fields, or its ``reduce``);
    None for an answer nothing reduces."""
    return dataclasses.replace(stage.sampling, n=1) if stage.sampling is not None else None

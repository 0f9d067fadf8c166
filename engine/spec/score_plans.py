"""A spec's named sub-scores (`scores:`) and its label result (`label:`) → `SubScorePlan`s and a
`LabelPlan`, checked at load.

Sub-score formulas are compiled in the scope after the stages (and the label, as ``label``), each
seeing the ones declared above it as ``scores.NAME``; the main score's ``let`` and formula see
them all. A spec without ``score:`` gets one implied here: the mean of its sub-scores, or (with
``label:`` and no sub-scores) the label's score. A label names a prompt stage asked once per item
and an enum field of its answer; its allowed values and its score mapping are checked against the
stage's output schema (a value outside the field's ``enum`` is a load error).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import did_you_mean
from ..core.schemas import answer_keys
from .expressions import Expression
from .models import LabelSpec, NotScorable, ScoreSpec, Spec
from .plans import LabelPlan, PromptStagePlan, ScorePlan, StagePlan, SubScorePlan
from .scope import Scope

LABEL_KEYS = frozenset({"value", "score"})
"""What ``label`` holds in the expressions after the stages: the label given and its score (None
when its mapping gives it none)."""

__all__ = ["LABEL_KEYS", "implied_score", "label_plan", "sub_score_formulas", "sub_score_plans"]


def implied_score(spec: Spec) -> ScoreSpec | None:
    """The spec's `score`, or the one its `scores` / `label` imply when it gives none: the mean of
    the sub-scores (``formula: (scores.a + scores.b) / 2``), else the label's score (written
    ``label.score``; the interpreter makes an item whose label has no score not scorable)."""
    if spec.score is not None:
        return spec.score
    if spec.scores:
        names = list(spec.scores)
        return ScoreSpec(formula=f"({' + '.join(f'scores.{name}' for name in names)}) / {len(names)}")
    if spec.label is not None:
        return ScoreSpec(formula="label.score", not_scorable=NotScorable(
            when="label.score is none", reason="The label {{ label.value }} has no score (label.scores names none)."))
    return None


def sub_score_formulas(spec: Spec, c: Any, scope: Scope) -> tuple[list[tuple[str, Expression]], Scope]:
    """Each sub-score's compiled formula in order (those that compile), and the scope after them
    (``scores`` with every declared name). `c` is the compiler (`expr`, `doc`)."""
    compiled: list[tuple[str, Expression]] = []
    declared: list[str] = []
    for name, sub in spec.scores.items():
        formula = c.expr(sub.formula, f"scores.{name}.formula", scope.with_names(scores=frozenset(declared)))
        if formula is not None:
            compiled.append((name, formula))
        declared.append(name)
    return compiled, scope.with_names(scores=frozenset(declared)) if spec.scores else scope


def sub_score_plans(spec: Spec, formulas: list[tuple[str, Expression]], score: ScorePlan,
                    default_scale: float | None, doc: Any) -> tuple[SubScorePlan, ...]:
    """The sub-scores' plans on the main score's scale, after recording in `doc` a cut-off above
    the default scale."""
    plans = []
    for name, formula in formulas:
        sub = spec.scores[name]
        if sub.cutoff is not None and default_scale is not None and sub.cutoff > default_scale:
            doc.add("invalid-value", f"scores.{name}.cutoff", f"the cut-off {sub.cutoff:g} is above the score's "
                    f"scale {default_scale:g}", f"give a cut-off within [0, {default_scale:g}]")
        plans.append(SubScorePlan(name, ScorePlan(formula, score.scale, round=sub.round),
                                  sub.direction or spec.direction, sub.cutoff, sub.description))
    return tuple(plans)


def label_plan(spec: Spec, c: Any, stages: list[StagePlan], scope: Scope) -> tuple[LabelPlan | None, Scope]:
    """The label's plan (None without ``label:`` or after recording a problem), and the scope with
    ``label`` in it."""
    label = spec.label
    if label is None:
        return None, scope
    doc, after = c.doc, scope.with_names(label=LABEL_KEYS)
    written = {stage.id: stage for stage in spec.stages or []}
    stage = written.get(label.stage)
    if stage is None or not hasattr(stage, "prompt"):
        prompts = [s.id for s in spec.stages or [] if hasattr(s, "prompt")]
        doc.add("unknown-stage", "label.stage", f"{label.stage!r} is no prompt stage of this spec",
                did_you_mean(label.stage, prompts) or f"its prompt stages: {', '.join(prompts) or 'none'}")
        return None, after
    if stage.for_each is not None:
        doc.add("invalid-value", "label.stage", f"{label.stage!r} asks once per element (for_each), so it gives no "
                "one label per item", "label a stage asked once per item")
        return None, after
    plan = next((s for s in stages if isinstance(s, PromptStagePlan) and s.id == label.stage), None)
    options = Scope({"options": scope.keys_of("options")})
    values = _values(label, stage, plan, c, options)
    scores = _scores(label, values, c, options)
    if values is None or doc.problems:
        return None, after
    return LabelPlan(label.stage, label.field, values, scores), after


def _values(label: LabelSpec, stage: Any, plan: PromptStagePlan | None, c: Any,
            options: Scope) -> tuple[str, ...] | Expression | None:
    """The allowed labels: as written (a list, or an expression over options), else the answer
    field's enum (a list, or its ``{$expr}``); None after recording a problem."""
    doc, key = c.doc, "label.values"
    enum: Any = None
    if stage.result is None:
        keys = answer_keys(stage.output_schema)
        if keys is not None and label.field not in keys:
            doc.add("unknown-key", "label.field", f"the answer of {label.stage!r} has no field {label.field!r}",
                    did_you_mean(label.field, keys) or f"its fields: {', '.join(sorted(keys))}")
            return None
        prop = (stage.output_schema.get("properties") or {}).get(label.field)
        enum = prop.get("enum") if isinstance(prop, Mapping) else None
        if isinstance(enum, Mapping) and plan is not None:  # {$expr: …}: computed per item
            enum = next((e for pointer, e in plan.schema_exprs if pointer == ("properties", label.field, "enum")),
                        None)
    if isinstance(label.values, str):
        return c.expr(label.values, key, options)
    if label.values is not None:
        if isinstance(enum, list):
            outside = [v for v in label.values if v not in enum]
            if outside:
                doc.add("invalid-label", key, f"{', '.join(map(repr, outside))} is not in the enum of "
                        f"{label.stage}.{label.field} ({', '.join(map(str, enum))})")
        return tuple(label.values)
    if isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        return tuple(enum)
    if isinstance(enum, Expression):
        return enum
    doc.add("invalid-value", "label.field", f"{label.stage}.{label.field} gives no list of labels (an enum of texts "
            "in the output schema)", "give the field an enum, or list the labels under label.values")
    return None


def _scores(label: LabelSpec, values: tuple[str, ...] | Expression | None, c: Any,
            options: Scope) -> Mapping[str, float] | Expression | None:
    """The label → share mapping (recording a label outside the allowed values), or its
    expression, or None."""
    if isinstance(label.scores, str):
        return c.expr(label.scores, "label.scores", options)
    if label.scores is None:
        return None
    if isinstance(values, tuple):
        for value in label.scores:
            if value not in values:
                c.doc.add("invalid-label", f"label.scores.{value}", f"{value!r} is not one of the labels "
                          f"({', '.join(values)})", did_you_mean(value, values))
    return dict(label.scores)

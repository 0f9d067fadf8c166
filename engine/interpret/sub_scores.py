"""Run time: an item's label (`LabelPlan`) and its named sub-scores (`SubScorePlan`), each put in
the namespace (``label``, ``scores``) for the main formula and the reason, and in the result.

A label outside its allowed values fails the item (kind ``judge``: the judge gave something the
spec does not allow); a sub-score is checked as the main score is (a number in [0, scale], never
NaN: `engine.interpret.values.score_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import ScorerRunError
from ..core.result import ScoreResult
from ..spec.plans import LabelPlan, ScorerPlan
from .values import evaluate, scale_of, score_of

__all__ = ["label_of", "ordinal_shares", "sub_scores_of"]


def ordinal_shares(values: tuple[str, ...] | list[str]) -> dict[str, float]:
    """The default label → share of the scale: the values listed best first, the first 1 and the
    last 0 in even steps (``[a, b, c]`` → 1, 0.5, 0; one value → 1)."""
    n = len(values)
    return {value: 1.0 if n == 1 else (n - 1 - i) / (n - 1) for i, value in enumerate(values)}


def label_of(plan: ScorerPlan, ns: dict[str, Any], result: ScoreResult) -> None:
    """Put the item's label in ``ns["label"]`` (``{value, score}``; both None when its stage was
    skipped) and in `result` (`label_value`; `label_probs` when the judge reported them, from the stage's record). Raises
    `ScorerRunError` for a label outside the allowed values or a mapping that is no mapping of
    shares in [0, 1]."""
    label = plan.label
    if label is None:
        return
    answer = ns.get(label.stage)
    if answer is None:
        ns["label"] = {"value": None, "score": None}
        return
    value = answer.get(label.field) if isinstance(answer, Mapping) else None
    values = _allowed(label, ns)
    if value not in values:
        raise ScorerRunError("judge", f"label: {label.stage}.{label.field} gave {value!r}, not one of the labels "
                             f"({', '.join(map(str, values))})", stage=label.stage)
    shares = _shares(label, ns, values)
    share = shares.get(value)
    ns["label"] = {"value": value, "score": None if share is None else share * scale_of(plan.score, ns)}
    result.label_value = value
    record = result.stages.get(label.stage)
    probs = getattr(record, "answer_probs", None)  # what the judge reported (no hard labels standing in)
    if isinstance(probs, Mapping) and isinstance(probs.get(label.field), Mapping):
        result.label_probs = dict(probs[label.field])


def _allowed(label: LabelPlan, ns: dict[str, Any]) -> tuple[str, ...]:
    if isinstance(label.values, tuple):
        return label.values
    values = evaluate(label.values, ns, "label.values")
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ScorerRunError("expression", f"label.values gave {values!r}, not a list of texts")
    return tuple(values)


def _shares(label: LabelPlan, ns: dict[str, Any], values: tuple[str, ...]) -> Mapping[str, float]:
    if label.scores is None:
        return ordinal_shares(values)
    shares = label.scores if isinstance(label.scores, Mapping) else evaluate(label.scores, ns, "label.scores")
    if not shares:
        return ordinal_shares(values)
    if not isinstance(shares, Mapping) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in shares.values()):
        raise ScorerRunError("expression", f"label.scores gave {shares!r}, not a mapping of labels to shares in [0, 1]")
    return shares


def sub_scores_of(plan: ScorerPlan, ns: dict[str, Any], result: ScoreResult) -> None:
    """Each sub-score in order into ``ns["scores"]`` (a later one reads the earlier ones) and
    `result.scores`. Raises `ScorerRunError` (kind ``formula``) for a value that is no number in
    [0, scale]."""
    if not plan.scores:
        return
    scores: dict[str, float] = {}
    ns["scores"] = scores
    for sub in plan.scores:
        scores[sub.name] = score_of(sub.score, ns, f"scores.{sub.name}.formula")
    result.scores = dict(scores)

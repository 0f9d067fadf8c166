"""Scores as ``gen_ai.evaluation.result`` events (the GenAI semantic conventions), one per result.

An `Evaluation` carries the judged span's ids (hex) and the event's attributes:
``gen_ai.evaluation.name`` (the scorer's label), ``gen_ai.evaluation.score.value`` (the score),
``gen_ai.evaluation.score.label`` (``pass`` / ``fail`` when a cut-off applies, else absent),
``gen_ai.evaluation.explanation`` (the reason) and, for a result with no score, ``error.type``
(its error kind, or ``not_scorable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EVENT_NAME = "gen_ai.evaluation.result"


@dataclass(frozen=True)
class Evaluation:
    """One result as an evaluation event: the judged span (trace id: 32 hex digits, span id: 16),
    the item's id, the scorer's label (`name`), the score (None when it got none), ``pass`` /
    ``fail`` (`label`, None without a cut-off), the reason, and the error type of a result
    without a score."""

    trace_id: str
    span_id: str
    item_id: str
    name: str
    score: float | None
    label: str | None
    explanation: str | None
    error_type: str | None

    def attributes(self) -> dict[str, Any]:
        """The event's attributes (absent ones left out)."""
        values: dict[str, Any] = {"gen_ai.evaluation.name": self.name}
        if self.score is not None:
            values["gen_ai.evaluation.score.value"] = self.score
        if self.label is not None:
            values["gen_ai.evaluation.score.label"] = self.label
        if self.explanation:
            values["gen_ai.evaluation.explanation"] = self.explanation
        if self.error_type is not None:
            values["error.type"] = self.error_type
        return values


def evaluation_of(line: Mapping[str, Any], item: Mapping[str, Any] | None, passed: bool | None) -> Evaluation | None:
    """The evaluation of one result line (``{"id", "label", "score", "reason", "error",
    "notScorable", …}``, as the out file and the store hold it) on `item` (which names its
    judged span: ``trace_id``, ``span_id``); `passed`: whether it met its cut-off (None: no
    cut-off applies). None for an item that names no span (not read from traces)."""
    item = item or {}
    trace_id, span_id = item.get("trace_id"), item.get("span_id")
    if not isinstance(trace_id, str) or not isinstance(span_id, str) or not trace_id or not span_id:
        return None
    error = line.get("error")
    score = line.get("score")
    if error:
        error_type: str | None = str(error.get("kind") or "internal") if isinstance(error, Mapping) else "internal"
    elif line.get("notScorable") or score is None:
        error_type = "not_scorable"
    else:
        error_type = None
    explanation = line.get("reason")
    if error_type is not None and not explanation:
        explanation = (error.get("message") if isinstance(error, Mapping) else None) or line.get("notScorable")
    return Evaluation(trace_id, span_id, str(line.get("id")), str(line.get("label") or line.get("scorer")),
                      float(score) if error_type is None else None,
                      None if passed is None or error_type is not None else ("pass" if passed else "fail"),
                      explanation if isinstance(explanation, str) else None, error_type)


__all__ = ["EVENT_NAME", "Evaluation", "evaluation_of"]

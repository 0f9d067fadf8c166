"""The items where a scorer and its human labels differ most (`calibrate`'s disagreements), with
the judge's reasons, to guide the next prompt edit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .labelled import matches

__all__ = ["Disagreement", "disagreements"]


@dataclass
class Disagreement:
    """One item where the scorer and the label differ: `gap` in [0, 1] (0 = agree)."""

    id: Any
    label: Any
    score: float | None
    gap: float
    reason: str | None


def disagreements(kept: list[tuple[str, dict[str, Any]]], scores: list[float], truth: list[Any],
                   positive: set[str] | None, scale: float, top: int) -> list[Disagreement]:
    """The `top` (key, result) pairs of `kept` whose score (on a 0–1 scale: divided by `scale`)
    is farthest from its label (`truth`: 1 for a `positive` label, 0 else; graded labels rescaled
    to 0–1), largest gap first; pairs that agree (gap 0) are left out."""
    if not kept or top <= 0:
        return []
    if positive is not None:
        targets = [1.0 if matches(label, positive) else 0.0 for label in truth]
    else:
        numbers = [float(label) for label in truth]
        low, high = min(numbers), max(numbers)
        targets = [(n - low) / (high - low) if high > low else 0.5 for n in numbers]
    rows = []
    for (key, result), score, target, label in zip(kept, scores, targets, truth):
        gap = abs(min(max(score / scale, 0.0), 1.0) - target)
        rows.append(Disagreement(id=result.get("id", key), label=label, score=score, gap=round(gap, 4),
                                 reason=result.get("reason")))
    rows.sort(key=lambda d: -d.gap)
    return [row for row in rows[:top] if row.gap > 0]

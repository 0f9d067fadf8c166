"""Which way a score is better: the one place that decides it.

A scorer's scores are better either higher (``higher_is_better``: faithfulness, similarity) or
lower (``lower_is_better``: an error rate, a distance). Everything that ranks or gates single
scores — item cut-offs, the worst items of a summary — asks `better`, never ``<`` directly.

Until specs declare a direction, `direction_of` answers ``higher_is_better`` for every scorer
unless its plan carries a ``direction`` attribute.
"""

from __future__ import annotations

from typing import Any

HIGHER_IS_BETTER = "higher_is_better"
LOWER_IS_BETTER = "lower_is_better"
DIRECTIONS = (HIGHER_IS_BETTER, LOWER_IS_BETTER)


def check_direction(direction: str) -> str:
    """`direction` itself when it is one of `DIRECTIONS`; raises `ValueError` naming both otherwise."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected {HIGHER_IS_BETTER} or {LOWER_IS_BETTER}")
    return direction


def better(a: float, b: float, direction: str = HIGHER_IS_BETTER) -> bool:
    """True when score `a` is strictly better than score `b` (equal scores: False).
    Raises `ValueError` for an unknown direction."""
    if check_direction(direction) == HIGHER_IS_BETTER:
        return a > b
    return a < b


def worst_first_key(score: float, direction: str = HIGHER_IS_BETTER) -> float:
    """A sort key putting the worst scores first (ascending order)."""
    return score if check_direction(direction) == HIGHER_IS_BETTER else -score


def direction_of(scorer: Any) -> str:
    """A scorer's direction: its plan's ``direction`` when it has one, else ``higher_is_better``."""
    plan = getattr(scorer, "plan", None)
    declared = getattr(plan, "direction", None) or getattr(scorer, "direction", None)
    return check_direction(str(declared)) if declared else HIGHER_IS_BETTER


__all__ = ["HIGHER_IS_BETTER", "LOWER_IS_BETTER", "DIRECTIONS", "better", "check_direction", "direction_of",
           "worst_first_key"]

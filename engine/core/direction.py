"""Which way a score is better: the one place that decides it.

A scorer's scores are better either higher (``higher_is_better``: faithfulness, similarity) or
lower (``lower_is_better``: hallucination, toxicity, an error rate). A spec declares it
(``direction:``, default ``higher_is_better``); the compiled `engine.spec.plans.ScorerPlan` carries
it. Everything that ranks or gates scores asks this module, never ``<`` directly: summaries,
``eval --threshold LABEL=limit`` ("at least as good as limit"), item cut-offs, and ``scorespec
compare`` (wins, losses, "better", "worse", ``--fail-if-worse``).
"""

from __future__ import annotations

from typing import Any, Literal

Direction = Literal["higher_is_better", "lower_is_better"]

HIGHER_IS_BETTER: Direction = "higher_is_better"
LOWER_IS_BETTER: Direction = "lower_is_better"
DIRECTIONS: tuple[Direction, ...] = (HIGHER_IS_BETTER, LOWER_IS_BETTER)


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


def sign(direction: str) -> int:
    """+1 when higher scores are better, -1 when lower ones are: ``sign × (b − a) > 0`` means b
    is better than a. Raises `ValueError` for an unknown direction."""
    return 1 if check_direction(direction) == HIGHER_IS_BETTER else -1


def direction_of(scorer: Any) -> str:
    """A scorer's direction: its plan's ``direction`` when it has one, else ``higher_is_better``."""
    plan = getattr(scorer, "plan", None)
    declared = getattr(plan, "direction", None) or getattr(scorer, "direction", None)
    return check_direction(str(declared)) if declared else HIGHER_IS_BETTER


def short(direction: str) -> str:
    """``higher`` or ``lower`` (for table columns headed "better")."""
    return "lower" if direction == LOWER_IS_BETTER else "higher"


def words(direction: str) -> str:
    """``higher is better`` or ``lower is better``."""
    return f"{short(direction)} is better"


__all__ = ["HIGHER_IS_BETTER", "LOWER_IS_BETTER", "DIRECTIONS", "Direction", "better", "check_direction", "direction_of",
           "sign", "short", "words", "worst_first_key"]

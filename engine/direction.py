"""Which way a score is better: ``higher_is_better`` (the default: faithfulness, similarity) or
``lower_is_better`` (hallucination, toxicity, bias).

A spec declares it (``direction:``); the compiled `engine.plans.ScorerPlan` carries it, and
everything that calls one score better than another follows it: summaries, ``eval
--threshold LABEL=limit`` ("at least as good as limit"), and ``scorespec compare`` (wins,
losses, "better", "worse", ``--fail-if-worse``).
"""

from __future__ import annotations

from typing import Any, Literal

Direction = Literal["higher_is_better", "lower_is_better"]

HIGHER: Direction = "higher_is_better"
LOWER: Direction = "lower_is_better"
DIRECTIONS: tuple[Direction, ...] = (HIGHER, LOWER)


def check_direction(value: Any) -> Direction:
    """`value` when it is a direction; raises `ValueError` naming the two accepted values."""
    if value not in DIRECTIONS:
        raise ValueError(f"direction {value!r}: expected {HIGHER} or {LOWER}")
    return value


def sign(direction: Direction) -> int:
    """+1 when higher scores are better, -1 when lower ones are: ``sign × (b − a) > 0`` means b
    is better than a."""
    return -1 if direction == LOWER else 1


def direction_of(scorer: Any) -> Direction:
    """A scorer's direction: its plan's (`engine.scorer.Scorer.plan`), else `HIGHER` (a scorer
    object without a plan, or a plan compiled before directions existed)."""
    plan = getattr(scorer, "plan", None)
    found = getattr(plan, "direction", None)
    return found if found in DIRECTIONS else HIGHER


def short(direction: Direction) -> str:
    """``higher`` or ``lower`` (for table columns headed "better")."""
    return "lower" if direction == LOWER else "higher"


def words(direction: Direction) -> str:
    """``higher is better`` or ``lower is better``."""
    return f"{short(direction)} is better"


__all__ = ["Direction", "HIGHER", "LOWER", "DIRECTIONS", "check_direction", "sign", "direction_of", "short", "words"]

"""The interpreter's checks on the values a spec computes: expressions and templates run with
their failures named, a stage's result checked to be JSON data, and the score's formula and
scale checked, bounded and rounded.

Every failure is a `ScorerRunError`: kind ``expression`` for an expression, a template or a
stage result that is not JSON data, ``formula`` for a score or scale that is not a number in range.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.errors import ErrorKind, ScorerRunError
from ..spec.expressions import decimal_half_away
from ..spec.plans import ScorePlan

SCALE_TOLERANCE = 1e-9
"""How far outside [0, scale] a formula's value may lie and still be clamped into it."""

__all__ = ["SCALE_TOLERANCE", "evaluate", "json_problem", "render", "require_json", "round_half_away", "scale_of",
           "score_of"]


def evaluate(expression: Any, ns: dict[str, Any], where: str, *, overflow: ErrorKind = "expression") -> Any:
    """`expression(ns)`; raises `ScorerRunError` (kind ``expression``; an `OverflowError` of kind
    `overflow`, ``formula`` for the score's) naming `where` (e.g. ``analyze.result``) and the
    expression's source when it raises (a `ScorerRunError` it raises passes as is). The error's
    stage is `where`'s first part when `ns` holds that name."""
    try:
        return expression(ns)
    except ScorerRunError:
        raise
    except Exception as exc:
        kind: ErrorKind = overflow if isinstance(exc, OverflowError) else "expression"
        raise ScorerRunError(kind, f"{where}: {expression.source!r} raised {type(exc).__name__}: {exc}",
                             stage=where.split(".")[0] if where.split(".")[0] in ns else None) from None


def render(template: Any, ns: dict[str, Any], where: str) -> str:
    """`template` rendered over `ns`; raises `ScorerRunError` (kind ``expression``) naming `where`."""
    try:
        return template.render(ns)
    except Exception as exc:
        raise ScorerRunError("expression", f"{where}: rendering failed: {type(exc).__name__}: {exc}") from None


def round_half_away(value: float, places: int) -> float:
    """`value` rounded half away from zero to `places` decimals as the decimal the formula means:
    float noise beyond `MEANT_DIGITS` significant digits removed first, so 0.22499999999999998
    (0.225 computed) → 0.23; 0.575 → 0.58, 0.125 → 0.13, -0.125 → -0.13 (the reference's
    rounding; Python's `round` gives 0.22, 0.57 and 0.12). See `decimal_half_away`."""
    return float(decimal_half_away(value, places))


def scale_of(score: ScorePlan, ns: dict[str, Any]) -> float:
    """The score's upper bound for this item: `score.scale` over `ns`, a positive finite number;
    else raises `ScorerRunError` (kind ``formula``)."""
    given, scale = _number(score.scale, ns, "score.scale")
    if scale is None or not math.isfinite(scale) or scale <= 0:
        raise ScorerRunError("formula", f"score.scale {score.scale.source!r} gave {_shown(given)}, "
                             "not a positive finite number")
    return scale


def score_of(score: ScorePlan, ns: dict[str, Any], where: str = "score.formula") -> float:
    """The item's score (or a sub-score's, its formula at `where`): `score.formula` over `ns`, in
    [0, scale] (values within `SCALE_TOLERANCE` outside it are clamped), rounded half away from
    zero to `score.round` places when set. Raises `ScorerRunError` (kind ``formula``) for a value
    that is no number or lies outside [0, scale]."""
    formula = score.formula
    given, value = _number(formula, ns, where)
    if value is None:
        raise ScorerRunError("formula", f"{where} {formula.source!r} gave {_shown(given)}, not a number")
    scale = scale_of(score, ns)
    if not math.isfinite(value) or value < -SCALE_TOLERANCE or value > scale + SCALE_TOLERANCE:
        raise ScorerRunError("formula", f"{where} {formula.source!r} gave {value!r}, outside [0, {scale:g}]")
    value = min(max(value, 0.0), scale)
    places = score.round
    value = round_half_away(value, places) if places is not None else value
    return value + 0.0  # -0.0 (a formula's 0 * -1, or a negative value rounded to 0) is 0.0


def _number(expression: Any, ns: dict[str, Any], where: str) -> tuple[Any, float | None]:
    """`expression` over `ns` (`evaluate`, an overflow of kind ``formula``): its value, and that
    value as a float (None for a value that is no number; a boolean is none). Raises
    `ScorerRunError` (kind ``formula``) naming `where` and the expression for an integer too large
    for a float (``10**400``)."""
    value = evaluate(expression, ns, where, overflow="formula")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value, None
    try:
        return value, float(value)
    except OverflowError:
        digits = int(value.bit_length() * 0.30103) + 1
        raise ScorerRunError("formula", f"{where} {expression.source!r} gave an integer of about {digits:,} "
                             "digits, too large for a score (a float holds at most about 1.8e308)") from None


def _shown(value: Any) -> str:
    """`value` in a message, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_JSON_SCALARS = frozenset({bool, int, float, str})


def json_problem(value: Any, path: str = "") -> str | None:
    """Where `value` stops being JSON data (null, booleans, numbers, text, lists, objects with
    text keys), as ``"<type> at <path>"``; None when it is JSON data throughout."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if item is None or type(item) in _JSON_SCALARS:  # most items: no path built for them
                continue
            found = json_problem(item, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a {type(key).__name__} key at {path or 'the top'}"
            if item is None or type(item) in _JSON_SCALARS:
                continue
            found = json_problem(item, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    return f"a {type(value).__name__} at {path or 'the top'}"


def require_json(value: Any, stage: str) -> None:
    """Raise `ScorerRunError` (kind ``expression``) when a stage's result is not JSON data: it
    is written to results, so one such value would otherwise stop a whole eval at writing."""
    problem = json_problem(value)
    if problem:
        raise ScorerRunError("expression", f"{stage}: the stage's result is not JSON data ({problem}); make it "
                             "numbers, texts, lists and objects (a dict method such as answer.items is not a key: "
                             "write answer['items'])", stage=stage)

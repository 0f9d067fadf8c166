"""The run fields: what one item gives a scorer, declared once.

Every item may give `input`, `output`, `ground_truth` and `context`; expressions read them as
``run.input`` … and ``run.given`` (the fields the item actually has). A field the item does not
give reads as empty (``""``, or ``[]`` for context).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

RunField = Literal["input", "output", "ground_truth", "context"]
RUN_FIELDS: tuple[RunField, ...] = ("input", "output", "ground_truth", "context")
RUN_NAMES: frozenset[str] = frozenset(RUN_FIELDS) | {"given"}
"""The keys of `run` in expressions."""


def coerce_context(value: Any) -> list[str]:
    """Context as a list of passages: None → [], a text → [text], a list → its items as text
    (None items → "")."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return ["" if v is None else str(v) for v in value]
    return [str(value)]


def run_namespace(values: Mapping[str, Any]) -> dict[str, Any]:
    """`run` as expressions see it, from the given fields (name → value; None = not given)."""
    given = sorted(name for name in RUN_FIELDS if values.get(name) is not None)
    run: dict[str, Any] = {name: "" if values.get(name) is None else values[name] for name in RUN_FIELDS}
    run["context"] = coerce_context(values.get("context"))
    run["given"] = given
    return run


__all__ = ["RUN_FIELDS", "RUN_NAMES", "RunField", "coerce_context", "run_namespace"]

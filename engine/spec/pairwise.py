"""A prompt stage's ``pairwise`` block, checked at load against the stage and its output schema.

A pairwise stage shows the judge an item's two responses (``output_a``, ``output_b``) in
positions and maps the winning *position* its answer names back to a response
(`engine.interpret.pairwise`). At load:

- the answer's winner field (``winner`` unless the block names another) is a top-level string
  property whose enum holds ``A`` and ``B``, and at most ``tie`` besides;
- the stage has no ``for_each``, ``samples``, ``probabilities``, ``pages`` or ``result`` (each order
  is one question, whose answer the stage keeps whole);
- a spec has at most one pairwise stage (the item's `pairwise` outcome is that stage's).

The prompt reads `PAIR_KEYS` under ``pair``; the stage's result has the keys `RESULT_KEYS`.
Problems are recorded in the spec's `Document` at the key that wrote them.
"""

from __future__ import annotations

from typing import Any

from .document import Document
from .models import PromptStage
from .plans import PairwisePlan

__all__ = ["PAIR_KEYS", "POSITIONS", "RESULT_KEYS", "one_pairwise_stage", "pairwise_of"]

PAIR_KEYS = frozenset({"first", "second", "order"})
"""What a pairwise stage's prompt reads as ``pair.KEY``: the response shown first, the one shown
second (texts) and the order (``AB``: output_a first; ``BA``: output_b first)."""
RESULT_KEYS = frozenset({"winner", "consistent", "orders"})
"""The keys of a pairwise stage's result."""
POSITIONS = ("A", "B", "tie")
"""What the winner field may say: the first position, the second, or neither."""

_NOT_WITH = ("for_each", "samples", "probabilities", "pages", "result", "collect")


def pairwise_of(stage: PromptStage, key: str, doc: Document, schema: dict[str, Any]) -> PairwisePlan | None:
    """The stage's `PairwisePlan` (None for a stage without ``pairwise``, and after a problem)."""
    block = stage.pairwise
    if block is None:
        return None
    ok = True
    for name in _NOT_WITH:
        value = getattr(stage, name)
        if value not in (None, False, [], 1):
            doc.add("invalid-value", f"{key}.{name}", f"a pairwise stage has no {name}: each order is one question "
                    "whose answer the stage keeps", f"remove {name}, or judge the pair in a stage of its own")
            ok = False
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    winner = props.get(block.winner)
    enum = winner.get("enum") if isinstance(winner, dict) else None
    if not isinstance(enum, list) or not {"A", "B"} <= set(enum) or not set(enum) <= set(POSITIONS):
        doc.add("invalid-value", f"{key}.pairwise.winner",
                f"the answer's {block.winner!r} must be a top-level property with enum [A, B] or [A, B, tie]",
                'e.g. winner: {type: string, enum: ["A", "B", "tie"]} under output_schema.properties')
        ok = False
    elif block.winner not in (schema.get("required") or ()):
        doc.add("invalid-value", f"{key}.output_schema.required", f"the winner field {block.winner!r} must be "
                "required", f"add {block.winner} to output_schema.required")
        ok = False
    return PairwisePlan(order=block.order, field=block.winner) if ok else None


def one_pairwise_stage(stages: list[Any], doc: Document) -> None:
    """A problem for every pairwise stage after a spec's first (`stages`: its `PromptStage`s and
    rule stages, in order)."""
    seen = False
    for i, stage in enumerate(stages):
        if isinstance(stage, PromptStage) and stage.pairwise is not None:
            if seen:
                doc.add("invalid-value", f"stages[{i}].pairwise", "a spec has at most one pairwise stage",
                        "judge the pair once; later stages read its result")
            seen = True

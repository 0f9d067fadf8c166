"""The optimiser of the ``instructions`` strategy: the engine-owned meta-spec
``align_instructions`` (in `specs/`: its prompt and answer schema are data, like any scorer's; it
resolves by id, renders with ``scorespec render``, and is never listed as a scorer), run by the
engine over the train disagreements.

Each proposal reads the stage's current instructions and its own seeded sample of the train
items the judge got most wrong (the item's fields as text, the judge's answer and reason, what the
people decided) and answers ``{diagnosis, instructions}``; only the instruction text is used.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spec.catalog import engine_specs_dir

__all__ = ["OPTIMIZER_ID", "Disagreement", "item_text", "optimizer_spec", "proposal_items"]

OPTIMIZER_ID = "align_instructions"
_FIELD_LIMIT = 1500


def optimizer_spec() -> Path:
    """The optimiser meta-spec's file."""
    return engine_specs_dir() / f"{OPTIMIZER_ID}.yaml"


@dataclass(frozen=True)
class Disagreement:
    """A train item the judge got wrong: the item, what people decided (`label`, in words), the
    judge's answer (JSON text) and reason, and `gap` in [0, 1] between score and label."""

    item: Mapping[str, Any]
    label: str
    answer: str
    reason: str | None
    gap: float


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _FIELD_LIMIT else text[:_FIELD_LIMIT] + " …"


def item_text(item: Mapping[str, Any]) -> str:
    """An item's fields as the optimiser reads them: ``Input:``, ``Context:`` (passages), ``Ground
    truth:``, ``Output:`` and any field the scorer declares, each cut at 1,500 characters."""
    parts = []
    for name, title in (("input", "Input"), ("context", "Context"), ("ground_truth", "Ground truth")):
        value = item.get(name)
        if value:
            if name == "context" and isinstance(value, list):
                value = "\n".join(f"- {_cut(p)}" for p in value)
            parts.append(f"{title}: {_cut(value)}")
    parts.append(f"Output: {_cut(item.get('output') or '')}")
    skip = {"id", "input", "output", "context", "ground_truth", "system", "tool_calls", "label", "metadata"}
    for name, value in item.items():
        if name not in skip and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            parts.append(f"{name}: {_cut(value)}")
    return "\n".join(parts)


def proposal_items(instructions: str, disagreements: Sequence[Disagreement], proposals: int, per_proposal: int,
                   seed: int) -> list[dict[str, Any]]:
    """The optimiser's items, one per proposal: ``{id, instructions, disagreements}``. Proposal 0
    reads the largest disagreements; each later one a seeded sample of the rest mixed with them,
    so the proposals differ."""
    ranked = sorted(disagreements, key=lambda d: -d.gap)
    rng = random.Random(seed)
    items = []
    for k in range(proposals):
        if k == 0 or len(ranked) <= per_proposal:
            chosen = ranked[:per_proposal]
        else:
            chosen = sorted(rng.sample(ranked, per_proposal), key=lambda d: -d.gap)
        rows = [{"item": item_text(d.item), "answer": d.answer, "reason": d.reason, "label": d.label}
                for d in chosen]
        items.append({"id": f"proposal-{k + 1}", "output": "", "instructions": instructions, "disagreements": rows})
    return items

"""A pairwise scorer's agreement with human preference labels (``calibrate`` on pairwise items).

Each labelled item's human label says which response is better: ``A`` (output_a), ``B``
(output_b) or ``tie`` (read without regard to case or surrounding spaces; any other label is left
out and counted). The judge's side is the item's pairwise outcome (`engine.core.result.PairOutcome`:
its ``winner``, a tie when the two orders disagreed). Over the items with both:

- ``accuracyWithoutTies``: among the items where neither the human nor the judge said tie, the
  share where they chose the same response (``decided`` such items; the convention of MT-Bench's
  agreement "without tie");
- ``accuracy``: the share of all items where the two agree, tie included;
- ``cohenKappa``: Cohen's kappa over the three classes (scikit-learn's ``cohen_kappa_score``), None
  when it is undefined (a single class on both sides);
- ``positionConsistency``: the share of the items asked in both orders whose orders agreed;
- ``confusion``: human label → judge's winner → items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = ["CLASSES", "human_preference", "pairwise_agreement"]

CLASSES = ("A", "B", "tie")


def human_preference(label: Any) -> str | None:
    """A human label as ``A``, ``B`` or ``tie`` (any case, spaces around ignored); None otherwise."""
    text = str(label).strip().casefold() if label is not None else ""
    return next((name for name in CLASSES if name.casefold() == text), None)


def pairwise_agreement(kept: Iterable[tuple[str, dict[str, Any]]], labels: Iterable[Any]) -> dict[str, Any]:
    """The figures of the module over `kept` (item key, result line) and their human `labels`, in
    the same order."""
    pairs, other, consistent, both = [], 0, 0, 0
    for (_key, line), label in zip(kept, labels):
        outcome = line.get("pairwise") if isinstance(line.get("pairwise"), dict) else None
        human = human_preference(label)
        if outcome is None or human is None or outcome.get("winner") not in CLASSES:
            other += 1
            continue
        pairs.append((human, outcome["winner"]))
        if isinstance(outcome.get("consistent"), bool):
            both += 1
            consistent += outcome["consistent"]
    decided = [(h, j) for h, j in pairs if h != "tie" and j != "tie"]
    kappa = None
    if pairs:
        from sklearn.metrics import cohen_kappa_score

        value = float(cohen_kappa_score([h for h, _ in pairs], [j for _, j in pairs], labels=list(CLASSES)))
        kappa = value if math.isfinite(value) else None
    confusion = {h: {j: sum(1 for p in pairs if p == (h, j)) for j in CLASSES} for h in CLASSES}
    return {
        "items": len(pairs), "leftOut": other, "decided": len(decided),
        "accuracyWithoutTies": sum(h == j for h, j in decided) / len(decided) if decided else None,
        "accuracy": sum(h == j for h, j in pairs) / len(pairs) if pairs else None,
        "cohenKappa": kappa, "positionConsistency": consistent / both if both else None, "bothOrders": both,
        "confusion": confusion,
    }

"""Each juror's agreement with the human labels, beside the jury's (``calibrate`` on a jury).

A result a jury gave keeps each juror's own score (`engine.core.result.JurorTotals.score`: the
spec's formula over that juror's answers). `juror_figures` computes, per juror, the headline
figures `engine.analysis.calibration.agreement` gives for the jury — binary labels: accuracy,
balanced accuracy and Cohen's kappa at the same cut-off, ROC AUC; graded labels: Spearman's
correlation — over the items of the calibration where that juror has a score, so a panel can be
compared with each of its members on the same labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["juror_figures"]

_BINARY = ("accuracy", "balanced_accuracy", "roc_auc")


def juror_figures(kept: Sequence[tuple[str, dict[str, Any]]], truth: Sequence[Any], binary: bool,
                  measure: Callable[[list[float], list[Any]], dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Juror model → ``{"items", "accuracy", "balancedAccuracy", "cohenKappa", "rocAuc"}`` (`binary`
    labels) or ``{"items", "spearman"}`` (graded), over the `kept` results (item key, result JSON)
    and their labels `truth` (in the same order) where the juror has a score; None when no result
    has jurors. ``measure(scores, labels)`` is the calibration's `agreement` at its settings. A
    figure that is undefined on the juror's items is None."""
    pairs: dict[str, tuple[list[float], list[Any]]] = {}
    for (_, result), label in zip(kept, truth):
        for model, total in (result.get("jurors") or {}).items():
            score = total.get("score") if isinstance(total, dict) else None
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                scores, labels = pairs.setdefault(model, ([], []))
                scores.append(float(score))
                labels.append(label)
    if not pairs:
        return None
    out: dict[str, dict[str, Any]] = {}
    for model, (scores, labels) in pairs.items():
        stats = measure(scores, labels)
        if not binary:
            figures = {"spearman": stats.get("spearman")}
        else:
            kappa = stats.get("cohen_kappa")
            figures = {**{_camel(name): stats.get(name) for name in _BINARY},
                       "cohenKappa": getattr(kappa, "value", kappa)}
        out[model] = {"items": len(scores), **figures}
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)

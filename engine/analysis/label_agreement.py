"""Two versions of a scorer against the same human labels, for ``scorespec compare``.

`label_comparison` keeps the paired items with a usable label and gives a `LabelComparison`: each
version's `Agreement` (`engine.analysis.calibration.agreement`: balanced accuracy, accuracy and
ROC AUC for binary labels; Spearman and Pearson for graded ones) and, for binary labels, McNemar's
exact test on the two versions' decisions at the cut-off (`engine.analysis.compare_stats.mcnemar`).
The terminal, the JSON and the HTML report read the same figures from it.

May import `engine.analysis.calibration` and `engine.analysis.compare_stats` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .compare_stats import McNemar, mcnemar, p_text

__all__ = ["Agreement", "HumanLabels", "LabelComparison", "as_label_set", "label_comparison"]


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p.title() for p in rest)


@dataclass(frozen=True)
class Agreement:
    """One version's agreement with the human labels (`engine.analysis.calibration.agreement`)."""

    balanced_accuracy: float | None = None
    accuracy: float | None = None
    roc_auc: float | None = None
    confusion: dict[str, int] | None = None
    spearman: float | None = None
    pearson: float | None = None
    notes: tuple[str, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        return {_camel(k): (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class LabelComparison:
    """Both versions' agreement with the human labels on the same `n` items (both scored, with a
    usable label). kind: ``binary`` (with McNemar's test at `cutoff`) or ``graded``."""

    kind: str
    n: int
    cutoff: float | None
    baseline: Agreement
    version: Agreement
    mcnemar: McNemar | None = None
    left_out: int = 0  # paired items without a usable label

    def rows(self) -> list[tuple[str, float | None, float | None]]:
        """(figure, the baseline's value, the version's) for the figures of this `kind`, in the
        order the terminal and the HTML report show them."""
        names = ([("balanced accuracy", "balanced_accuracy"), ("accuracy", "accuracy"), ("ROC AUC", "roc_auc")]
                 if self.kind == "binary" else [("Spearman", "spearman"), ("Pearson", "pearson")])
        return [(title, getattr(self.baseline, key), getattr(self.version, key)) for title, key in names]

    def headline(self, fmt: Any) -> str:
        """``human labels (binary) on N item(s) both scored, decision: score ≥ C; K … left out``,
        numbers written with `fmt`."""
        head = f"human labels ({self.kind}) on {self.n} item(s) both scored"
        if self.cutoff is not None:
            head += f", decision: score ≥ {fmt(self.cutoff)}"
        if self.left_out:
            head += f"; {self.left_out} without a usable label left out"
        return head

    def test_line(self, baseline: str, version: str) -> str | None:
        """McNemar's exact test in words (None for graded labels)."""
        test = self.mcnemar
        if test is None:
            return None
        result = p_text(test.p_value) if test.p_value is not None else test.note
        return (f"McNemar (exact): {test.baseline_only} item(s) only {baseline} decided right, "
                f"{test.version_only} only {version} · {result}")

    def notes(self) -> list[str]:
        return list(dict.fromkeys((*self.baseline.notes, *self.version.notes)))

    def to_json_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "cutoff": self.cutoff, "leftOut": self.left_out,
                "baseline": self.baseline.to_json_dict(), "version": self.version.to_json_dict(),
                "mcnemar": self.mcnemar.to_json_dict() if self.mcnemar is not None else None}


@dataclass(frozen=True)
class HumanLabels:
    """The human labels a comparison is checked against: label value by item key; `positive`
    (label values of the class that should score high; None: graded numeric labels), `negative`
    (only these values are the other class; None: every other value) and the score `cutoff`
    (None: half the baseline's scale)."""

    values: Mapping[str, Any]
    positive: frozenset[str] | None = None
    negative: frozenset[str] | None = None
    cutoff: float | None = None


def label_comparison(pairs: Sequence[str], a: Sequence[float], b: Sequence[float], labels: HumanLabels,
                      cutoff: float) -> LabelComparison:
    """Both versions' agreement on the paired items (`pairs`, with scores `a` of the baseline and
    `b` of the version) that have a usable label in `labels`; binary labels are decided at
    `cutoff`."""
    from .calibration import agreement

    kept = []
    for key, score_a, score_b in zip(pairs, a, b):
        value = labels.values.get(key)
        if value is None:
            continue
        if labels.negative is not None and str(value) not in labels.negative and str(value) not in (
                labels.positive or frozenset()):
            continue
        kept.append((value, score_a, score_b))
    binary = labels.positive is not None
    values = [str(v) if binary else v for v, _, _ in kept]  # binary labels compare as text
    figures = []
    for side in (1, 2):
        scores = [entry[side] for entry in kept]
        found = agreement(scores, values, positive=labels.positive, threshold=cutoff)
        notes = tuple(found.pop("notes"))
        figures.append(Agreement(**{k: v for k, v in found.items() if k in Agreement.__dataclass_fields__}, notes=notes))
    test = None
    if labels.positive is not None:
        truth = [v in labels.positive for v in values]
        right_a = [(s >= cutoff) == t for (_, s, _), t in zip(kept, truth)]
        right_b = [(s >= cutoff) == t for (_, _, s), t in zip(kept, truth)]
        test = mcnemar(right_a, right_b)
    return LabelComparison("binary" if labels.positive is not None else "graded", len(kept),
                           cutoff if labels.positive is not None else None, figures[0], figures[1], test,
                           left_out=len(pairs) - len(kept))


def as_label_set(values: Iterable[Any] | None) -> frozenset[str] | None:
    """Label values compared as text (as `engine.analysis.calibration` does), or None."""
    return None if values is None else frozenset(str(v) for v in values)


"""`calibrate` on a label result (a spec's ``label:``) against gold labels of any number of classes.

Each item's label (the result's ``labelValue``, kept also when its label has no score) is compared
with its gold label, both as text:

- the **confusion matrix**, rows the gold classes and columns the judge's, in `classes` order (the
  spec's labels as the run gave them, then any other gold label in order of first appearance);
- per class, **precision** (of the items the judge gave the class, the share whose gold label it
  is) and **recall** (of the items whose gold label it is, the share the judge gave it), each None
  when its denominator is 0, and the class's **F1** (their harmonic mean; 0 when both are 0);
- **accuracy** (the share of items on the diagonal) and **macro F1** (the mean F1 over the classes
  with a gold item or a prediction);
- **Cohen's kappa**, κ = (p_o − p_e) / (1 − p_e): p_o the accuracy, p_e the agreement the two
  raters' class shares give by chance, Σ_k (gold share of k) × (judge's share of k). Source: J. Cohen,
  "A coefficient of agreement for nominal scales", Educational and Psychological Measurement 20(1),
  1960, 37–46; computed by scikit-learn's `cohen_kappa_score`. None when p_e = 1 (both raters give one
  class only).

Figures come from scikit-learn (`confusion_matrix`, `precision_recall_fscore_support`,
`cohen_kappa_score`), imported when first used; never NaN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LabelFigures", "classes_of", "label_figures", "labels_into", "sub_score_line", "sub_score_lines",
           "sub_score_settings"]


@dataclass
class LabelFigures:
    """The figures of a label result against gold labels; see the module docstring. confusion:
    ``confusion[i][j]`` items of gold class ``classes[i]`` the judge labelled ``classes[j]``;
    per_class: class → ``{precision, recall, f1, support}`` (support: its gold items)."""

    classes: list[str]
    confusion: list[list[int]]
    per_class: dict[str, dict[str, Any]] = field(default_factory=dict)
    accuracy: float | None = None
    macro_f1: float | None = None
    cohen_kappa: float | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"classes": list(self.classes), "confusion": [list(row) for row in self.confusion],
                "perClass": {k: dict(v) for k, v in self.per_class.items()}, "accuracy": self.accuracy,
                "macroF1": self.macro_f1, "cohenKappa": self.cohen_kappa}


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def label_figures(gold: Sequence[str], predicted: Sequence[str], classes: Sequence[str] = ()) -> LabelFigures:
    """The figures of `predicted` labels against `gold` ones (same length, texts), the classes in
    the order of `classes` then of first appearance. Raises `ValueError` for lengths that differ."""
    from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predicted ones")
    order = list(dict.fromkeys([*classes, *gold, *predicted]))
    figures = LabelFigures(order, [[0] * len(order) for _ in order])
    if not gold:
        return figures
    with warnings.catch_warnings():  # one class only: the labels given keep the matrix's shape
        warnings.simplefilter("ignore", UserWarning)
        figures.confusion = confusion_matrix(gold, predicted, labels=order).tolist()
        precision, recall, f1, support = precision_recall_fscore_support(gold, predicted, labels=order,
                                                                         zero_division=math.nan)
    present = []
    for i, name in enumerate(order):
        predicted_k = sum(row[i] for row in figures.confusion)
        figures.per_class[name] = {"precision": _finite(precision[i]) if predicted_k else None,
                                   "recall": _finite(recall[i]) if support[i] else None,
                                   "f1": _finite(f1[i]) if _finite(f1[i]) is not None else 0.0,
                                   "support": int(support[i])}
        if predicted_k or support[i]:
            present.append(figures.per_class[name]["f1"])
    figures.accuracy = sum(figures.confusion[i][i] for i in range(len(order))) / len(gold)
    figures.macro_f1 = sum(present) / len(present) if present else None
    chance = sum((sum(figures.confusion[k]) / len(gold)) * (sum(row[k] for row in figures.confusion) / len(gold))
                 for k in range(len(order)))
    figures.cohen_kappa = _finite(cohen_kappa_score(gold, predicted, labels=order)) if chance < 1 else None
    return figures


def labels_into(report: Any, labels: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]],
                classes: Sequence[str] = ()) -> None:
    """The label figures of the items with a label into `report` (an
    `engine.analysis.calibration.Calibration`: its counts, `used`, `accuracy`, `label_figures`,
    notes); `labels`: item key → gold label, `results`: item key → result line."""
    gold: list[str] = []
    predicted: list[str] = []
    for key, truth in labels.items():
        line = results.get(key) or {}
        status = line.get("status", "failed")
        report.model = report.model or line.get("model")
        report.spec_hash = report.spec_hash or line.get("specHash")
        if status == "failed":
            report.failed += 1
            kind = (line.get("error") or {}).get("kind", "missing")
            report.failures[kind] = report.failures.get(kind, 0) + 1
            continue
        report.scored += status == "scored"
        report.not_scorable += status == "not_scorable"
        if isinstance(line.get("labelValue"), str):
            gold.append(str(truth))
            predicted.append(line["labelValue"])
    figures = label_figures(gold, predicted, classes)
    report.kind, report.used, report.accuracy = "labels", len(gold), figures.accuracy
    report.label_figures = figures.to_json_dict()
    if report.failed:
        report.notes.append(f"{report.failed} failed item(s) are not in the figures (resume the run to retry them)")
    if figures.cohen_kappa is None and gold:
        report.notes.append("the judge and the labels each give one class only: Cohen's kappa is undefined")


def sub_score_line(line: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    """A result line with its sub-score `name` as its score, for ``--score NAME`` (the line as it is
    for None). A scored line without that sub-score becomes a failed one (kind ``input``: its spec
    declares no such sub-score)."""
    if name is None:
        return dict(line)
    scores = line.get("scores") if isinstance(line.get("scores"), dict) else {}
    if name in scores:
        return {**line, "score": scores[name]}
    if line.get("status", "scored") == "scored" and not line.get("error") and not line.get("notScorable"):
        return {**line, "status": "failed", "error": {"kind": "input", "message": f"no sub-score {name!r}"}}
    return dict(line)


def sub_score_lines(results: Mapping[str, Mapping[str, Any]], name: str | None) -> dict[str, dict[str, Any]]:
    """`results` (item key → result line), each line through `sub_score_line`."""
    return {key: sub_score_line(line, name) for key, line in results.items()}


def classes_of(scorer: Any) -> tuple[str, ...]:
    """The labels a scorer's spec allows (its ``label.values``, an expression evaluated over its
    options), best first; empty without a label or when they cannot be computed."""
    label = getattr(getattr(scorer, "plan", None), "label", None)
    if label is None:
        return ()
    if isinstance(label.values, tuple):
        return label.values
    try:
        values = label.values({"options": dict(scorer.options)})
    except Exception:  # computed per item from more than the options: the gold labels give the classes
        return ()
    return tuple(str(v) for v in values) if isinstance(values, (list, tuple)) else ()


def sub_score_settings(settings: Any, scorer: Any) -> Any:
    """`settings` (`CalibrationSettings`) checked for ``score`` (a sub-score of `scorer`'s spec),
    its cut-off defaulting to that sub-score's documented one. Raises `ValueError` for a name the
    spec does not declare."""
    import dataclasses

    name = settings.score
    if name is None:
        return settings
    plan = getattr(scorer, "plan", None)
    names = [sub.name for sub in getattr(plan, "scores", ())]
    if name not in names:
        raise ValueError(f"--score {name}: {getattr(scorer, 'id', scorer)} has no sub-score {name!r} "
                         f"(its sub-scores: {', '.join(names) or 'none'})")
    cutoff = settings.cutoff if settings.cutoff is not None else plan.sub_cutoff_at(name, getattr(scorer, "scale", None))
    return dataclasses.replace(settings, cutoff=cutoff)

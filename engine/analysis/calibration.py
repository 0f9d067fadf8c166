"""Judge quality: how well a scorer agrees with human labels (``scorespec calibrate``).

`calibrate(scorer, data, label_field=..., positive=[...])` runs the scorer over labelled items
with the batch machinery of `engine.run.evals` (concurrency, out file, store, resume) and compares
its scores with the labels:

- **Binary labels** (``positive`` given: those label values are the class the scorer should
  score high, every other value — or only the ``negative`` values, when given — the other):
  accuracy and balanced accuracy (mean of the two recalls) at ``threshold`` (an item is
  predicted positive when its score ≥ threshold; default the spec's ``cutoff``, else half scale) and at the best
  threshold among the observed scores (fitted on the same data: an optimistic figure), ROC AUC
  (the probability that a random positive item outscores a random negative one, ties counting
  one half) and the confusion matrix at ``threshold``.
- **Graded labels** (numbers, no ``positive``): Spearman's and Pearson's correlation between
  score and label. **Pairwise** scorers' labels are ``A``, ``B`` or ``tie``: agreement without ties,
  Cohen's kappa over the three classes, position consistency (`engine.analysis.pairwise_agreement`).
- **Counts**: labelled items, items left out (no label, or — with ``negative`` — a label that
  is neither a positive nor a negative value), scored, not scorable and failed
  items. Figures are computed over scored items only, unless ``not_scorable_score`` gives not
  scorable items a score (e.g. 1 for faithfulness: no claim, nothing unsupported); failed items
  never enter the figures and are always reported.
- **Disagreements**: the items where score and label differ most (the score on a 0–1 scale
  against the label: 1 for positive, 0 for negative, or the label rescaled to 0–1), with the
  judge's reason, to guide the next prompt edit; for a jury, each juror's figures beside
  (`engine.analysis.juror_agreement`).
- **Label results** (a spec's ``label:``, no ``positive``): the confusion matrix, per-class precision
  and recall, accuracy, macro F1 and Cohen's kappa (`engine.analysis.label_calibration`); ``score``
  names a sub-score (a spec's ``scores:``) to calibrate instead of the main score.
- **Uncertainty**: TPR and TNR at ``threshold`` with Wilson intervals, Cohen's kappa, balanced
  accuracy (and graded: Spearman) with seeded bootstrap intervals, the base rate, at
  ``confidence``; the **length bias** (score against output length, per label). Formulas and
  sources: `engine.analysis.judge_stats`.

Statistics come from scikit-learn and SciPy, imported when first used. A statistic undefined on
the data (one class only; constant scores or labels; fewer than two items) is None with a note
saying why, never NaN.

The figures are stored with the run in the store's ``calibrations`` table (run id, scorer, spec
hash, model, figures as JSON) so two versions of a prompt can be compared later.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..run.items import item_key, parse_fields
from ..run.resume import stored_results
from ..run.settings import RunSettings
from .judge_stats import (Estimate, balanced_accuracy_estimate, check_confidence, cohen_kappa_estimate, length_bias,
                          output_length, roc_points, spearman_estimate, wilson)
from .cutoff_names import REPORT_NAMES, OldCutoffNames, settle_cutoff
from .label_settings import built_settings, check_label_settings, label_values, settings_from_keywords
from .disagreements import Disagreement, disagreements
from .juror_agreement import juror_figures
from .label_calibration import classes_of, labels_into, sub_score_lines, sub_score_settings
from .labelled import LabelError, Labelled, labelled_items
from .pairwise_agreement import pairwise_agreement

__all__ = ["Calibration", "CalibrationSettings", "acalibrate", "agreement", "calibrate"]

DEFAULT_TOP = 5


@dataclass
class Calibration(OldCutoffNames):
    """Agreement between a scorer and human labels; see the module docstring.

    kind: ``binary``, ``graded``, ``pairwise`` (a pairwise scorer: its figures in `pairwise`,
    `engine.analysis.pairwise_agreement`) or ``labels`` (`label_figures`:
    `LabelFigures.to_json_dict`). `left_out` = `unlabelled` (items with no label) + the
    counts of `other_labels` (label text → items whose label is neither a positive nor a negative
    value; only with ``negative``). Rates, AUC and correlations are floats (rates and AUC in
    [0, 1], correlations in [-1, 1]) or None when undefined (see `notes`). `confusion` is
    ``{"tp", "fp", "tn", "fn"}`` at `threshold`. Scores and thresholds are on the scorer's scale.
    label: the scorer's label in the run (its id unless given); direction: which of its scores
    are better (`engine.core.direction`).
    """

    scorer: str
    kind: str
    label: str | None = None
    direction: str = "higher_is_better"
    labelled: int = 0
    left_out: int = 0
    unlabelled: int = 0
    other_labels: dict[str, int] = field(default_factory=dict)
    scored: int = 0
    not_scorable: int = 0
    failed: int = 0
    used: int = 0
    positives: int | None = None
    negatives: int | None = None
    positive_labels: list[Any] | None = None
    cutoff: float | None = None  # the score cut-off the figures are at (``threshold`` before: deprecated)
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    best_cutoff: float | None = None
    best_balanced_accuracy: float | None = None
    best_accuracy: float | None = None
    roc_auc: float | None = None
    confusion: dict[str, int] | None = None
    spearman: float | None = None
    pearson: float | None = None
    not_scorable_score: float | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None
    model: str | None = None
    spec_hash: str | None = None
    seconds: float | None = None
    failures: dict[str, int] = field(default_factory=dict)
    judge_calls: int = 0  # requests made in this attempt
    cache_hits: int = 0  # judge calls answered from the judge-call cache in this attempt
    tokens_in: int = 0  # tokens of this attempt's judge calls (cache hits: none)
    tokens_out: int = 0
    cost_usd: float | None = None  # what they cost (None: the model has no price; engine.run.prices)
    agreement: float | None = None  # the mean agreement of sampled results (engine.interpret.reduce)
    stopped: str | None = None  # why the --max-cost budget stopped the run before its last item
    label_field: str | None = None  # the items' key holding the human label
    confidence: float = 0.95  # the level of every interval below
    true_positive_rate: Estimate | None = None  # positives scored ≥ threshold, with a Wilson interval
    true_negative_rate: Estimate | None = None  # negatives scored < threshold, with a Wilson interval
    cohen_kappa: Estimate | None = None  # at threshold, in [-1, 1], with a bootstrap interval
    balanced_accuracy_ci: Estimate | None = None  # `balanced_accuracy` with its bootstrap interval
    spearman_ci: Estimate | None = None  # graded labels: `spearman` with its bootstrap interval
    base_rate: float | None = None  # the share of positive labels among the items in the figures
    length_bias: dict[str, Any] | None = None  # see `length_bias`
    pairwise: dict[str, Any] | None = None  # a pairwise scorer's agreement with A / B / tie labels
    jurors: dict[str, Any] | None = None  # a jury's: each juror's figures on its items (`juror_figures`)
    label_figures: dict[str, Any] | None = None  # kind labels: engine.analysis.label_calibration

    def to_json_dict(self) -> dict[str, Any]:
        """camelCase JSON (``calibrate --json``); an `Estimate` as ``{value, ci: [low, high], confidence, method}``."""
        out: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            if item.name in _FOLDED:
                continue
            value = getattr(self, item.name)
            if isinstance(value, Estimate):
                value = value.to_json_dict()
            elif dataclasses.is_dataclass(value) or isinstance(value, list):
                value = asdict(self)[item.name]
            out[_camel(item.name)] = value
        for name, into in _FOLDED.items():
            estimate = getattr(self, name)
            if estimate is not None:
                out[_camel(into)] = estimate.to_json_dict()
        return out


#: Estimates shown in the JSON under the plain figure's key.
_FOLDED = {"balanced_accuracy_ci": "balanced_accuracy", "spearman_ci": "spearman"}


def _camel(key: str) -> str:
    parts = key.split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def _clean(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def agreement(
    scores: Sequence[float],
    labels: Sequence[Any],
    *,
    positive: Iterable[Any] | None = None,
    threshold: float | None = None,
    scale: float = 1.0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The statistics alone, for scores in [0, scale] and their labels (same length).

    With `positive`, labels are binary (a label is positive iff it is in `positive`) and the
    result has ``positives, negatives, threshold, accuracy, balanced_accuracy, best_threshold,
    best_balanced_accuracy, best_accuracy, roc_auc, confusion, true_positive_rate,
    true_negative_rate, cohen_kappa, balanced_accuracy_ci, base_rate`` (the last five
    `Estimate`s or a float, at `confidence`); without, labels must be numbers and the result has
    ``spearman, pearson, spearman_ci``. ``notes`` lists why a statistic is None.
    Raises `LabelError` when a graded label is not a number, `ValueError` for a confidence
    outside (0, 1).
    """
    confidence = check_confidence(confidence)
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    notes: list[str] = []
    if positive is None:
        return _graded(scores, labels, notes, confidence)
    wanted = set(positive)
    truth = [1 if label in wanted else 0 for label in labels]
    return _binary(list(map(float, scores)), truth, scale / 2 if threshold is None else float(threshold), notes,
                   confidence)


def _binary(scores: list[float], truth: list[int], threshold: float, notes: list[str],
            confidence: float) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix, roc_auc_score, roc_curve

    pos = sum(truth)
    neg = len(truth) - pos
    out: dict[str, Any] = {"positives": pos, "negatives": neg, "threshold": threshold, "accuracy": None,
                           "balanced_accuracy": None, "best_threshold": None, "best_balanced_accuracy": None,
                           "best_accuracy": None, "roc_auc": None, "confusion": None, "true_positive_rate": None,
                           "true_negative_rate": None, "cohen_kappa": None, "balanced_accuracy_ci": None,
                           "base_rate": None, "notes": notes}
    if not truth:
        notes.append("no scored item: no statistic")
        return out
    predicted = [1 if s >= threshold else 0 for s in scores]
    out["accuracy"] = float(accuracy_score(truth, predicted))
    tn, fp, fn, tp = (int(v) for v in confusion_matrix(truth, predicted, labels=[0, 1]).ravel())
    out["confusion"] = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    out["base_rate"] = pos / len(truth)
    out["true_positive_rate"] = wilson(tp, pos, confidence)
    out["true_negative_rate"] = wilson(tn, neg, confidence)
    out["cohen_kappa"] = cohen_kappa_estimate(truth, predicted, confidence)
    if out["cohen_kappa"].value is None:
        notes.append("the judge and the labels are both of one class: Cohen's kappa is undefined")
    if not pos or not neg:
        notes.append(f"only {'positive' if pos else 'negative'} items: balanced accuracy, best threshold "
                     "and ROC AUC are undefined")
        return out
    out["balanced_accuracy"] = float(balanced_accuracy_score(truth, predicted))
    out["balanced_accuracy_ci"] = balanced_accuracy_estimate(truth, predicted, confidence)
    out["roc_auc"] = _clean(roc_auc_score(truth, scores))
    fpr, tpr, cuts = roc_curve(truth, scores, drop_intermediate=False)
    best = None
    for f, t, cut in zip(fpr, tpr, cuts):
        if math.isinf(cut):  # roc_curve's "predict nothing positive" point
            continue
        value = (t + 1 - f) / 2
        if best is None or value > best[0] + 1e-12:
            best = (value, float(cut))
    if best is not None:
        out["best_balanced_accuracy"] = float(best[0])
        out["best_threshold"] = best[1]
        out["best_accuracy"] = float(accuracy_score(truth, [1 if s >= best[1] else 0 for s in scores]))
    return out


def _graded(scores: Sequence[float], labels: Sequence[Any], notes: list[str], confidence: float) -> dict[str, Any]:
    from scipy.stats import pearsonr, spearmanr

    values = []
    for label in labels:
        if isinstance(label, bool) or not isinstance(label, (int, float)):
            try:
                values.append(float(label))
            except (TypeError, ValueError):
                raise LabelError(f"label {label!r} is not a number: give the positive label value(s) for "
                                 "binary labels") from None
        else:
            values.append(float(label))
    out: dict[str, Any] = {"spearman": None, "pearson": None, "spearman_ci": None, "notes": notes}
    if len(values) < 2:
        notes.append("fewer than two scored items: no correlation")
    elif len(set(values)) < 2 or len(set(scores)) < 2:
        notes.append(f"constant {'labels' if len(set(values)) < 2 else 'scores'}: correlations are undefined")
    else:
        out["spearman"] = _clean(spearmanr(scores, values).statistic)
        out["pearson"] = _clean(pearsonr(scores, values).statistic)
        out["spearman_ci"] = spearman_estimate(scores, values, confidence)
    return out


@dataclass(frozen=True)
class CalibrationSettings:
    """What a calibration compares the scores with. label_field: the item's key holding the human label
    (dots reach into nested objects). positive / negative: label values (compared as text) of the two
    classes; with `negative`, items whose label is in neither are left out (counted in `left_out`);
    without `positive`, labels are graded numbers. cutoff: the score cut-off on the scorer's scale
    (default: the spec's ``cutoff``, else scale / 2); threshold: its old name, deprecated. not_scorable_score:
    the score given to not scorable items (default: left out). top: how many disagreements to list (≥ 0).
    confidence: the intervals' level, in (0, 1) (default 0.95). A single str, number or bool for
    `positive` / `negative` is one label value. Raises `TypeError` for a label_field that is not a str, a
    cutoff or not_scorable_score that is not a number, a top that is not an int; `ValueError` for an
    empty label_field, a top < 0, a confidence outside (0, 1), or a cutoff and a different threshold."""

    label_field: str = "label"
    positive: tuple[Any, ...] | None = None
    negative: tuple[Any, ...] | None = None
    cutoff: float | None = None
    not_scorable_score: float | None = None
    top: int = DEFAULT_TOP
    confidence: float = 0.95
    threshold: float | None = None
    score: str | None = None  # a sub-score's name: calibrated instead of the main score

    def __post_init__(self) -> None:
        for name in ("positive", "negative"):
            object.__setattr__(self, name, label_values(name, getattr(self, name)))
        settle_cutoff(self)
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        check_label_settings(self, {"cutoff": self.cutoff, "not_scorable_score": self.not_scorable_score})

    @classmethod
    def build(cls, settings: CalibrationSettings | None = None, **changes: Any) -> CalibrationSettings:
        """`settings` (default: the defaults) with `changes` laid over it. Raises `TypeError` for
        `settings` that is not a `CalibrationSettings` (e.g. a `RunSettings` or a dict)."""
        return built_settings(cls, settings, changes)


async def acalibrate(
    scorer: Any,
    data: Any,
    settings: CalibrationSettings | None = None,
    run: RunSettings | None = None,
    *,
    store: Any = None,
    progress: Any = False,
    on_item_complete: Any = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Calibration:
    """Run `scorer` (a `Scorer` or spec id) over the labelled items of `data` and measure its
    agreement with the labels; see the module docstring.

    settings: the labels (`CalibrationSettings`); run: the batch run's settings
    (`engine.run.settings.RunSettings`: concurrency, out, resume, run_id, rate_limit, samples,
    prices, max_cost, …; its `limit` takes the first `limit` labelled items, its `fields` map the
    data's columns). Keyword arguments named as a field of either are laid over it (e.g.
    ``positive=["faithful"], concurrency=4``). store, progress, on_item_complete, config: as
    `engine.run.evals.arun_evals` takes them; the figures are stored with the run unless
    ``store=False``.

    Raises `LabelError` when no item has a usable label, `TypeError` for an unknown keyword, and
    what `arun_evals` raises.
    """
    from ..core.direction import direction_of
    from ..run.evals import arun_evals, resolve_scorers
    from ..run.runner import declared_names

    settings = settings_from_keywords(CalibrationSettings, settings, kwargs)
    run = RunSettings.build(run, **kwargs)
    (resolved,) = resolve_scorers([scorer])
    settings = sub_score_settings(settings, resolved)
    run_label = resolved.label  # the scorer's label in the run (not a human label)
    wanted_pos = {str(v) for v in settings.positive} if settings.positive is not None else None
    wanted_neg = {str(v) for v in settings.negative} if settings.negative is not None else None
    if wanted_neg is not None and wanted_pos is None:
        raise LabelError("--negative needs --positive too")
    fields = run.fields
    field_map = parse_fields(fields, declared_names([resolved])) if fields is not None and not isinstance(
        fields, Mapping) else dict(fields or {})
    found = labelled_items(data, field_map, settings.label_field, wanted_pos, wanted_neg, run.limit)
    results: dict[str, dict[str, Any]] = {}

    async def collect(item: dict[str, Any], done: Mapping[str, Any]) -> None:
        if run_label in done:
            results[item_key(item["id"])] = {"id": item["id"], **done[run_label].to_json_dict()}
        if on_item_complete is not None:
            outcome = on_item_complete(item, done)
            if inspect.isawaitable(outcome):
                await outcome

    summary = await arun_evals(found.items, [resolved], dataclasses.replace(run, fields=None, limit=None),
                               on_item_complete=collect, progress=progress, store=store, config=config)
    if summary.resumed:  # the results of the run's earlier attempts
        for key, line in stored_results(summary.run_id, out=summary.out, store=summary.store,
                                        label=run_label).items():
            results.setdefault(key, line)
    report = _report(resolved, run_label, direction_of(resolved), settings, found, summary, wanted_pos)
    if getattr(resolved.plan, "label", None) is not None and wanted_pos is None and settings.score is None:
        labels_into(report, found.labels, results, classes_of(resolved))
        _usage_into(report, summary, run_label)
    else:
        _figures_into(report, resolved, settings, found, sub_score_lines(results, settings.score), summary, wanted_pos)
    _store_figures(report, store)
    return report


def _report(resolved: Any, run_label: str, direction: str, settings: CalibrationSettings, found: Labelled,
            summary: Any, wanted_pos: set[str] | None) -> Calibration:
    """The calibration's counts and run facts, before its figures."""
    usage = summary.usage.get(resolved.id)
    report = Calibration(scorer=resolved.id, kind="binary" if wanted_pos is not None else "graded",
                         label=run_label, direction=direction,
                         labelled=len(found.items), left_out=found.unlabelled + sum(found.other_labels.values()),
                         unlabelled=found.unlabelled, other_labels=found.other_labels, run_id=summary.run_id,
                         not_scorable_score=settings.not_scorable_score, seconds=summary.seconds,
                         judge_calls=usage.calls if usage is not None else 0,
                         cache_hits=usage.cache_hits if usage is not None else 0,
                         positive_labels=sorted(wanted_pos) if wanted_pos is not None else None,
                         label_field=settings.label_field)
    if found.problems:
        report.notes.append(f"{len(found.problems)} record(s) of the data could not be read (first: "
                            f"{found.problems[0]})")
    return report


def _figures_into(report: Calibration, resolved: Any, settings: CalibrationSettings, found: Labelled,
                  results: Mapping[str, dict[str, Any]], summary: Any, wanted_pos: set[str] | None) -> None:
    """The agreement figures, notes and disagreements of the scored items, into `report`."""
    scale = float(resolved.options.get("scale", 1))
    scores, truth, kept = _tally(report, found.labels, results, settings.not_scorable_score,
                                 unscored_ok=bool(summary.stopped))
    report.used = len(scores)
    _usage_into(report, summary, report.label or report.scorer)
    if report.failed:
        report.notes.append(f"{report.failed} failed item(s) are not in the figures (resume the run to retry them)")
    if report.not_scorable and settings.not_scorable_score is None:
        report.notes.append(f"{report.not_scorable} not scorable item(s) are not in the figures")
    warned = [line["warnings"] for _, line in kept if line.get("warnings")]
    if warned:
        report.notes.append(f"{len(warned)} item(s) in the figures carry a warning, the first: {warned[0][0]}")
    if any(getattr(stage, "pairwise", None) is not None for stage in resolved.plan.stages):
        report.kind, report.pairwise = "pairwise", pairwise_agreement(kept, truth)
        return
    cutoff = settings.cutoff if settings.cutoff is not None else resolved.cutoff
    if cutoff is not None and settings.cutoff is None and wanted_pos is not None:
        report.notes.append(f"cut-off {cutoff:g}: the spec's documented cut-off")
    stats = agreement(scores, truth, positive=wanted_pos, threshold=cutoff, scale=scale,
                      confidence=settings.confidence)
    report.notes.extend(stats.pop("notes"))
    for key, value in stats.items():
        setattr(report, REPORT_NAMES.get(key, key), value)
    report.confidence = settings.confidence
    lengths = {item_key(item["id"]): output_length(item) for item in found.items}
    report.length_bias = length_bias(scores, [lengths.get(key) for key, _ in kept],
                                     truth if wanted_pos is not None else None)
    report.disagreements = disagreements(kept, scores, truth, wanted_pos, scale, settings.top)
    report.jurors = juror_figures(kept, truth, wanted_pos is not None, lambda s, t: agreement(
        s, t, positive=wanted_pos, threshold=cutoff, scale=scale, confidence=settings.confidence))


def _usage_into(report: Calibration, summary: Any, label: str) -> None:
    """This attempt's tokens and cost, the agreement and why the run stopped, from its summary."""
    usage = summary.usage.get(label)
    if usage is not None:
        report.tokens_in, report.tokens_out = usage.tokens_in, usage.tokens_out
    report.cost_usd = summary.cost_by_label.get(label)
    stats = summary.scorers.get(label)
    report.agreement = stats.agreement if stats is not None else None
    report.stopped = summary.stopped
    if summary.stopped:
        report.notes.append(f"the budget stopped the run: {summary.left} labelled item(s) were not scored")


def _tally(report: Calibration, labels: Mapping[str, Any], results: Mapping[str, dict[str, Any]],
           not_scorable_score: float | None, *, unscored_ok: bool = False,
           ) -> tuple[list[float], list[Any], list[tuple[str, dict[str, Any]]]]:
    """Count each labelled item's outcome into `report`; return the scores and labels that
    enter the figures, and the (item key, result) pairs they came from. An item without a
    result counts as failed, unless `unscored_ok` (the budget stopped the run before it)."""
    scores: list[float] = []
    truth: list[Any] = []
    kept: list[tuple[str, dict[str, Any]]] = []
    for key, label in labels.items():
        result = results.get(key)
        if result is None and unscored_ok:
            continue
        status = result.get("status") if result else "failed"
        if result is not None:
            report.model = report.model or result.get("model")
            report.spec_hash = report.spec_hash or result.get("specHash")
        if status == "scored":
            report.scored += 1
            score = float(result["score"])  # type: ignore[index]
        elif status == "not_scorable":
            report.not_scorable += 1
            if not_scorable_score is None:
                continue
            score = float(not_scorable_score)
        else:
            report.failed += 1
            kind = ((result or {}).get("error") or {}).get("kind", "missing")
            report.failures[kind] = report.failures.get(kind, 0) + 1
            continue
        scores.append(score)
        truth.append(label)
        kept.append((key, result or {}))
    return scores, truth, kept


def _store_figures(report: Calibration, store: Any) -> None:
    from ..run.store import Store

    if store is False:
        return
    figures = (report.run_id, report.scorer, report.spec_hash, report.model, report.to_json_dict())
    if isinstance(store, Store):
        store.record_calibration(*figures)
        return
    with Store(None if store in (None, True) else store) as db:
        db.record_calibration(*figures)


def calibrate(scorer: Any, data: Any, settings: CalibrationSettings | None = None, run: RunSettings | None = None,
              **kwargs: Any) -> Calibration:
    """Synchronous `acalibrate` (same arguments; works inside a running event loop too)."""
    from ..core.sync import run_sync

    return run_sync(acalibrate(scorer, data, settings, run, **kwargs), thread_name="scorespec-calibrate")

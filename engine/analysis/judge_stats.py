"""Judge statistics with their uncertainty: rates with Wilson intervals, Cohen's kappa and balanced
accuracy with bootstrap intervals, and the pass rate corrected for the judge's own errors.

Every figure is an `Estimate`: a value and a two-sided interval at a confidence level (0.95 unless
given), both None when the figure is undefined on the data, never NaN.

- **Wilson score interval** for a binomial proportion k / n (Wilson 1927, "Probable inference, the
  law of succession, and statistical inference", JASA 22: 209–212):
  centre (p̂ + z²/2n) / (1 + z²/n), half-width z·√(p̂(1 − p̂)/n + z²/4n²) / (1 + z²/n), with z the
  standard normal quantile of (1 + confidence) / 2. Used for the true-positive rate (recall of the
  positive class), the true-negative rate and an observed pass rate.
- **Cohen's kappa** (Cohen 1960): κ = (p_o − p_e) / (1 − p_e) on the 2 × 2 table of the judge's
  decisions against the labels; **balanced accuracy**: (TPR + TNR) / 2. Their intervals are
  percentile bootstraps over items (Efron & Tibshirani 1993, ch. 13), `BOOTSTRAP_RESAMPLES`
  resamples with a fixed seed, so the same data always gives the same interval.
- **Corrected pass rate** (Rogan & Gladen 1978, "Estimating prevalence from the results of a
  screening test", Am. J. Epidemiol. 107: 71–76; as applied to LLM judges by Lee et al. 2026, "How
  to Correctly Report LLM-as-a-Judge Evaluations", PMLR v306): with q the share of production items
  the judge passes, and TPR, TNR measured on labelled items,
  θ = (q + TNR − 1) / (TPR + TNR − 1), clipped to [0, 1]. Its interval is the delta method's
  (first-order Taylor expansion of θ in q, TPR and TNR, three independent binomial samples):
  Var θ ≈ [q(1 − q)/n + θ²·TPR(1 − TPR)/n₊ + (1 − θ)²·TNR(1 − TNR)/n₋] / (TPR + TNR − 1)², the
  interval θ ± z·√Var clipped to [0, 1]. The rates inside Var are taken with half a success and
  half a failure added to each sample (the Jeffreys prior's pseudo-counts), which keeps the
  interval from collapsing when a measured rate is 0 or 1 on a small calibration: without them the
  simulated coverage falls to 0.91 at TPR 0.95 on 40 positives; with them it stays within
  0.94–0.97 (`tests/bench/corrected_coverage.py`). So it carries both the production sample's and the
  calibration's uncertainty, and it is wider than q's own interval. Undefined when the judge is no
  better than chance on the calibration (TPR + TNR ≤ 1): then no corrected rate is given.
- **ROC curve** (`roc_points`): scikit-learn's `roc_curve` of scores against binary labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["roc_points", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "CorrectedRate", "Estimate", "balanced_accuracy_estimate",
           "check_confidence", "cohen_kappa", "cohen_kappa_estimate", "corrected_difference", "corrected_pass_rate", "figure_value", "length_bias", "output_length",
           "spearman_estimate", "wilson"]

#: How many bootstrap resamples an interval is computed from, and their seed (fixed: the same data
#: gives the same interval).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261207


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval: `value` and `ci` = (low, high) at `confidence` (in (0, 1)); all
    None when the figure is undefined. `method` names how the interval was computed."""

    value: float | None
    ci: tuple[float, float] | None
    confidence: float = 0.95
    method: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci": list(self.ci) if self.ci is not None else None,
                "confidence": self.confidence, "method": self.method}


def check_confidence(confidence: Any) -> float:
    """`confidence` as a float strictly between 0 and 1. Raises `ValueError` (or `TypeError` for a
    value that is not a number)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise TypeError(f"confidence {confidence!r} is not a number")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence!r}: expected a level strictly between 0 and 1 (e.g. 0.95)")
    return float(confidence)


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """The proportion `successes` / `n` with its Wilson score interval (see the module). n = 0
    gives an undefined estimate. Raises `ValueError` when successes is outside [0, n]."""
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    if n == 0:
        return Estimate(None, None, confidence, "wilson")
    z = _z(confidence)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Estimate(p, (max(0.0, centre - half), min(1.0, centre + half)), confidence, "wilson")


def _counts(truth: Any, predicted: Any) -> tuple[Any, Any, Any, Any]:
    """(tp, fp, tn, fn) along the last axis of two 0/1 numpy arrays."""
    import numpy as np

    t, p = truth.astype(bool), predicted.astype(bool)
    return (np.sum(t & p, axis=-1), np.sum(~t & p, axis=-1), np.sum(~t & ~p, axis=-1), np.sum(t & ~p, axis=-1))


def _kappa_of(truth: Any, predicted: Any) -> Any:
    """Cohen's kappa along the last axis (NaN where undefined: both raters on one class)."""
    import numpy as np

    tp, fp, tn, fn = (c.astype(float) for c in _counts(truth, predicted))
    n = tp + fp + tn + fn
    observed = (tp + tn) / n
    expected = ((tp + fn) * (tp + fp) + (tn + fp) * (tn + fn)) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def _balanced_of(truth: Any, predicted: Any) -> Any:
    """Balanced accuracy along the last axis (NaN where a class is missing)."""
    import numpy as np

    tp, fp, tn, fn = (c.astype(float) for c in _counts(truth, predicted))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (tp / (tp + fn) + tn / (tn + fp)) / 2


def cohen_kappa(truth: Sequence[int], predicted: Sequence[int]) -> float | None:
    """Cohen's kappa of two binary raters (1 = positive), in [-1, 1]; None when undefined (no
    item, or both raters constant on one and the same class: p_e = 1)."""
    import numpy as np

    if not len(truth):
        return None
    value = float(_kappa_of(np.asarray(truth), np.asarray(predicted)))
    return None if math.isnan(value) else value


def _bootstrap(truth: Sequence[int], predicted: Sequence[int], figure: Any, confidence: float) -> Estimate:
    """`figure` (vectorised over resamples) with a seeded percentile bootstrap interval over items;
    resamples where the figure is undefined are left out."""
    import numpy as np

    method = f"percentile bootstrap over items ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
    t, p = np.asarray(truth, dtype=np.int8), np.asarray(predicted, dtype=np.int8)
    value = float(figure(t, p)) if len(t) else math.nan
    return _estimate(value, t, p, figure, confidence, method)


def _resampled(a: Any, b: Any, figure: Any) -> Any:
    """`figure` over `BOOTSTRAP_RESAMPLES` seeded resamples of the pairs (a[i], b[i]), drawn in
    chunks of at most about two million pairs; undefined (NaN) values dropped."""
    import numpy as np

    rng = np.random.default_rng(BOOTSTRAP_SEED)
    n = len(a)
    chunk = max(1, 2_000_000 // max(n, 1))
    parts = []
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        draws = rng.integers(0, n, size=(min(chunk, BOOTSTRAP_RESAMPLES - start), n))
        parts.append(figure(a[draws], b[draws]))
    values = np.concatenate(parts)
    return values[~np.isnan(values)]


def _estimate(value: float, a: Any, b: Any, figure: Any, confidence: float, method: str) -> Estimate:
    """`value` with the percentile interval of `figure` over resamples of (a, b)."""
    import numpy as np

    if math.isnan(value):
        return Estimate(None, None, confidence, method)
    values = _resampled(a, b, figure)
    if not len(values):
        return Estimate(value, None, confidence, method)
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(value, (float(low), float(high)), confidence, method)


def cohen_kappa_estimate(truth: Sequence[int], predicted: Sequence[int], confidence: float = 0.95) -> Estimate:
    """Cohen's kappa of the judge's decisions (`predicted`, 1 = positive) against the labels
    (`truth`, same length), in [-1, 1], with a seeded percentile bootstrap interval over items."""
    return _bootstrap(truth, predicted, _kappa_of, confidence)


def _spearman_of(x: Any, y: Any) -> Any:
    """Spearman's correlation along the last axis (Pearson's of the average ranks; NaN where
    either side is constant)."""
    import numpy as np
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(rx * ry, axis=-1) / np.sqrt(np.sum(rx * rx, axis=-1) * np.sum(ry * ry, axis=-1))


def spearman_estimate(scores: Sequence[float], labels: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Spearman's correlation of `scores` and graded `labels` (same length), in [-1, 1], with a
    seeded percentile bootstrap interval over items; undefined when either side is constant."""
    import numpy as np

    x, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    value = float(_spearman_of(x, y)) if len(x) > 1 else math.nan
    method = f"percentile bootstrap over items ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
    return _estimate(value, x, y, _spearman_of, confidence, method)


def balanced_accuracy_estimate(truth: Sequence[int], predicted: Sequence[int], confidence: float = 0.95) -> Estimate:
    """Balanced accuracy (TPR + TNR) / 2 in [0, 1], with a seeded percentile bootstrap interval
    over items; undefined when one class is missing."""
    return _bootstrap(truth, predicted, _balanced_of, confidence)


@dataclass(frozen=True)
class CorrectedRate:
    """A pass rate corrected for the judge's errors (see the module): `estimate` (value and interval
    in [0, 1], None when not given), `observed` (the judge's own pass rate q with its Wilson
    interval), the calibration's rates used, and `reason` when no corrected rate is given."""

    estimate: Estimate
    observed: Estimate
    true_positive_rate: float | None
    true_negative_rate: float | None
    reason: str | None = None
    standard_error: float | None = None  # the delta method's √Var, before clipping

    def to_json_dict(self) -> dict[str, Any]:
        out = self.estimate.to_json_dict()
        out.update({"observed": self.observed.to_json_dict(), "truePositiveRate": self.true_positive_rate,
                    "trueNegativeRate": self.true_negative_rate, "reason": self.reason})
        return out


METHOD = "Rogan-Gladen, delta-method interval"


def _jeffreys(successes: int, n: int) -> float:
    """A rate with half a success and half a failure added (for a variance only)."""
    return (successes + 0.5) / (n + 1)


def corrected_pass_rate(passed: int, n: int, tp: int, positives: int, tn: int, negatives: int,
                        confidence: float = 0.95) -> CorrectedRate:
    """The Rogan–Gladen corrected pass rate of `passed` of `n` production items, from a calibration
    whose judge passed `tp` of `positives` positive items and failed `tn` of `negatives` negative
    ones (see the module for the formula and the interval). Counts are non-negative integers.
    Returns an undefined estimate, with its reason, when n, positives or negatives is 0 or when
    TPR + TNR ≤ 1. Raises `ValueError` for a count outside its total."""
    observed = wilson(passed, n, confidence)
    if not (0 <= tp <= positives and 0 <= tn <= negatives):
        raise ValueError(f"calibration counts {tp}/{positives}, {tn}/{negatives} are not rates")
    tpr = tp / positives if positives else None
    tnr = tn / negatives if negatives else None
    undefined = Estimate(None, None, confidence, METHOD)
    if n == 0:
        return CorrectedRate(undefined, observed, tpr, tnr, "no scored item to correct")
    if tpr is None or tnr is None:
        return CorrectedRate(undefined, observed, tpr, tnr,
                             "the calibration has no " + ("positive" if tpr is None else "negative") + " item")
    youden = tpr + tnr - 1
    if youden <= 0:
        return CorrectedRate(undefined, observed, tpr, tnr,
                             f"the judge is no better than chance on the calibration (TPR {tpr:.3f} + TNR "
                             f"{tnr:.3f} ≤ 1): no corrected rate")
    q = passed / n
    raw = (q + tnr - 1) / youden
    theta = min(1.0, max(0.0, raw))
    qj, tj, nj = _jeffreys(passed, n), _jeffreys(tp, positives), _jeffreys(tn, negatives)
    variance = (qj * (1 - qj) / n + raw * raw * tj * (1 - tj) / positives
                + (1 - raw) ** 2 * nj * (1 - nj) / negatives) / (youden * youden)
    half = _z(confidence) * math.sqrt(variance)
    ci = (min(1.0, max(0.0, raw - half)), min(1.0, max(0.0, raw + half)))
    return CorrectedRate(Estimate(theta, ci, confidence, METHOD), observed, tpr, tnr, None, math.sqrt(variance))


def corrected_difference(baseline: CorrectedRate, version: CorrectedRate, confidence: float = 0.95) -> Estimate:
    """The difference version − baseline of two corrected pass rates, in [-1, 1], with the delta
    method's interval ± z·√(SE₁² + SE₂²). The two estimates are treated as independent; when both
    versions judged the same items their observed rates are positively correlated and the interval
    is conservative (too wide, never too narrow). Undefined when either rate is."""
    method = "difference of Rogan-Gladen estimates, delta method (independent: conservative on shared items)"
    a, b = baseline.estimate.value, version.estimate.value
    if a is None or b is None or baseline.standard_error is None or version.standard_error is None:
        return Estimate(None, None, confidence, method)
    half = _z(confidence) * math.hypot(baseline.standard_error, version.standard_error)
    return Estimate(b - a, (max(-1.0, b - a - half), min(1.0, b - a + half)), confidence, method)


def figure_value(value: Any) -> Any:
    """A figure of a calibration's JSON as a number: the ``value`` of a ``{value, ci}`` object,
    a plain number as it is (calibrations stored before intervals were added)."""
    return value.get("value") if isinstance(value, Mapping) else value


def length_bias(scores: Sequence[float], lengths: Sequence[int | None], labels: Sequence[Any] | None = None,
                ) -> dict[str, Any]:
    """Whether the score follows the output's length: Spearman's correlation between `scores`
    and `lengths` (characters; None: unknown, left out) with its two-sided p-value (SciPy's
    `spearmanr`), over all items (``spearman``, ``pValue``, ``n``) and, given `labels` (same
    length), within each label (``byLabel``: label text → the same three keys), so a length
    preference is told apart from long answers being the better ones. A correlation is None when
    fewer than three items have a length or lengths or scores are constant."""
    def one(pairs: list[tuple[float, int]]) -> dict[str, Any]:
        from scipy.stats import spearmanr

        if len(pairs) < 3 or len({p[0] for p in pairs}) < 2 or len({p[1] for p in pairs}) < 2:
            return {"spearman": None, "pValue": None, "n": len(pairs)}
        result = spearmanr([p[0] for p in pairs], [p[1] for p in pairs])
        return {"spearman": _finite(result.statistic), "pValue": _finite(result.pvalue), "n": len(pairs)}

    known = [(i, float(s), n) for i, (s, n) in enumerate(zip(scores, lengths)) if n is not None]
    out = one([(s, n) for _, s, n in known])
    if labels is not None:
        groups: dict[str, list[tuple[float, int]]] = {}
        for i, s, n in known:
            groups.setdefault(str(labels[i]), []).append((s, n))
        out["byLabel"] = {label: one(pairs) for label, pairs in sorted(groups.items())}
    return out


def output_length(item: Mapping[str, Any]) -> int | None:
    """The length in characters of an item's output as the judge reads it (messages: the
    assistant's text); None when it cannot be read."""
    from ..core.messages import MessageError, assistant_text, is_messages, read_messages
    from ..core.run_fields import as_text

    value = item.get("output")
    try:
        return len(assistant_text(read_messages(value, "output")) if is_messages(value) else as_text(value))
    except MessageError:
        return None


def _finite(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def roc_points(scores: Sequence[float], labels: Sequence[Any], *, positive: Iterable[Any]) -> list[tuple[float, float]]:
    """The ROC curve of scores against binary labels (a label is positive iff it is in
    `positive`): (false positive rate, true positive rate) points, both in [0, 1], from (0, 0) to
    (1, 1) as the cut-off falls (scikit-learn's `roc_curve`). Empty when one class is missing."""
    from sklearn.metrics import roc_curve

    wanted = set(positive)
    truth = [1 if label in wanted else 0 for label in labels]
    if len(set(truth)) < 2:
        return []
    fpr, tpr, _cuts = roc_curve(truth, [float(s) for s in scores])
    return [(float(f), float(t)) for f, t in zip(fpr, tpr)]

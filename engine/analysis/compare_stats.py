"""The statistics of a comparison between two versions of a scorer, on paired items.

- `paired_difference`: over the items both versions scored, the differences ``d = b − a``
  (version minus baseline): their mean (exact, on the scores' decimal forms), a bootstrap
  confidence interval for it (`scipy.stats.bootstrap`, BCa, seeded: the same data and seed give
  the same interval), wins / ties / losses by the scorer's direction (a win is a pair where the
  version is better), and the Wilcoxon signed-rank test (`scipy.stats.wilcoxon`, pairs that tie
  left out) with its p-value.
- `mcnemar`: the exact McNemar test on two versions' right/wrong decisions on the same items
  (a two-sided binomial test on the discordant pairs, `scipy.stats.binomtest`).

Nothing here is ever NaN: a figure that cannot be computed (no pair, too few pairs, every pair
tied, no discordant pair) is None, and `notes` says why. NumPy and SciPy are imported when first used.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ..core.direction import HIGHER_IS_BETTER, Direction, sign

__all__ = ["ALPHA", "MIN_PAIRS", "CONFIDENCE", "RESAMPLES", "PairedDifference", "McNemar", "paired_difference", "mcnemar",
           "exact_mean", "p_text"]

ALPHA = 0.05
"""A p-value below this is called unlikely to be chance."""
MIN_PAIRS = 2
"""Fewer pairs than this: the signed-rank test is not computed (one pair says nothing)."""
CONFIDENCE = 0.95
RESAMPLES = 9999
_BATCH_VALUES = 2_000_000  # bootstrap resamples are drawn in batches of about this many values


@dataclass(frozen=True)
class PairedDifference:
    """The paired difference version − baseline over `n` items both scored.

    mean_difference: exact mean of ``b − a`` (None without a pair); baseline_mean, mean: the two
    versions' means over the same pairs. ci95: the bootstrap interval of the mean difference at
    `confidence` (None with fewer than two pairs). wins / ties / losses: pairs where the version
    is better / equal / worse, by `direction`. test: ``"wilcoxon"``; statistic and p_value: its
    result (None when not computable: no pair, or every pair ties). notes: why a figure is None.
    """

    n: int
    direction: Direction = HIGHER_IS_BETTER
    mean_difference: float | None = None
    baseline_mean: float | None = None
    mean: float | None = None
    ci95: tuple[float, float] | None = None
    confidence: float = CONFIDENCE
    wins: int = 0
    ties: int = 0
    losses: int = 0
    test: str = "wilcoxon"
    statistic: float | None = None
    p_value: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        """Whether the test found a difference unlikely to be chance (p < `ALPHA`)."""
        return self.p_value is not None and self.p_value < ALPHA

    @property
    def worse_by(self) -> float | None:
        """How much worse the version is on average, by direction (negative: better)."""
        return None if self.mean_difference is None else -sign(self.direction) * self.mean_difference

    @property
    def verdict(self) -> str:
        """``better`` or ``worse`` when the interval excludes zero on that side; else ``unclear``."""
        if self.ci95 is None:
            return "unclear"
        low, high = (sign(self.direction) * v for v in self.ci95)
        if min(low, high) > 0:
            return "better"
        if max(low, high) < 0:
            return "worse"
        return "unclear"

    def to_json_dict(self) -> dict[str, object]:
        return {"n": self.n, "meanDifference": self.mean_difference, "baselineMean": self.baseline_mean,
                "mean": self.mean, "ci95": list(self.ci95) if self.ci95 is not None else None,
                "confidence": self.confidence, "wins": self.wins, "ties": self.ties, "losses": self.losses,
                "test": self.test, "statistic": self.statistic, "pValue": self.p_value,
                "significant": self.significant, "verdict": self.verdict, "notes": list(self.notes)}


def exact_mean(values: Sequence[float]) -> float | None:
    """The mean of `values` on their decimal forms (0.7 and 0.9 average to exactly 0.8); None
    for no value."""
    if not values:
        return None
    return float(sum((Decimal(repr(float(v))) for v in values), Decimal(0)) / len(values))


def _differences(baseline: Sequence[float], version: Sequence[float]) -> list[Decimal]:
    return [Decimal(repr(float(b))) - Decimal(repr(float(a))) for a, b in zip(baseline, version)]


def paired_difference(baseline: Sequence[float], version: Sequence[float], direction: Direction = HIGHER_IS_BETTER, *,
                      seed: int = 0, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> PairedDifference:
    """The paired statistics of `version` against `baseline` (scores of the same items, in the
    same order); see the module docstring. seed: the bootstrap's random seed. Raises
    `ValueError` when the two lengths differ."""
    if len(baseline) != len(version):
        raise ValueError(f"{len(baseline)} baseline scores but {len(version)} version scores")
    n = len(baseline)
    notes: list[str] = []
    if n == 0:
        notes.append("no item was scored by both versions: no difference to measure")
        return PairedDifference(0, direction, notes=notes)
    diffs = _differences(baseline, version)
    mean_diff = float(sum(diffs, Decimal(0)) / n)
    way = sign(direction)
    wins = sum(1 for d in diffs if way * d > 0)
    losses = sum(1 for d in diffs if way * d < 0)
    ties = n - wins - losses
    floats = [float(d) for d in diffs]
    statistic, p_value = _wilcoxon(floats, ties, notes)
    return PairedDifference(n, direction, mean_diff, exact_mean(baseline), exact_mean(version),
                            _interval(floats, seed, resamples, confidence, notes), confidence, wins, ties, losses,
                            "wilcoxon", statistic, p_value, notes)


def _interval(diffs: list[float], seed: int, resamples: int, confidence: float,
              notes: list[str]) -> tuple[float, float] | None:
    if len(diffs) < 2:
        notes.append("one pair: no confidence interval")
        return None
    if len(set(diffs)) == 1:  # every resample has the same mean
        return (diffs[0], diffs[0])
    import numpy as np
    from scipy.stats import bootstrap

    data = np.asarray(diffs, dtype=float)
    batch = max(1, _BATCH_VALUES // len(diffs))
    for method in ("BCa", "percentile"):  # BCa can be undefined on very lumpy data
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = bootstrap((data,), np.mean, n_resamples=resamples, confidence_level=confidence, method=method,
                              batch=batch, rng=np.random.default_rng(seed)).confidence_interval
        low, high = float(found.low), float(found.high)
        if math.isfinite(low) and math.isfinite(high):
            return (_tidy(low), _tidy(high))
    notes.append("the bootstrap gave no finite interval")
    return None


def _tidy(value: float) -> float:
    """`value` without binary noise past 12 decimals (-0.32500000000000001 → -0.325)."""
    return float(f"{value:.12g}")


def _wilcoxon(diffs: list[float], ties: int, notes: list[str]) -> tuple[float | None, float | None]:
    untied = len(diffs) - ties
    if len(diffs) < MIN_PAIRS:
        notes.append(f"too few pairs ({len(diffs)}): the signed-rank test needs at least {MIN_PAIRS}")
        return None, None
    if untied == 0:
        notes.append(f"every one of the {len(diffs)} pairs ties: the signed-rank test is not computable")
        return None, None
    from scipy.stats import wilcoxon

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = wilcoxon(diffs, zero_method="wilcox")
    statistic, p_value = float(found.statistic), float(found.pvalue)
    if not (math.isfinite(statistic) and math.isfinite(p_value)):
        notes.append("the signed-rank test gave no finite result")
        return None, None
    return statistic, min(1.0, p_value)


@dataclass(frozen=True)
class McNemar:
    """The exact McNemar test on two versions' decisions about the same `n` items.

    baseline_only: items only the baseline decided right; version_only: items only the version
    decided right (the discordant pairs). p_value: two-sided exact binomial test of
    version_only among the discordant pairs at one half; None (see `note`) when there is none.
    """

    n: int
    baseline_only: int
    version_only: int
    both_right: int = 0
    both_wrong: int = 0
    p_value: float | None = None
    note: str | None = None

    def to_json_dict(self) -> dict[str, object]:
        return {"test": "mcnemar-exact", "n": self.n, "baselineOnlyRight": self.baseline_only,
                "versionOnlyRight": self.version_only, "bothRight": self.both_right, "bothWrong": self.both_wrong,
                "pValue": self.p_value, "note": self.note}


def mcnemar(baseline_right: Sequence[bool], version_right: Sequence[bool]) -> McNemar:
    """McNemar's exact test for two versions' right (True) / wrong decisions on the same items,
    in the same order. Raises `ValueError` when the lengths differ."""
    if len(baseline_right) != len(version_right):
        raise ValueError(f"{len(baseline_right)} baseline decisions but {len(version_right)} version decisions")
    pairs = list(zip(map(bool, baseline_right), map(bool, version_right)))
    b = sum(1 for a, v in pairs if a and not v)
    c = sum(1 for a, v in pairs if v and not a)
    both_right = sum(1 for a, v in pairs if a and v)
    both_wrong = len(pairs) - b - c - both_right
    if b + c == 0:
        note = "no item was decided right by one version and wrong by the other: McNemar's test is not computable"
        return McNemar(len(pairs), b, c, both_right, both_wrong, None, note)
    from scipy.stats import binomtest

    p_value = min(1.0, float(binomtest(c, b + c, 0.5).pvalue))
    return McNemar(len(pairs), b, c, both_right, both_wrong, p_value)


def p_text(p_value: float) -> str:
    """``p = 0.0023``, ``p = 0.41``, or ``p < 0.001``."""
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.2g}"

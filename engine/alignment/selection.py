"""The figures a candidate is chosen by, and the one comparison on the test split.

- **Binary labels**: balanced accuracy (the mean of the two recalls) at the candidate's cut-off —
  a score ≥ the cut-off decides positive — is the primary figure; ROC AUC breaks ties. Both come
  from `engine.analysis.calibration.agreement` (scikit-learn).
- **Graded labels**: Spearman's correlation of score and label.
- **Test**: the parent and the chosen child on the same items (those both scored). Binary: McNemar's
  exact test on their right / wrong decisions (`engine.analysis.compare_stats.mcnemar`,
  `scipy.stats.binomtest`). Graded: a paired bootstrap of the Spearman difference (items resampled
  with replacement, `RESAMPLES` times, seeded): its 95 % percentile interval and a two-sided
  p-value (twice the smaller share of resampled differences on one side of 0, at most 1).

A figure that is undefined (one class only, constant scores) is None, never NaN.

**Adoption** (`adoption`): the chosen child is adopted only when its primary figure on dev beats the
parent's by more than `dev_noise` — one dev item's worth of balanced accuracy (1/n: a single
decision turned over moves it about that much), or for Spearman its standard error with no
correlation, 1/sqrt(n - 1) (the spread of ρ on n items by chance alone) — and it is not worse on
test (its primary figure there at least the parent's). A tie on dev broken by ROC AUC is no win.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.calibration import agreement
from ..analysis.compare_stats import McNemar, mcnemar

__all__ = ["BINARY", "GRADED", "RESAMPLES", "Figures", "PairedBootstrap", "TestComparison", "adoption", "best_index",
           "compare_on_test", "dev_noise", "figures"]

BINARY = "binary"
GRADED = "graded"
RESAMPLES = 2000


@dataclass(frozen=True)
class Figures:
    """A scorer's agreement with the labels of `n` scored items: balanced accuracy and ROC AUC
    (binary; in [0, 1]) at `cutoff` (on the scorer's scale), or Spearman's correlation (graded;
    in [-1, 1]); None when undefined."""

    n: int
    balanced_accuracy: float | None = None
    roc_auc: float | None = None
    spearman: float | None = None
    cutoff: float | None = None

    def rank(self, kind: str) -> tuple[float, float]:
        """What a candidate is chosen by, larger better: (balanced accuracy, ROC AUC) for binary
        labels, (Spearman, 0) for graded ones; an undefined figure counts as -2."""
        if kind == GRADED:
            return (_or(self.spearman), 0.0)
        return (_or(self.balanced_accuracy), _or(self.roc_auc))

    def to_json_dict(self) -> dict[str, Any]:
        return {"n": self.n, "balancedAccuracy": self.balanced_accuracy, "rocAuc": self.roc_auc,
                "spearman": self.spearman, "cutoff": self.cutoff}


def _or(value: float | None) -> float:
    return -2.0 if value is None else float(value)


def figures(scores: Sequence[float], truth: Sequence[Any], kind: str, cutoff: float | None = None) -> Figures:
    """The `Figures` of scores against their labels (same length): `truth` holds booleans
    (positive or not) for binary labels, numbers for graded ones; `cutoff` is required for binary."""
    if kind == GRADED:
        found = agreement(list(scores), list(truth))
        return Figures(len(scores), spearman=found["spearman"])
    if cutoff is None:
        raise ValueError("binary figures need a cut-off")
    found = agreement(list(scores), [bool(t) for t in truth], positive=[True], threshold=cutoff)
    return Figures(len(scores), found["balanced_accuracy"], found["roc_auc"], cutoff=cutoff)


def best_index(ranked: Sequence[Figures], kind: str) -> int | None:
    """The index of the best figures (see `Figures.rank`; the earliest among equals), None for none."""
    if not ranked:
        return None
    return max(range(len(ranked)), key=lambda i: (ranked[i].rank(kind), -i))


def dev_noise(n: int, kind: str) -> float:
    """The dev gain a candidate must exceed to count as a win, on the primary figure's scale (see
    the module docstring): 1/n (binary) or 1/sqrt(n - 1) (graded); 1.0 (no win possible) below
    two items."""
    if n < 2:
        return 1.0
    return 1.0 / n if kind != GRADED else 1.0 / math.sqrt(n - 1)


def _primary(found: Figures, kind: str) -> float | None:
    return found.spearman if kind == GRADED else found.balanced_accuracy


def adoption(parent_dev: Figures, child_dev: Figures, test: TestComparison | None, kind: str) -> str | None:
    """Why the chosen child is not adopted (a sentence), or None when it is: see the module
    docstring. `test`: the comparison on the test split (None: not run, which adopts nothing)."""
    name = "Spearman" if kind == GRADED else "balanced accuracy"
    first, second = _primary(parent_dev, kind), _primary(child_dev, kind)
    noise = dev_noise(parent_dev.n, kind)
    if first is None or second is None or second - first <= noise + 1e-12:
        gain = "undefined" if first is None or second is None else f"{second - first:+.3f}"
        return (f"its dev {name} gain over the scorer ({gain}) is within the noise of {parent_dev.n} dev items "
                f"(more than {noise:.3f} is needed)")
    if test is None:
        return "it was not compared with the scorer on the test split"
    before, after = _primary(test.parent, kind), _primary(test.child, kind)
    if before is None or after is None:
        return f"its test {name} is undefined, so it cannot be shown not to be worse there"
    if after < before:
        return f"it is worse than the scorer on the test split ({name} {after:.3f} against {before:.3f})"
    return None


@dataclass(frozen=True)
class PairedBootstrap:
    """The paired bootstrap of child − parent Spearman over `n` items: the observed difference,
    its 95 % percentile interval and two-sided p-value (None when undefined: see `note`)."""

    n: int
    difference: float | None
    ci95: tuple[float, float] | None
    p_value: float | None
    resamples: int = RESAMPLES
    note: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"test": "paired-bootstrap-spearman", "n": self.n, "difference": self.difference,
                "ci95": list(self.ci95) if self.ci95 else None, "pValue": self.p_value, "resamples": self.resamples,
                "note": self.note}


@dataclass(frozen=True)
class TestComparison:
    """The parent and the chosen child on the test split (the same items). better: whether the
    child's primary figure is higher; words: the finding in one sentence, saying plainly when the
    child is not better."""

    kind: str
    parent: Figures
    child: Figures
    mcnemar: McNemar | None = None
    bootstrap: PairedBootstrap | None = None
    better: bool = False
    words: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def p_value(self) -> float | None:
        test = self.mcnemar if self.mcnemar is not None else self.bootstrap
        return None if test is None else test.p_value

    def to_json_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parent": self.parent.to_json_dict(), "child": self.child.to_json_dict(),
                "mcnemar": self.mcnemar.to_json_dict() if self.mcnemar is not None else {"pValue": None},
                "bootstrap": self.bootstrap.to_json_dict() if self.bootstrap is not None else None,
                "better": self.better, "words": self.words, "notes": list(self.notes)}


def compare_on_test(parent: Sequence[float], child: Sequence[float], truth: Sequence[Any], kind: str,
                    parent_cutoff: float | None = None, child_cutoff: float | None = None,
                    seed: int = 0) -> TestComparison:
    """Compare the parent's and the child's scores of the same test items (in the same order,
    with their labels); see the module docstring. Raises `ValueError` when the lengths differ."""
    if not len(parent) == len(child) == len(truth):
        raise ValueError(f"{len(parent)} parent scores, {len(child)} child scores, {len(truth)} labels")
    a, b = figures(parent, truth, kind, parent_cutoff), figures(child, truth, kind, child_cutoff)
    test: McNemar | None = None
    boot: PairedBootstrap | None = None
    if kind == BINARY:
        right_a = [(s >= parent_cutoff) == bool(t) for s, t in zip(parent, truth)]  # type: ignore[operator]
        right_b = [(s >= child_cutoff) == bool(t) for s, t in zip(child, truth)]  # type: ignore[operator]
        test = mcnemar(right_a, right_b) if truth else None
        name, first, second = "balanced accuracy", a.balanced_accuracy, b.balanced_accuracy
    else:
        boot = paired_bootstrap(parent, child, truth, seed)
        name, first, second = "Spearman", a.spearman, b.spearman
    better = first is not None and second is not None and second > first
    p = test.p_value if test is not None else boot.p_value if boot is not None else None
    p_words = f" (p = {p:.3g})" if p is not None else ""
    if first is None or second is None:
        words = f"on the test split the {name} is undefined for {'the parent' if first is None else 'the child'}"
    elif better:
        words = f"on the test split the child's {name} is {second:.3f} against the parent's {first:.3f}{p_words}"
    else:
        words = (f"the child is not better on the test split: its {name} is {second:.3f} against the parent's "
                 f"{first:.3f}{p_words}")
    return TestComparison(kind, a, b, test, boot, better, words)


def paired_bootstrap(parent: Sequence[float], child: Sequence[float], truth: Sequence[Any], seed: int = 0,
                     resamples: int = RESAMPLES) -> PairedBootstrap:
    """The paired bootstrap of the Spearman difference child − parent (see the module docstring)."""
    import numpy as np
    from scipy.stats import spearmanr

    n = len(truth)
    labels = np.asarray([float(t) for t in truth])
    a, b = np.asarray(parent, dtype=float), np.asarray(child, dtype=float)

    def rho(scores: Any, values: Any) -> float | None:
        if len(set(scores.tolist())) < 2 or len(set(values.tolist())) < 2:
            return None
        value = float(spearmanr(scores, values).statistic)
        return value if math.isfinite(value) else None

    first, second = rho(a, labels), rho(b, labels)
    if n < 3 or first is None or second is None:
        return PairedBootstrap(n, None, None, None, resamples, "too few items, or constant scores or labels: "
                               "no bootstrap")
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(resamples):
        pick = rng.integers(0, n, n)
        x, y = rho(a[pick], labels[pick]), rho(b[pick], labels[pick])
        if x is not None and y is not None:
            diffs.append(y - x)
    if not diffs:
        return PairedBootstrap(n, second - first, None, None, resamples, "every resample was constant")
    values = np.asarray(diffs)
    low, high = (float(v) for v in np.percentile(values, [2.5, 97.5]))
    p = min(1.0, 2 * min(float((values <= 0).mean()), float((values >= 0).mean())))
    return PairedBootstrap(n, second - first, (low, high), p, resamples)

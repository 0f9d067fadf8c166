"""A run's summary: thresholds on a scorer's mean, statistics per scorer, and the verdict.

- **Statistics** per scorer of the run, by its label (`ScorerStats` while the run goes, `ScorerSummary` at the end):
  counts of scored / not scorable / failed items; mean, min, median and max over the *scored*
  items only (None, never NaN, when there are none). Means are computed on the scores' decimal
  forms (0.7 and 0.9 average to exactly 0.8).
- **Thresholds**, by label: ``{"faithfulness": 0.8}`` — a limit: the mean must be at least as
  good as 0.8, by the scorer's direction (≥ 0.8 when higher is better, ≤ 0.8 when lower is:
  `Threshold.for_direction`) — or ``{"faithfulness": (0.2, 0.9)}``, a plain range (0.2 ≤ mean ≤
  0.9; either bound may be None). A threshold on a scorer with no scored item is missed.
- **Agreement** per scorer: the mean over its results that have one (a sampled stage,
  `engine.interpret.reduce`) of each result's lowest stage agreement; None when none has.
- **Sub-scores** per scorer (a spec's ``scores:``): each named sub-score gets the same statistics
  as the scorer, by its own direction, keyed ``LABEL.NAME`` in thresholds (``{"rq.clarity": 0.6}``)
  and item cut-offs; a missed sub-score threshold misses the run as the scorer's would.
- **Labels** per scorer (a spec's ``label:``): how many results gave each label.
- **Warnings** per scorer: how many of this attempt's results carry a warning (a judge that
  reported no label probabilities, so hard labels were counted), and the first one's text.
- **Verdict** (and the CLI's exit code): ``budget_reached`` (3) when the run stopped before the
  end of the data because its budget would have been passed (`engine.run.budget`: resume it with a
  larger one); else ``errors`` (2) when any result failed or any dataset record could not be read
  (or the dataset had no item); else ``below_threshold`` (1) when any threshold was missed; else
  ``passed`` (0).
- **Pairwise figures** per pairwise scorer (`engine.run.pairwise_stats`): wins, ties and losses
  of output_a, the win rate with its Wilson interval, the sign test, position consistency and
  length bias.
- **Usage and cost**: judge usage per label and per model, and what it cost (`engine.run.prices`).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..core.direction import HIGHER_IS_BETTER, Direction, better
from ..core.result import Usage
from .pairwise_stats import PairwiseStats

VERDICT_EXIT = {"passed": 0, "below_threshold": 1, "errors": 2, "budget_reached": 3}


@dataclass(frozen=True)
class Threshold:
    """Bounds on a scorer's mean: ``min ≤ mean ≤ max`` (a None bound is open).

    limit: True for a single limit ("at least as good as"), parsed as a minimum and turned into
    a maximum for a lower-is-better scorer by `for_direction`; False for a range, which means the
    same whatever the direction."""

    min: float | None = None
    max: float | None = None
    limit: bool = False

    def for_direction(self, direction: Direction) -> "Threshold":
        """This threshold for a scorer of `direction`: a limit becomes ``mean ≥ limit`` when higher
        is better and ``mean ≤ limit`` when lower is; a range is returned unchanged."""
        if not self.limit:
            return self
        value = self.min if self.min is not None else self.max
        return Threshold(value, None, True) if direction == HIGHER_IS_BETTER else Threshold(None, value, True)

    def met(self, mean: float | None) -> bool:
        if mean is None:
            return False
        return (self.min is None or mean >= self.min) and (self.max is None or mean <= self.max)

    def __str__(self) -> str:
        if self.max is None:
            return f"≥ {self.min:g}" if self.min is not None else "any"
        if self.min is None:
            return f"≤ {self.max:g}"
        return f"{self.min:g}..{self.max:g}"

    def to_json_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "limit": self.limit}

    @classmethod
    def parse(cls, value: Any) -> "Threshold":
        """A number or ``"0.8"`` (a limit: at least as good as, see `for_direction`), a (min, max)
        pair, ``"0.2:0.9"``, ``":0.9"`` or ``"0.2:"`` (a range). Raises `ValueError`."""
        if isinstance(value, Threshold):
            return value
        if isinstance(value, bool):
            raise ValueError(f"threshold {value!r} is not a number")
        if isinstance(value, (int, float)):
            return cls(float(value), None, True)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            low, high = (None if v is None else float(v) for v in value)
            if low is not None and high is not None and low > high:
                raise ValueError(f"threshold {value!r}: min is above max")
            return cls(low, high)
        if isinstance(value, str):
            text = value.strip()
            low_text, sep, high_text = text.partition(":")
            try:
                low = float(low_text) if low_text.strip() else None
                high = float(high_text) if sep and high_text.strip() else None
            except ValueError:
                raise ValueError(f"threshold {value!r}: expected a number, min:max, :max or min:") from None
            if low is None and high is None:
                raise ValueError(f"threshold {value!r}: give a minimum, a maximum or both")
            return cls(low, None, True) if not sep else cls.parse((low, high))
        raise ValueError(f"threshold {value!r}: expected a number or a (min, max) pair")


def parse_thresholds(thresholds: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Threshold]:
    """``{label: 0.8 | (min, max) | "min:max"}`` or ``["label=0.8", "label=0.2:0.9"]`` →
    thresholds by scorer label (a scorer's label is its id unless given); a single value is a
    limit, to be set by the scorer's direction (`Threshold.for_direction`). Raises `ValueError`."""
    if not thresholds:
        return {}
    if isinstance(thresholds, Mapping):
        return {str(k): Threshold.parse(v) for k, v in thresholds.items()}
    out: dict[str, Threshold] = {}
    for pair in thresholds:
        name, sep, value = str(pair).partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--threshold {pair!r}: expected LABEL=limit or LABEL=min:max (e.g. faithfulness=0.8)")
        out[name.strip()] = Threshold.parse(value)
    return out


def sub_directions(scorer: Any) -> dict[str, Direction]:
    """A scorer's sub-scores (its plan's ``scores``) by name → direction; empty without any."""
    plan = getattr(scorer, "plan", None)
    return {sub.name: sub.direction for sub in getattr(plan, "scores", ())}


def split_name(name: str, known: Mapping[str, Any]) -> tuple[str, str | None]:
    """``LABEL`` or ``LABEL.NAME`` → (label, sub-score name or None): a name `known` holds whole
    is a label (a label may hold dots), else it is split at its last dot."""
    if name in known:
        return name, None
    label, dot, sub = name.rpartition(".")
    return (label, sub) if dot and label else (name, None)


def flat_summaries(summaries: Mapping[str, "ScorerSummary"]) -> dict[str, "ScorerSummary"]:
    """Each scorer's summary followed by its sub-scores' (keyed ``LABEL.NAME``)."""
    out: dict[str, ScorerSummary] = {}
    for label, s in summaries.items():
        out[label] = s
        out.update({f"{label}.{name}": sub for name, sub in s.scores.items()})
    return out


def _exact_mean(values: Iterable[float], n: int) -> float:
    return float(sum((Decimal(repr(v)) for v in values), Decimal(0)) / n)


class ScorerStats:
    """Counts and the scores of one scorer of a run (scores in a compact float array, for the
    median). label: its name in the run; scorer: its id (default: the label); spec_hash: its
    spec's hash, when known; direction: which scores are better (`engine.core.direction`); scores:
    its sub-scores' names and directions (`sub_directions`), each counted in a `ScorerStats` of
    its own (`subs`, labelled ``LABEL.NAME``); labels: how many results gave each label."""

    def __init__(self, label: str, scorer: str | None = None, spec_hash: str | None = None,
                 direction: Direction = HIGHER_IS_BETTER, scores: Mapping[str, Direction] | None = None):
        self.subs = {name: ScorerStats(f"{label}.{name}", scorer or label, spec_hash, way)
                     for name, way in (scores or {}).items()}
        self.labels: Counter[str] = Counter()
        self.label = label
        self.scorer = scorer or label
        self.spec_hash = spec_hash
        self.direction = direction
        self.scored = 0
        self.not_scorable = 0
        self.failed = 0
        self.scores = array("d")
        self._sum = 0.0
        self._agreement_sum = 0.0
        self._agreements = 0
        self.warned = 0
        self.first_warning: str | None = None
        self.pairs: PairwiseStats | None = None  # a pairwise scorer's outcomes, from its first

    def warn(self, warnings: list[str] | None) -> None:
        """Count one result's `warnings` (a result with none is not counted)."""
        if warnings:
            self.warned += 1
            self.first_warning = self.first_warning or warnings[0]

    def add(self, status: str, score: float | None, agreement: float | None = None,
            scores: Mapping[str, float] | None = None, label: str | None = None) -> None:
        """Count one result: its status, score (when scored), agreement (when sampled), sub-scores
        (by name) and label."""
        for name, sub in self.subs.items():
            sub.add(status, (scores or {}).get(name))
        if label is not None and status != "failed":
            self.labels[label] += 1
        if agreement is not None and status != "failed":
            self._agreement_sum += agreement
            self._agreements += 1
        if status == "scored" and score is not None:
            self.scored += 1
            self.scores.append(score)
            self._sum += score
        elif status == "not_scorable":
            self.not_scorable += 1
        else:
            self.failed += 1

    def add_pair(self, outcome: Mapping[str, Any] | None) -> None:
        """Count a scored result's pairwise outcome (its JSON ``pairwise``; None: not pairwise)."""
        if outcome is not None:
            if self.pairs is None:
                self.pairs = PairwiseStats()
            self.pairs.add(outcome)

    def cutoff_misses(self, cutoff: float | None, sub_cutoffs: Mapping[str, float] | None = None) -> int:
        """How many scores are worse than the item cut-off `cutoff` (by the direction; None: 0), and
        sub-scores than theirs (`sub_cutoffs` by name, each by its own direction)."""
        subs = sum(self.subs[name].cutoff_misses(value) for name, value in (sub_cutoffs or {}).items())
        if cutoff is None:
            return subs
        return subs + sum(1 for score in self.scores if better(cutoff, score, self.direction))

    @property
    def running_mean(self) -> float | None:
        """A cheap mean for progress displays (the summary's mean is exact)."""
        return self._sum / self.scored if self.scored else None

    def summary(self, threshold: Threshold | None,
                sub_thresholds: Mapping[str, Threshold] | None = None) -> "ScorerSummary":
        """The statistics, `threshold` checked on the mean (and each of `sub_thresholds`, by
        sub-score name, on its sub-score's)."""
        values = sorted(self.scores)
        n = len(values)
        mean = median = low = high = None
        if n:
            mean = _exact_mean(values, n)
            low, high = values[0], values[-1]
            mid = n // 2
            median = values[mid] if n % 2 else _exact_mean(values[mid - 1: mid + 1], 2)
        return ScorerSummary(self.scorer, self.scored, self.not_scorable, self.failed, mean, low, median, high,
                             threshold, None if threshold is None else threshold.met(mean), label=self.label,
                             spec_hash=self.spec_hash, direction=self.direction,
                             agreement=self._agreement_sum / self._agreements if self._agreements else None,
                             warned=self.warned, first_warning=self.first_warning,
                             pairwise=self.pairs.to_json_dict() if self.pairs is not None else None,
                             scores={name: sub.summary((sub_thresholds or {}).get(name))
                                     for name, sub in self.subs.items()},
                             labels=dict(sorted(self.labels.items())))


@dataclass
class ScorerSummary:
    """One scorer over a run. Statistics are over scored items only; None when there are none.
    scorer: the scorer's id; label: its name in the run (default: its id); spec_hash: its
    spec's hash, when known; direction: which scores are better (`engine.core.direction`); agreement:
    the mean agreement of its sampled results, in [0, 1] (None without sampled stages); warned:
    how many of this attempt's results carry warnings, `first_warning` the first of them; scores:
    each sub-score's summary by name (its label ``LABEL.NAME``); labels: label → results giving it."""

    scorer: str
    scored: int = 0
    not_scorable: int = 0
    failed: int = 0
    mean: float | None = None
    min: float | None = None
    median: float | None = None
    max: float | None = None
    threshold: Threshold | None = None
    threshold_met: bool | None = None
    label: str = ""
    spec_hash: str | None = None
    direction: Direction = HIGHER_IS_BETTER
    agreement: float | None = None
    warned: int = 0
    first_warning: str | None = None
    #: the pass rate corrected for the judge's errors, set after the run by
    #: `engine.analysis.corrected.apply_corrections` (``eval --calibration``); None without one
    corrected_pass_rate: dict[str, Any] | None = None
    #: a pairwise scorer's figures (`engine.run.pairwise_stats`: win rate and its Wilson interval,
    #: sign test, position consistency, length bias); None for any other scorer
    pairwise: dict[str, Any] | None = None
    #: for a scorer with a jury, how far its jurors agree and which were left out
    #: (`engine.run.jury_stats.JuryStats.summary`); None without one
    jury: dict[str, Any] | None = None
    scores: dict[str, "ScorerSummary"] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def missed(self) -> bool:
        """Whether its threshold, or a sub-score's, is missed."""
        return self.threshold_met is False or any(sub.threshold_met is False for sub in self.scores.values())

    def __post_init__(self) -> None:
        self.label = self.label or self.scorer

    @property
    def total(self) -> int:
        return self.scored + self.not_scorable + self.failed

    def to_json_dict(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "label": self.label, "specHash": self.spec_hash, "direction": self.direction,
                "scored": self.scored,
                "notScorable": self.not_scorable, "failed": self.failed, "mean": self.mean, "min": self.min,
                "median": self.median, "max": self.max,
                "threshold": self.threshold.to_json_dict() if self.threshold else None,
                "thresholdMet": self.threshold_met, "agreement": self.agreement, "warned": self.warned,
                "firstWarning": self.first_warning,
                **({"correctedPassRate": self.corrected_pass_rate} if self.corrected_pass_rate is not None else {}),
                **({"pairwise": self.pairwise} if self.pairwise is not None else {}),
                **({"jury": self.jury} if self.jury is not None else {}),
                **({"scores": {name: sub.to_json_dict() for name, sub in self.scores.items()}} if self.scores else {}),
                **({"labels": dict(self.labels)} if self.labels else {})}


@dataclass
class EvalSummary:
    """What a batch run returns (and ``scorespec eval --json`` prints).

    scorers: per scorer label (its id unless given), a `ScorerSummary`. scores: per label, the
    mean (the seed's ``runEvals`` result). verdict: ``passed`` | ``below_threshold`` | ``errors`` |
    ``budget_reached`` (see the module docstring); exit_code: 0 | 1 | 2 | 3. items: items in the
    dataset that were read; resumed: items whose every result came from an earlier attempt of the
    run. usage: judge usage of this attempt per label; usage_by_model: the same per judge model;
    cost: what this attempt's judge calls cost (`engine.run.prices.Cost`; None without a price
    table); cost_by_label: per label, in US dollars (None: no price). stopped: why the run stopped
    before the end of the data (None when it did not); left: the items it left unscored then;
    budget: the budget's figures (`engine.run.budget.Budget.to_json_dict`), None without one.
    """

    run_id: str
    verdict: str
    scorers: dict[str, ScorerSummary]
    items: int = 0
    resumed: int = 0
    dataset_problems: int = 0
    problems: list[str] = field(default_factory=list)
    out: str | None = None
    store: str | None = None
    seconds: float = 0.0
    judge_calls: int = 0
    usage: dict[str, Usage] = field(default_factory=dict)  # per label: judge usage of this attempt
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    cost: Any = None
    cost_by_label: dict[str, float | None] = field(default_factory=dict)
    stopped: str | None = None
    left: int = 0
    budget: dict[str, Any] | None = None

    @property
    def scores(self) -> dict[str, float | None]:
        return {label: s.mean for label, s in self.scorers.items()}

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.scorers.values())

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id, "verdict": self.verdict, "exitCode": self.exit_code,
            "scores": self.scores,
            "scorers": {label: s.to_json_dict() for label, s in self.scorers.items()},
            "items": self.items, "resumed": self.resumed, "datasetProblems": self.dataset_problems,
            "problems": self.problems, "out": self.out, "store": self.store,
            "seconds": round(self.seconds, 3), "judgeCalls": self.judge_calls,
            "usage": {label: u.model_dump(mode="json", by_alias=True) for label, u in self.usage.items()},
            "usageByModel": {model: u.model_dump(mode="json", by_alias=True)
                             for model, u in self.usage_by_model.items()},
            "cost": self.cost.to_json_dict() if self.cost is not None else None,
            "costByLabel": dict(self.cost_by_label), "stopped": self.stopped, "left": self.left,
            "budget": self.budget,
        }


def verdict_of(scorers: Mapping[str, ScorerSummary], dataset_problems: int, items: int,
               stopped: str | None = None, cutoff_misses: int = 0) -> str:
    """The run's verdict, decided here only: ``budget_reached`` when the budget stopped it,
    ``errors`` for a failed result, an unreadable record or no item, ``below_threshold`` for a
    mean that misses its threshold or (`cutoff_misses` > 0) an item worse than its item cut-off,
    else ``passed``."""
    if stopped:
        return "budget_reached"
    if dataset_problems or items == 0 or any(s.failed for s in scorers.values()):
        return "errors"
    if cutoff_misses or any(s.missed for s in scorers.values()):
        return "below_threshold"
    return "passed"


__all__ = ["Threshold", "parse_thresholds", "ScorerStats", "flat_summaries", "split_name", "sub_directions", "ScorerSummary", "EvalSummary", "verdict_of",
           "VERDICT_EXIT"]

"""The typed result of ``scorespec compare``: versions of a scorer side by side, with evidence.

`build_comparison` takes each version's outcomes per item (`Outcome`, from result JSON:
`outcome_of`) and, optionally, the items' human labels, and returns a `Comparison`:

- per version (`Version`): counts of scored / not scorable / failed items, and the mean and
  median over the items *every* version scored (so the means are comparable);
- per version other than the first, the baseline (`VersionComparison`): the paired difference
  over the items both scored (`engine.analysis.compare_stats.paired_difference`) said in words; the
  items whose status changed (scored → failed, …), apart and never in a mean; the items that moved
  most, with both scores and reasons and the first stage whose answer differed; with human labels,
  both versions' agreement on the same items (`engine.analysis.calibration.agreement`) and
  McNemar's test on their decisions at the cut-off.

Wins and losses follow the direction (`engine.core.direction`); the words say higher, lower.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.direction import HIGHER_IS_BETTER, Direction
from ..run.summary import ScorerSummary
from .compare_stats import PairedDifference, exact_mean, p_text, paired_difference
from .label_agreement import HumanLabels, LabelComparison, label_comparison

__all__ = ["Outcome", "Version", "StatusChange", "Mover", "VersionComparison", "Comparison", "outcome_of",
           "first_differing_stage", "build_comparison", "DEFAULT_TOP"]

DEFAULT_TOP = 5


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p.title() for p in rest)


# --- one version's result on one item -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """One version's result on one item, as much as a comparison needs. status: ``scored``,
    ``not_scorable`` or ``failed``; reason: the score's reason or why it is not scorable;
    error: ``kind at stage: message`` of a failed result; stages: (stage id, digest of its
    answer — a prompt stage's raw answer, a rule stage's result) in the order they ran."""

    id: Any
    status: str
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    stages: tuple[tuple[str, str], ...] = ()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def outcome_of(line: Mapping[str, Any]) -> Outcome:
    """An `Outcome` from a result's JSON (an out-file line, a stored result or
    `ScoreResult.to_json_dict()` with an ``id``)."""
    error = line.get("error")
    not_scorable = line.get("notScorable")
    stages = []
    for stage_id, record in (line.get("stages") or {}).items():
        if not isinstance(record, Mapping):
            continue
        if record.get("skipped"):
            answer: Any = "<skipped>"
        elif record.get("kind") == "prompt" and record.get("rawAnswer") is not None:
            answer = record.get("rawAnswer")
        else:
            answer = record.get("result")
        stages.append((str(stage_id), _digest(answer)))
    if error:
        where = f" at {error.get('stage')}" if error.get("stage") else ""
        return Outcome(line.get("id"), "failed", None, None, f"{error.get('kind')}{where}: {error.get('message')}",
                       tuple(stages))
    if not_scorable:
        return Outcome(line.get("id"), "not_scorable", None, not_scorable.get("reason") or line.get("reason"),
                       None, tuple(stages))
    score = line.get("score")
    return Outcome(line.get("id"), "scored", None if score is None else float(score), line.get("reason"), None,
                   tuple(stages))


def first_differing_stage(a: Outcome, b: Outcome) -> str | None:
    """The first stage (in the baseline's order, then the version's own) whose answer differs
    between the two outcomes, or that only one of them ran; None when every answer is the same."""
    theirs = dict(b.stages)
    for stage_id, digest in a.stages:
        if theirs.get(stage_id) != digest:
            return stage_id
    ours = dict(a.stages)
    return next((stage_id for stage_id, _ in b.stages if stage_id not in ours), None)


# --- the parts of a comparison ----------------------------------------------------------------


@dataclass
class Version:
    """One version: its label (its name in the comparison), scorer id, spec hash, run, scale
    (None when unknown) and direction; its counts over every item it has a result for; `mean`,
    `median`, `min` and `max` over the `common` items every version scored."""

    label: str
    scorer: str
    spec_hash: str | None = None
    run_id: str | None = None
    direction: Direction = HIGHER_IS_BETTER
    scale: float | None = None
    cutoff: float | None = None  # the spec's documented cut-off on this scale (None: none declared, or unknown)
    scored: int = 0
    not_scorable: int = 0
    failed: int = 0
    common: int = 0
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    tokens_in: int = 0  # judge tokens of this version in the run (cache hits: none)
    tokens_out: int = 0
    cost_usd: float | None = None  # what they cost (None: unknown, no price; `engine.run.prices`)
    judge_calls: int = 0  # requests made to the judge
    cache_hits: int = 0  # calls the judge-call cache answered (no request, no tokens)

    def summary(self) -> ScorerSummary:
        """This version as a `engine.run.summary.ScorerSummary` (statistics over the common items),
        for reports shared with ``eval``."""
        return ScorerSummary(self.scorer, self.scored, self.not_scorable, self.failed, self.mean, self.min,
                             self.median, self.max, label=self.label, spec_hash=self.spec_hash,
                             direction=self.direction)

    def to_json_dict(self) -> dict[str, Any]:
        return {"label": self.label, "scorer": self.scorer, "specHash": self.spec_hash, "runId": self.run_id,
                "direction": self.direction, "scale": self.scale,
                "counts": {"scored": self.scored, "notScorable": self.not_scorable, "failed": self.failed},
                "common": self.common, "mean": self.mean, "median": self.median, "min": self.min, "max": self.max,
                "tokensIn": self.tokens_in, "tokensOut": self.tokens_out, "costUsd": self.cost_usd,
                "judgeCalls": self.judge_calls, "cacheHits": self.cache_hits}


@dataclass(frozen=True)
class StatusChange:
    """An item whose status differs between the baseline and the version (``missing``: that side
    has no result for it). Never in a mean."""

    id: Any
    baseline_status: str
    status: str
    baseline_score: float | None = None
    score: float | None = None
    baseline_detail: str | None = None  # the reason, or the error of a failed result
    detail: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Mover:
    """An item whose score moved: both scores and reasons, the difference (version − baseline),
    and the first stage whose answer differed (None: every stage answered the same, so the
    formula or the reason made the difference)."""

    id: Any
    baseline_score: float
    score: float
    difference: float
    baseline_reason: str | None
    reason: str | None
    first_differing_stage: str | None

    def to_json_dict(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in self.__dict__.items()}


@dataclass
class VersionComparison:
    """One version against the baseline; see the module docstring. words: the finding in one
    sentence."""

    label: str
    paired: PairedDifference
    words: str
    baseline: str = ""
    status_changes: list[StatusChange] = field(default_factory=list)
    movers: list[Mover] = field(default_factory=list)
    labels: LabelComparison | None = None

    @property
    def headline(self) -> str:
        """``B scores lower than A: -0.12 (95% CI -0.2..-0.04, p 0.003, 50 pairs)``: never "better"."""
        p = self.paired
        if p.n == 0:
            return f"{self.label}: no item in common with the baseline"
        low, high = p.ci95 if p.ci95 is not None else (0.0, 0.0)
        verdict = "scores higher than" if low > 0 else "scores lower than" if high < 0 else "not clearly different from"
        ci = "" if p.ci95 is None else f"95% CI {_signed(p.ci95[0])}..{_signed(p.ci95[1])}, "
        test = p_text(p.p_value).replace(" = ", " ") if p.p_value is not None else "no test"
        return f"{self.label} {verdict} {self.baseline}: {_signed(p.mean_difference)} ({ci}{test}, {p.n} pairs)"

    def worse_by_more_than(self, delta: float) -> bool:
        """Whether this version is worse than the baseline by more than `delta` (by direction)
        with its confidence interval excluding zero."""
        worse = self.paired.worse_by
        return worse is not None and worse > delta and self.paired.verdict == "worse"

    def to_json_dict(self) -> dict[str, Any]:
        return {"label": self.label, "paired": self.paired.to_json_dict(), "words": self.words,
                "headline": self.headline,
                "statusChanges": [c.to_json_dict() for c in self.status_changes],
                "movers": [m.to_json_dict() for m in self.movers],
                "labels": self.labels.to_json_dict() if self.labels is not None else None}


@dataclass
class Comparison:
    """What ``scorespec compare`` shows (and ``--json`` prints): the `baseline` label, each
    `Version` by label, and a `VersionComparison` for every other version, in order.

    items: items any version has a result for; common: items every version scored. run_ids:
    the runs the results come from. problems: unreadable dataset records (first 100), counted in
    dataset_problems. notes: anything the figures leave out and why.
    """

    baseline: str
    direction: Direction
    versions: dict[str, Version]
    comparisons: list[VersionComparison]
    items: int = 0
    common: int = 0
    run_ids: list[str] = field(default_factory=list)
    dataset_problems: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seed: int = 0
    seconds: float = 0.0
    judge_calls: int = 0
    stopped: str | None = None  # why a --max-cost budget stopped the run before its last item
    corrected: dict[str, Any] | None = None  # corrected pass rates (`engine.analysis.corrected.compare_corrections`)

    @property
    def failed(self) -> int:
        """Failed results over every version."""
        return sum(v.failed for v in self.versions.values())

    @property
    def headline(self) -> str:
        """Every version's one-line finding against the baseline (`VersionComparison.headline`)."""
        return "; ".join(c.headline for c in self.comparisons)

    def summaries(self) -> dict[str, ScorerSummary]:
        """Each version as a `ScorerSummary`, by label (see `Version.summary`)."""
        return {label: v.summary() for label, v in self.versions.items()}

    def worse(self, delta: float) -> list[str]:
        """Labels of the versions worse than the baseline by more than `delta` (`worse_by_more_than`)."""
        return [c.label for c in self.comparisons if c.worse_by_more_than(delta)]

    def exit_code(self, fail_if_worse: float | None = None) -> int:
        """3 when a --max-cost budget stopped the run; else 2 when a result failed, a dataset
        record was unreadable or there was no item; else 1 when `fail_if_worse` is given and a
        version is worse by more than it; else 0."""
        if self.stopped:
            return 3
        if self.failed or self.dataset_problems or not self.items:
            return 2
        if fail_if_worse is not None and self.worse(fail_if_worse):
            return 1
        return 0

    def to_json_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "direction": self.direction,
                "versions": {label: v.to_json_dict() for label, v in self.versions.items()},
                "comparisons": [c.to_json_dict() for c in self.comparisons], "items": self.items,
                "common": self.common, "runIds": list(self.run_ids), "datasetProblems": self.dataset_problems,
                "problems": list(self.problems), "notes": list(self.notes), "seed": self.seed,
                "seconds": round(self.seconds, 3), "judgeCalls": self.judge_calls, "failed": self.failed,
                "stopped": self.stopped, **({"corrected": self.corrected} if self.corrected is not None else {})}


# --- building one -----------------------------------------------------------------------------


def build_comparison(versions: Sequence[Version], outcomes: Mapping[str, Mapping[str, Outcome]], *,
                     labels: HumanLabels | None = None, top: int = DEFAULT_TOP, seed: int = 0) -> Comparison:
    """The comparison of `versions` (the first is the baseline) from their outcomes by label
    and item key. Fills each `Version`'s counts and means. Raises `ValueError` for fewer than
    two versions or versions that disagree on direction."""
    if len(versions) < 2:
        raise ValueError("compare needs at least two versions: the baseline and one to compare with it")
    directions = {v.direction for v in versions}
    if len(directions) > 1:
        raise ValueError("the versions disagree on direction (" + ", ".join(f"{v.label}: {v.direction}" for v in
                         versions) + "): compare versions whose scores mean the same way")
    baseline = versions[0]
    keys = list(dict.fromkeys(k for v in versions for k in outcomes.get(v.label, {})))
    common = [k for k in keys if all(_scored(outcomes.get(v.label, {}).get(k)) for v in versions)]
    for version in versions:
        _fill_version(version, outcomes.get(version.label, {}), common)
    result = Comparison(baseline.label, baseline.direction, {v.label: v for v in versions}, [], items=len(keys),
                        common=len(common), seed=seed)
    scales = {v.scale for v in versions if v.scale is not None}
    if len(scales) > 1:
        result.notes.append("the versions' scales differ (" + ", ".join(f"{v.label}: {v.scale:g}" for v in versions
                            if v.scale is not None) + "): differences are in score units")
    for version in versions[1:]:
        result.comparisons.append(_compare_one(baseline, version, outcomes.get(baseline.label, {}),
                                               outcomes.get(version.label, {}), keys, labels, top, seed))
    return result


def _scored(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.status == "scored" and outcome.score is not None


def _fill_version(version: Version, outcomes: Mapping[str, Outcome], common: Sequence[str]) -> None:
    version.scored = sum(1 for o in outcomes.values() if o.status == "scored")
    version.not_scorable = sum(1 for o in outcomes.values() if o.status == "not_scorable")
    version.failed = sum(1 for o in outcomes.values() if o.status == "failed")
    scores = sorted(float(outcomes[k].score) for k in common)  # type: ignore[arg-type]
    version.common = len(scores)
    version.mean = exact_mean(scores)
    if scores:
        version.min, version.max = scores[0], scores[-1]
        mid = len(scores) // 2
        version.median = scores[mid] if len(scores) % 2 else exact_mean(scores[mid - 1: mid + 1])


def _compare_one(baseline: Version, version: Version, ours: Mapping[str, Outcome], theirs: Mapping[str, Outcome],
                 keys: Sequence[str], labels: HumanLabels | None, top: int, seed: int) -> VersionComparison:
    pairs = [k for k in keys if _scored(ours.get(k)) and _scored(theirs.get(k))]
    a = [float(ours[k].score) for k in pairs]  # type: ignore[arg-type]
    b = [float(theirs[k].score) for k in pairs]  # type: ignore[arg-type]
    paired = paired_difference(a, b, baseline.direction, seed=seed)
    changes = []
    for key in keys:
        mine, other = ours.get(key), theirs.get(key)
        first = mine or other
        status_a = mine.status if mine is not None else "missing"
        status_b = other.status if other is not None else "missing"
        if status_a != status_b:
            changes.append(StatusChange(first.id if first else key, status_a, status_b,
                                        mine.score if mine else None, other.score if other else None,
                                        _detail(mine), _detail(other)))
    comparison = VersionComparison(version.label, paired, _words(baseline.label, version.label, paired),
                                   baseline.label, changes, _movers(pairs, ours, theirs, top))
    if labels is not None:
        cutoff = next((c for c in (labels.cutoff, baseline.cutoff) if c is not None), (baseline.scale or 1.0) / 2)
        comparison.labels = label_comparison(pairs, a, b, labels, cutoff)
    return comparison


def _detail(outcome: Outcome | None) -> str | None:
    if outcome is None:
        return None
    return outcome.error if outcome.status == "failed" else outcome.reason


def _movers(pairs: Sequence[str], ours: Mapping[str, Outcome], theirs: Mapping[str, Outcome],
            top: int) -> list[Mover]:
    from decimal import Decimal

    moved = []
    for position, key in enumerate(pairs):
        a, b = ours[key], theirs[key]
        diff = float(Decimal(repr(b.score)) - Decimal(repr(a.score)))
        if diff != 0:
            moved.append((-abs(diff), position, Mover(a.id, a.score, b.score, diff, a.reason,  # type: ignore[arg-type]
                                                      b.reason, first_differing_stage(a, b))))
    moved.sort(key=lambda entry: entry[:2])
    return [entry[2] for entry in moved[:max(0, top)]]


def _items(n: int) -> str:
    return f"{n} item" + ("" if n == 1 else "s")


def _signed(value: float | None) -> str:
    """A difference for people: its sign, up to 4 decimals (``-0.0663``, ``+0``)."""
    return f"{value or 0.0:+.4f}".rstrip("0").rstrip(".")


def _words(baseline: str, label: str, paired: PairedDifference) -> str:
    """E.g. "B scores higher than A on 31 of 40 items, lower on 4, the same on 5; mean difference
    +0.12 (95% CI +0.05 to +0.19); a difference this large is unlikely to be chance, p = 0.002":
    higher and lower, never better and worse (scores moving is not agreeing better with people)."""
    n = paired.n
    if n == 0:
        return f"{label} and {baseline} scored no item in common: nothing to compare"
    if paired.ties == n:
        text = f"{label} scores the same as {baseline} on all {_items(n)}"
    else:
        wins_up = paired.direction == HIGHER_IS_BETTER
        counts = {"higher": paired.wins if wins_up else paired.losses, "lower": paired.losses if wins_up else paired.wins}
        lead, other = ("higher", "lower") if counts["higher"] >= counts["lower"] else ("lower", "higher")
        text = f"{label} scores {lead} than {baseline} on {counts[lead]} of {_items(n)}"
        if counts[other]:
            text += f", {other} on {counts[other]}"
        if paired.ties:
            text += f", the same on {paired.ties}"
    text += f"; mean difference {_signed(paired.mean_difference)}"
    if paired.ci95 is not None:
        text += f" (95% CI {_signed(paired.ci95[0])} to {_signed(paired.ci95[1])})"
    if paired.p_value is None:
        why = next((note for note in paired.notes if "signed-rank" in note), "the signed-rank test is not computable")
        return text + "; " + why
    chance = "is unlikely to be chance" if paired.significant else "could well be chance"
    return text + f"; a difference this large {chance}, {p_text(paired.p_value)}"

"""What a CI report is made of: item outcomes, gates and summaries, whatever command produced them.

The JUnit writer (`engine.report.junit`) and the Markdown writer (`engine.report.summary_md`) read only a
`CIReport`, so ``eval``, ``calibrate`` and ``compare`` each build one and share both writers:

- `ItemOutcome`: one item under one scorer label — ``passed``, ``failure`` (scored, but worse
  than its item cut-off, by the scorer's direction: `engine.core.direction.better`), ``error`` (the
  item failed: stage, kind, message) or ``skipped`` (not scorable: the reason);
- `Gate`: one run-level check — a threshold on a scorer's mean, the dataset being readable,
  compare's verdict — passed, failed, or an error;
- `CIReport`: the outcomes, the gates, the summaries by label (`engine.run.summary.ScorerSummary`),
  an optional one-line headline (compare's paired difference and verdict, calibrate's figures)
  and the resulting verdict: ``errors`` (2) when an item or a gate is an error, else
  ``below_threshold`` (1) when an item or a gate failed, else ``passed`` (0).

Builders: `eval_report` (an `EvalSummary` and the run's result lines), `calibration_report`,
`comparison_report` (the interface ``compare`` fills in: its verdict line, whether it passed,
and per-version summaries and results).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.direction import HIGHER_IS_BETTER, better
from ..core.result import ScoreResult, result_status
from ..run.items import item_key
from ..run.summary import VERDICT_EXIT, EvalSummary, ScorerStats, ScorerSummary, flat_summaries

OUTCOME_KINDS = ("passed", "failure", "error", "skipped")


@dataclass(frozen=True)
class ItemOutcome:
    """One item under one scorer label. status: ``scored`` | ``not_scorable`` | ``failed``;
    score on the scorer's scale (None unless scored); cutoff: the item cut-off that applies
    (None: none); direction: the scorer's (`engine.core.direction`); seconds: judge time."""

    item_id: str
    label: str
    scorer: str
    status: str
    score: float | None = None
    reason: str | None = None
    not_scorable_reason: str | None = None
    error_stage: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    cutoff: float | None = None
    direction: str = HIGHER_IS_BETTER
    seconds: float = 0.0

    @property
    def kind(self) -> str:
        """``error`` (failed), ``skipped`` (not scorable), ``failure`` (worse than the cut-off)
        or ``passed``."""
        if self.status == "failed":
            return "error"
        if self.status == "not_scorable":
            return "skipped"
        if self.missed_cutoff:
            return "failure"
        return "passed"

    @property
    def missed_cutoff(self) -> bool:
        return (self.status == "scored" and self.cutoff is not None and self.score is not None
                and better(self.cutoff, self.score, self.direction))

    @classmethod
    def of_line(cls, line: Mapping[str, Any], *, cutoff: float | None = None,
                direction: str = HIGHER_IS_BETTER) -> "ItemOutcome":
        """From an out-file line or a stored result (``{"id", "scorer", "label", …}`` camelCase)."""
        error = line.get("error") or {}
        not_scorable = line.get("notScorable") or {}
        usage = line.get("usage") or {}
        scorer = str(line.get("scorer") or "")
        return cls(item_key(line.get("id")), str(line.get("label") or scorer), scorer, result_status(dict(line)),
                   _number(line.get("score")), line.get("reason"), not_scorable.get("reason"),
                   error.get("stage"), error.get("kind"), error.get("message"), cutoff, direction,
                   float(usage.get("seconds") or 0.0))

    @classmethod
    def of_result(cls, item_id: Any, result: ScoreResult, *, cutoff: float | None = None,
                  direction: str = HIGHER_IS_BETTER) -> "ItemOutcome":
        """From a `ScoreResult` of item `item_id` (as ``on_item_complete`` receives them)."""
        return cls.of_line({"id": item_id, **result.to_json_dict()}, cutoff=cutoff, direction=direction)


@dataclass(frozen=True)
class Gate:
    """A run-level check: name (``threshold faithfulness``), passed, a one-line message, the
    detail (more lines), and `error` (True: an error rather than a failure)."""

    name: str
    passed: bool
    message: str
    detail: str = ""
    error: bool = False

    @property
    def kind(self) -> str:
        return "passed" if self.passed else "error" if self.error else "failure"


@dataclass(frozen=True)
class CIReport:
    """A run as CI sees it; see the module docstring. command: ``eval`` | ``calibrate`` |
    ``compare``; summaries by label; seconds: the run's wall time."""

    command: str
    run_id: str | None
    summaries: Mapping[str, ScorerSummary]
    outcomes: Sequence[ItemOutcome]
    gates: Sequence[Gate] = ()
    headline: str | None = None
    seconds: float = 0.0
    problems: Sequence[str] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        """Items by kind (`OUTCOME_KINDS`), gates left out."""
        out = dict.fromkeys(OUTCOME_KINDS, 0)
        for outcome in self.outcomes:
            out[outcome.kind] += 1
        return out

    @property
    def verdict(self) -> str:
        kinds = {o.kind for o in self.outcomes} | {g.kind for g in self.gates}
        if "error" in kinds:
            return "errors"
        if "failure" in kinds:
            return "below_threshold"
        return "passed"

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def cutoff_misses(self) -> int:
        return sum(1 for o in self.outcomes if o.missed_cutoff)


def parse_item_cutoffs(pairs: Iterable[str] | Mapping[str, Any] | None) -> dict[str, float]:
    """``["faithfulness=0.5"]`` or ``{"faithfulness": 0.5}`` → cut-offs by scorer label or id.
    Raises `ValueError` naming the bad pair."""
    if not pairs:
        return {}
    if isinstance(pairs, Mapping):
        pairs = [f"{k}={v}" for k, v in pairs.items()]
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = str(pair).partition("=")
        number = _number(value.strip()) if sep else None
        if not sep or not name.strip() or number is None:
            raise ValueError(f"--item-cutoff {pair!r}: expected ID=VALUE, a scorer's label or id and a number "
                             "(e.g. faithfulness=0.5)")
        out[name.strip()] = number
    return out


def check_item_cutoffs(cutoffs: Mapping[str, float], names: Iterable[str]) -> None:
    """Raises `ValueError` when a cut-off names none of the run's scorer labels or ids."""
    known = list(dict.fromkeys(names))
    unknown = [name for name in cutoffs if name not in known]
    if unknown:
        raise ValueError(f"--item-cutoff for {', '.join(map(repr, unknown))}, which is not among the scorers "
                         f"({', '.join(known)})")


def outcomes_of(lines: Iterable[Mapping[str, Any]], cutoffs: Mapping[str, float] | None = None,
                directions: Mapping[str, str] | None = None) -> list[ItemOutcome]:
    """`ItemOutcome`s of result lines, each line's sub-scores (``scores``) as outcomes of their own
    labelled ``LABEL.NAME``; a cut-off or direction is found by label, then scorer id."""
    cutoffs, directions = cutoffs or {}, directions or {}
    out = []
    for line in lines:
        label, scorer = str(line.get("label") or line.get("scorer")), str(line.get("scorer"))
        out.append(ItemOutcome.of_line(line, cutoff=cutoffs.get(label, cutoffs.get(scorer)),
                                       direction=directions.get(label, directions.get(scorer, HIGHER_IS_BETTER))))
        subs = line.get("scores") if isinstance(line.get("scores"), Mapping) else {}
        for name, value in subs.items():
            sub, by_id = f"{label}.{name}", f"{scorer}.{name}"
            out.append(ItemOutcome.of_line({**line, "label": sub, "score": value},
                                           cutoff=cutoffs.get(sub, cutoffs.get(by_id)),
                                           direction=directions.get(sub, directions.get(by_id, HIGHER_IS_BETTER))))
    return out


def threshold_gates(summaries: Mapping[str, ScorerSummary]) -> list[Gate]:
    """A gate per scorer with a threshold on its mean."""
    gates = []
    for label, s in summaries.items():
        if s.threshold is None:
            continue
        mean = "no scored item" if s.mean is None else f"mean {s.mean:.4g}"
        verb = "meets" if s.threshold_met else "misses"
        gates.append(Gate(f"threshold {label}", bool(s.threshold_met), f"{mean} {verb} the threshold {s.threshold}"))
    return gates


def corrected_text(corrected: Mapping[str, Any]) -> str:
    """A corrected pass rate (`engine.analysis.corrected.Correction.to_json_dict`) in one line:
    ``0.5714 (95 % CI 0.4334..0.7094; observed 0.6 of 200 at score ≥ 0.5)``, or why none is given."""
    observed = corrected["observed"]
    seen = f"observed {observed['value']:.4g} of {corrected['n']} at score ≥ {corrected['cutoff']:g}"
    if corrected.get("value") is None:
        return f"not given: {corrected.get('reason')}; {seen}"
    low, high = corrected["ci"]
    return f"{corrected['value']:.4f} ({corrected['confidence'] * 100:g} % CI {low:.4f}..{high:.4f}; {seen})"


def corrected_gates(summaries: Mapping[str, ScorerSummary]) -> list[Gate]:
    """A gate per scorer with a ``--threshold-corrected`` on its corrected pass rate."""
    gates = []
    for label, s in summaries.items():
        gate = (s.corrected_pass_rate or {}).get("gate")
        if gate is not None:
            verb = "meets" if gate["met"] else "misses"
            gates.append(Gate(f"corrected pass rate {label}", bool(gate["met"]),
                              f"{corrected_text(s.corrected_pass_rate)} {verb} the least {gate['min']:g}"))
    return gates


def eval_report(summary: EvalSummary, lines: Iterable[Mapping[str, Any]], *,
                cutoffs: Mapping[str, float] | None = None, directions: Mapping[str, str] | None = None,
                command: str = "eval") -> CIReport:
    """The report of an eval: `summary` and the run's result lines (`engine.run.store.Store.results`
    or the out file), with item cut-offs and directions by label or scorer id."""
    summaries = flat_summaries(summary.scorers)
    directions = {**{label: s.direction for label, s in summaries.items()}, **(directions or {})}
    gates = threshold_gates(summaries) + corrected_gates(summary.scorers)
    if summary.dataset_problems:
        gates.append(Gate("dataset", False, f"{summary.dataset_problems} record(s) of the dataset could not be read",
                          "\n".join(summary.problems), error=True))
    elif summary.items == 0:
        gates.append(Gate("dataset", False, "the dataset has no items", error=True))
    return CIReport(command, summary.run_id, summaries, outcomes_of(lines, cutoffs, directions), gates,
                    seconds=summary.seconds, problems=tuple(summary.problems))


def summaries_of(outcomes: Iterable[ItemOutcome]) -> dict[str, ScorerSummary]:
    """Per-label summaries computed from outcomes (no thresholds)."""
    stats: dict[str, ScorerStats] = {}
    for o in outcomes:
        stats.setdefault(o.label, ScorerStats(o.label, o.scorer)).add(o.status, o.score)
    return {label: s.summary(None) for label, s in stats.items()}


def calibration_report(calibration: Any, lines: Iterable[Mapping[str, Any]]) -> CIReport:
    """The report of a calibration (`engine.analysis.calibration.Calibration`) and its result lines; the
    headline gives its figures."""
    outcomes = outcomes_of(lines)
    return CIReport("calibrate", calibration.run_id, summaries_of(outcomes), outcomes,
                    headline=calibration_headline(calibration), seconds=calibration.seconds or 0.0)


def calibration_headline(c: Any) -> str:
    """``calibration of faithfulness: balanced accuracy 0.83 at score ≥ 0.5 · ROC AUC 0.9 · 40 item(s) used``."""
    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.4g}"

    if c.kind == "binary":
        figures = f"balanced accuracy {f(c.balanced_accuracy)} at score ≥ {f(c.cutoff)} · ROC AUC {f(c.roc_auc)}"
    elif c.kind == "labels":
        found = c.label_figures or {}
        figures = (f"accuracy {f(found.get('accuracy'))} · macro F1 {f(found.get('macroF1'))} · Cohen's kappa "
                   f"{f(found.get('cohenKappa'))}")
    else:
        figures = f"Spearman {f(c.spearman)} · Pearson {f(c.pearson)}"
    return f"calibration of {c.scorer}: {figures} · {c.used} item(s) used"


def comparison_report(headline: str, passed: bool, summaries: Mapping[str, ScorerSummary],
                      lines: Iterable[Mapping[str, Any]], *, run_id: str | None = None,
                      cutoffs: Mapping[str, float] | None = None, directions: Mapping[str, str] | None = None,
                      seconds: float = 0.0) -> CIReport:
    """The report of a comparison: `headline`, its one-line paired difference and verdict (e.g.
    ``B is worse than A: −0.12 (95% CI −0.20..−0.04, p 0.003, 50 pairs)``); `passed`, False when
    ``--fail-if-worse`` fails it; the summaries by version label and every version's result
    lines. The verdict becomes the gate ``compare``; thresholds in `summaries` gates of their own."""
    gates = [Gate("compare", passed, headline), *threshold_gates(summaries)]
    return CIReport("compare", run_id, summaries, outcomes_of(lines, cutoffs, directions), gates, headline=headline,
                    seconds=seconds)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


__all__ = ["ItemOutcome", "Gate", "CIReport", "OUTCOME_KINDS", "parse_item_cutoffs", "check_item_cutoffs",
           "outcomes_of", "threshold_gates", "eval_report", "summaries_of", "calibration_report",
           "calibration_headline", "comparison_report"]

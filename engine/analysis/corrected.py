"""A run's pass rates corrected for the judge's own errors (``scorespec eval --calibration``).

A calibration (`engine.analysis.calibration`, binary labels) measured how often the judge passes
a positive item (TPR) and fails a negative one (TNR) at its cut-off. On a run of unlabelled items
the share the judge passes at that cut-off, q, is then corrected by the Rogan–Gladen estimator
(`engine.analysis.judge_stats.corrected_pass_rate`, with the formula, its interval and their
sources): the estimated share of items that are truly in the calibration's positive class (the
class the scorer scores high).

A calibration is read from a ``scorespec calibrate --json`` file, or from the store by run id (a
unique prefix is enough) or by scorer id (its newest calibration). It applies to the run's scorers
of the same scorer id; a scorer whose spec changed since (another spec hash) is still corrected,
with a warning: the calibration measured another version of the judge.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .judge_stats import figure_value
from .judge_stats import CorrectedRate, corrected_difference, corrected_pass_rate
from .labelled import LabelError

__all__ = ["CalibrationError", "CalibrationRecord", "Correction", "apply_corrections", "compare_corrections",
           "corrected_rates", "load_calibration", "parse_gates"]


class CalibrationError(LabelError):
    """A calibration that cannot be read or used (no such file or stored calibration, graded
    labels, no confusion matrix)."""


@dataclass(frozen=True)
class CalibrationRecord:
    """What a correction needs of a calibration: the scorer id, its spec hash, the cut-off (on
    the scorer's scale) and the confusion counts there; `source` says where it was read."""

    scorer: str
    spec_hash: str | None
    cutoff: float
    tp: int
    fn: int
    tn: int
    fp: int
    source: str

    @classmethod
    def from_figures(cls, figures: Mapping[str, Any], source: str) -> "CalibrationRecord":
        """From a calibration's JSON (`Calibration.to_json_dict`). Raises `CalibrationError` for
        graded labels or figures without a confusion matrix."""
        if figures.get("kind") != "binary":
            raise CalibrationError(f"{source}: a calibration on graded labels has no true-positive and true-negative "
                                   "rates: calibrate with --positive LABEL to correct a pass rate")
        confusion = figures.get("confusion") or {}
        cutoff = figure_value(figures.get("cutoff", figures.get("threshold")))  # "threshold": stored before
        if not all(isinstance(confusion.get(k), int) for k in ("tp", "fn", "tn", "fp")) or cutoff is None:
            raise CalibrationError(f"{source}: the calibration has no confusion matrix at a cut-off (no scored item?)")
        return cls(str(figures.get("scorer")), figures.get("specHash"), float(cutoff), confusion["tp"],
                   confusion["fn"], confusion["tn"], confusion["fp"], source)


def load_calibration(ref: str | Path, store: Any = None) -> CalibrationRecord:
    """The calibration `ref` names: a ``calibrate --json`` file; else, in `store` (a
    `engine.run.store.Store`), a calibration by run id (or a unique prefix) or the newest one of
    the scorer id `ref`. Raises `CalibrationError` when none is found or it cannot be used."""
    path = Path(ref)
    if path.is_file():
        try:
            figures = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CalibrationError(f"--calibration {ref}: not a calibrate --json file ({exc})") from None
        if not isinstance(figures, dict):
            raise CalibrationError(f"--calibration {ref}: not a calibrate --json file (no JSON object)")
        return CalibrationRecord.from_figures(figures, str(ref))
    rows = store.calibrations() if store is not None else []
    text = str(ref)
    by_run = [r for r in rows if r["run_id"] == text] or [r for r in rows if r["run_id"].startswith(text)]
    if len({r["run_id"] for r in by_run}) > 1:
        raise CalibrationError(f"--calibration {ref}: matches the calibrations of {len(by_run)} runs: give more of "
                               "the run id (see `scorespec calibrations`)")
    found = by_run or [r for r in rows if r["scorer"] == text]
    if not found:
        raise CalibrationError(f"--calibration {ref}: no such file, and no stored calibration of that run id or "
                               "scorer (see `scorespec calibrations`)")
    row = found[0]  # newest first
    return CalibrationRecord.from_figures({**row["figures"], "scorer": row["scorer"],
                                           "specHash": row["spec_hash"]}, f"calibration of run {row['run_id']}")


@dataclass
class Correction:
    """One scorer's corrected pass rate and what the summary says of it."""

    rate: CorrectedRate
    calibration: CalibrationRecord
    passed: int
    n: int
    warnings: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        out = self.rate.to_json_dict()
        out.update({"cutoff": self.calibration.cutoff, "passed": self.passed, "n": self.n,
                    "calibration": self.calibration.source, "warnings": list(self.warnings)})
        return out


def corrected_rates(scores_by_label: Mapping[str, Iterable[float]], scorers: Mapping[str, tuple[str, str | None]],
                    calibrations: Iterable[CalibrationRecord], confidence: float = 0.95) -> dict[str, Correction]:
    """Per run label, the corrected pass rate of its scored items' scores (`scores_by_label`)
    under the calibration of its scorer id (`scorers`: label → (scorer id, spec hash)). An item
    passes when its score is ≥ the calibration's cut-off (the positive class is the one the scorer
    scores high, whatever its direction). Labels without a calibration are left out."""
    by_scorer = {c.scorer: c for c in calibrations}
    out: dict[str, Correction] = {}
    for label, (scorer_id, spec_hash) in scorers.items():
        calibration = by_scorer.get(scorer_id)
        if calibration is None:
            continue
        scores = list(scores_by_label.get(label, ()))
        passed = sum(1 for s in scores if s >= calibration.cutoff)
        rate = corrected_pass_rate(passed, len(scores), calibration.tp, calibration.tp + calibration.fn,
                                   calibration.tn, calibration.tn + calibration.fp, confidence)
        warnings = []
        if calibration.spec_hash and spec_hash and calibration.spec_hash != spec_hash:
            warnings.append(f"{label}: the spec changed since its calibration ({calibration.source}, spec "
                            f"{calibration.spec_hash[:12]}; this run {spec_hash[:12]}): calibrate it again")
        out[label] = Correction(rate, calibration, passed, len(scores), warnings)
    return out


def apply_corrections(summary: Any, calibrations: Iterable[CalibrationRecord], *, confidence: float = 0.95,
                      gates: Mapping[str, float] | None = None) -> dict[str, Correction]:
    """Correct the pass rates of a finished run's `summary` (an `engine.run.summary.EvalSummary`)
    with `calibrations`: each corrected scorer's summary gets `corrected_pass_rate`; `gates`
    (label → least corrected pass rate, in [0, 1]) turn a ``passed`` verdict into
    ``below_threshold`` when a corrected rate is below its gate or not given. Reads the run's
    results from its out file, else its store. Raises `CalibrationError` for a gate on a label
    that no calibration corrects."""
    from ..run.resume import stored_results

    calibrations = list(calibrations)
    scorers = {label: (s.scorer, s.spec_hash) for label, s in summary.scorers.items()}
    scores: dict[str, list[float]] = {}
    wanted = {c.scorer for c in calibrations}
    for label, (scorer_id, _hash) in scorers.items():
        if scorer_id in wanted:
            lines = stored_results(summary.run_id, out=summary.out, store=summary.store, label=label)
            scores[label] = [float(line["score"]) for line in lines.values()
                             if line.get("status") == "scored" and line.get("score") is not None]
    corrections = corrected_rates(scores, scorers, calibrations, confidence)
    for label, correction in corrections.items():
        summary.scorers[label].corrected_pass_rate = correction.to_json_dict()
    for label, least in (gates or {}).items():
        if label not in corrections:
            raise CalibrationError(f"--threshold-corrected {label}={least:g}: no --calibration corrects {label!r}")
        value = corrections[label].rate.estimate.value
        met = value is not None and value >= least
        summary.scorers[label].corrected_pass_rate["gate"] = {"min": least, "met": met}
        if not met and summary.verdict == "passed":
            summary.verdict = "below_threshold"
    return corrections


def parse_gates(pairs: Iterable[str]) -> dict[str, float]:
    """``["LABEL=0.5", …]`` → {label: least corrected pass rate}. Raises `CalibrationError` for a
    pair that is not LABEL=NUMBER with the number in [0, 1]."""
    out: dict[str, float] = {}
    for pair in pairs:
        label, sep, value = str(pair).partition("=")
        try:
            least = float(value)
        except ValueError:
            least = -1.0
        if not sep or not label.strip() or not 0 <= least <= 1:
            raise CalibrationError(f"--threshold-corrected {pair!r}: expected LABEL=RATE with a rate in [0, 1] "
                                   "(e.g. faithfulness=0.8)")
        out[label.strip()] = least
    return out


def _scores_of(run_id: str | None, store: Any, label: str) -> dict[str, float]:
    from ..run.resume import stored_results

    if run_id is None:
        return {}
    lines = stored_results(run_id, out=None, store=store, label=label)
    return {key: float(line["score"]) for key, line in lines.items()
            if line.get("status") == "scored" and line.get("score") is not None}


def compare_corrections(comparison: Any, calibrations: Mapping[str, CalibrationRecord], store: Any,
                        confidence: float = 0.95) -> dict[str, Any]:
    """For a `engine.analysis.comparison.Comparison` whose versions have calibrations
    (`calibrations`: version label → its calibration), each version's corrected pass rate over the
    items every calibrated version scored, and each version's difference from the baseline
    (`corrected_difference`) when both have one: ``{"rates": {label: …}, "differences": {label:
    Estimate JSON}}``, also set as ``comparison.corrected``. The scores are read from the store."""
    scores = {label: _scores_of(v.run_id, store, label) for label, v in comparison.versions.items()
              if label in calibrations}
    common = set.intersection(*(set(s) for s in scores.values())) if scores else set()
    rates: dict[str, Correction] = {}
    for label, by_item in scores.items():
        version = comparison.versions[label]
        rates.update(corrected_rates({label: [by_item[k] for k in common]}, {label: (version.scorer, version.spec_hash)},
                                     [dataclasses.replace(calibrations[label], scorer=version.scorer)], confidence))
    baseline = rates.get(comparison.baseline)
    differences = {label: corrected_difference(baseline.rate, c.rate, confidence).to_json_dict()
                   for label, c in rates.items() if baseline is not None and label != comparison.baseline}
    comparison.corrected = {"rates": {label: c.to_json_dict() for label, c in rates.items()},
                            "differences": differences}
    return comparison.corrected

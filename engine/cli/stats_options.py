"""The judge-statistics flags: ``--confidence`` (calibrate and eval), and eval's
``--calibration`` and ``--threshold-corrected`` (`engine.analysis.corrected`), with what turns
them into corrections of a finished run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from .app import fail

__all__ = ["CalibrationRefs", "CompareCalibrations", "Confidence", "CorrectionFlags", "ThresholdCorrected",
           "apply_or_exit", "compare_loaded_or_exit", "comparison_corrected_lines", "correct_comparison_or_exit",
           "corrected_lines", "loaded_or_exit"]

Confidence = Annotated[float, typer.Option(
    "--confidence", min=0.5, max=0.999, help="The level of the figures' intervals (Wilson, bootstrap, delta method).")]
CalibrationRefs = Annotated[list[str], typer.Option(
    "--calibration", metavar="FILE|RUN|SCORER", help=(
        "A calibration (a `calibrate --json` file, or a stored one by run id or scorer id) whose true-positive "
        "and true-negative rates correct each of its scorer's pass rates (Rogan-Gladen; repeatable)."))]
CompareCalibrations = Annotated[list[str], typer.Option(
    "--calibration", metavar="[LABEL=]FILE|RUN|SCORER", help=(
        "A version's calibration (LABEL=REF, or REF alone: the version of its spec hash): with the baseline's "
        "too, the difference of their corrected pass rates with an interval (repeatable)."))]
ThresholdCorrected = Annotated[list[str], typer.Option(
    "--threshold-corrected", metavar="LABEL=RATE", help=(
        "A least corrected pass rate in [0, 1] (needs --calibration for that scorer): below it, exit 1 "
        "(repeatable)."))]


@dataclass(frozen=True)
class CorrectionFlags:
    """eval's correction flags as given."""

    calibrations: tuple[str, ...] = ()
    gates: tuple[str, ...] = ()
    confidence: float = 0.95


def loaded_or_exit(flags: CorrectionFlags, db: Any) -> tuple[list[Any], dict[str, float]]:
    """The calibrations and gates the flags name, read before any judge call; exits 2 when one
    cannot be used."""
    from ..analysis.corrected import CalibrationError, load_calibration, parse_gates

    if flags.gates and not flags.calibrations:
        fail("--threshold-corrected needs --calibration")
    try:
        return [load_calibration(ref, db) for ref in flags.calibrations], parse_gates(flags.gates)
    except CalibrationError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def apply_or_exit(summary: Any, loaded: tuple[list[Any], dict[str, float]], flags: CorrectionFlags,
                  db: Any) -> None:
    """Correct the finished run's pass rates into its summary (stored again with them)."""
    from ..analysis.corrected import CalibrationError, apply_corrections

    calibrations, gates = loaded
    if not calibrations:
        return
    try:
        apply_corrections(summary, calibrations, confidence=flags.confidence, gates=gates)
    except CalibrationError as exc:
        fail(str(exc))
    stored = db.get_run(summary.run_id)
    if stored is not None:
        db.finish_run(summary.run_id, status=stored["status"], summary=summary.to_json_dict(),
                      verdict=summary.verdict)


def corrected_lines(summary: Any) -> list[str]:
    """The console's lines for the corrected pass rates of a summary (none without)."""
    lines = []
    for label, stats in summary.scorers.items():
        corrected = stats.corrected_pass_rate
        if corrected is None:
            continue
        observed = corrected["observed"]
        seen = f"observed {observed['value']:.4g} of {corrected['n']} at score ≥ {corrected['cutoff']:g}"
        level = f"{corrected['confidence'] * 100:g} %"
        if corrected["value"] is None:
            lines.append(f"{label}: no corrected pass rate ({corrected['reason']}); {seen}")
        else:
            low, high = corrected["ci"]
            lines.append(f"{label}: corrected pass rate {corrected['value']:.4f} [{level}: {low:.4f}, {high:.4f}] "
                         f"({seen}; TPR {corrected['truePositiveRate']:.3f}, TNR {corrected['trueNegativeRate']:.3f} "
                         f"from {corrected['calibration']})")
        gate = corrected.get("gate")
        if gate is not None and not gate["met"]:
            lines.append(f"{label}: corrected pass rate below --threshold-corrected {gate['min']:g}")
        lines.extend(f"warning: {w}" for w in corrected.get("warnings", ()))
    return lines


def compare_loaded_or_exit(refs: list[str], db: Any) -> list[tuple[str | None, Any]]:
    """compare's calibrations, each with the version label it names (None: matched later), read
    before any judge call; exits 2 when one cannot be used."""
    from ..analysis.corrected import CalibrationError, load_calibration

    loaded = []
    for ref in refs:
        label, sep, rest = ref.partition("=")
        named = bool(sep) and not label.endswith((".json", "/")) and bool(rest)
        try:
            loaded.append((label if named else None, load_calibration(rest if named else ref, db)))
        except CalibrationError as exc:
            fail(str(exc))
    return loaded


def correct_comparison_or_exit(comparison: Any, loaded: list[tuple[str | None, Any]], confidence: float,
                               db: Any) -> None:
    """Match each calibration to its version (by label, else by spec hash, else the one version of
    its scorer id) and set the comparison's corrected pass rates; exits 2 when one matches none."""
    from ..analysis.corrected import compare_corrections

    if not loaded:
        return
    versions = comparison.versions
    by_label = {}
    for label, record in loaded:
        if label is None:
            same = [v.label for v in versions.values() if record.spec_hash and v.spec_hash == record.spec_hash]
            same = same or [v.label for v in versions.values() if v.scorer == record.scorer]
            if len(same) != 1:
                fail(f"--calibration {record.source}: matches {len(same)} versions: name one, LABEL=REF")
            label = same[0]
        if label not in versions:
            fail(f"--calibration {label}=…: no version is labelled {label!r} ({', '.join(versions)})")
        by_label[label] = record
    compare_corrections(comparison, by_label, db, confidence)


def comparison_corrected_lines(comparison: Any) -> list[str]:
    """The console's lines for a comparison's corrected pass rates (none without)."""
    from ..report.ci import corrected_text

    corrected = comparison.corrected
    if not corrected:
        return []
    lines = ["", "pass rates corrected for the judge's errors (Rogan-Gladen, on the items every calibrated version "
             "scored):"]
    lines += [f"  {label}: {corrected_text(rate)}" for label, rate in corrected["rates"].items()]
    for label, diff in corrected["differences"].items():
        if diff["value"] is None:
            lines.append(f"  {label} − {comparison.baseline}: not given (a corrected rate is missing)")
        else:
            low, high = diff["ci"]
            lines.append(f"  {label} − {comparison.baseline}: {diff['value']:+.4f} ({diff['confidence'] * 100:g} % CI "
                         f"{low:+.4f}..{high:+.4f})")
    if not corrected["differences"]:
        lines.append(f"  (no difference: give the baseline {comparison.baseline} a calibration too)")
    return lines

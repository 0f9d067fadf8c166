"""``eval``'s trace flags: ``--format otlp``, ``--item-per``, ``--span-kind`` make the data a
`engine.traces.TraceSource`; after the run, ``--export-otlp`` and ``--export-phoenix`` send its
results on traces back as telemetry (`engine.traces.otlp_export`, `engine.traces.phoenix`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

from .app import fail

NONE_ON_TRACES = " (warning: no result was on a trace's span: was --data traces?)"


@dataclass(frozen=True)
class TraceFlags:
    """The trace flags of ``eval`` as given (None / empty: not given)."""

    format: Optional[str] = None
    item_per: Optional[str] = None
    span_kinds: tuple[str, ...] = ()
    export_otlp: Optional[str] = None
    export_phoenix: Optional[str] = None


def trace_data(data: str, flags: TraceFlags) -> Any:
    """The data as a `TraceSource` when the flags or a ``phoenix://`` URL say traces; else the
    path as given. Exits 2 for a bad flag, an export asked of a data file that reads as items (not
    traces), or an ``--export-otlp`` file that cannot be written (checked before any item is
    scored; its folder made)."""
    from ..traces.assemble import ITEM_PER, TraceOptions
    from ..traces.conventions import KINDS
    from ..traces.source import TraceSource, is_phoenix

    if flags.format is not None and flags.format.lower() != "otlp":
        fail(f"--format {flags.format}: only otlp can be named (the other formats are told by the file's suffix)")
    if flags.span_kinds and flags.item_per != "span":
        fail("--span-kind: only with --item-per span")
    unknown = [k for k in flags.span_kinds if k.strip().upper() not in KINDS]
    if unknown:
        fail(f"--span-kind {', '.join(unknown)}: unknown kind; the kinds are {', '.join(KINDS)} (any case)")
    if flags.item_per is not None and flags.item_per not in ITEM_PER:
        fail(f"--item-per {flags.item_per}: expected {' or '.join(ITEM_PER)}")
    items_format = None if flags.format or is_phoenix(data) else _items_format(data)
    if items_format is not None and flags.item_per:
        fail(f"--item-per: {data} is not traces (it reads as {items_format} items); --item-per and --span-kind "
             "are for traces (OTLP JSON, a JSONL of spans, phoenix://); give --format otlp if it holds traces")
    for flag, target in (("--export-otlp", flags.export_otlp), ("--export-phoenix", flags.export_phoenix)):
        if target and items_format is not None:
            fail(f"{flag} needs traces as --data: {data} reads as {items_format} items, which have no spans to "
                 "put scores on (give --format otlp if it holds traces)")
    _check_export_file(flags.export_otlp)
    if not (flags.format or flags.item_per or is_phoenix(data)):
        return data
    return TraceSource(data, TraceOptions(flags.item_per or "trace", flags.span_kinds or ("LLM",)))


def _items_format(data: str) -> Optional[str]:
    """The format of a local data file that does not read as traces (``jsonl``, ``csv``, …);
    None for traces, or data whose format is not known before reading (a URL, a folder, a glob)."""
    from pathlib import Path

    from ..run.readers import detect_format

    if "://" in data or not Path(data).is_file():
        return None
    try:
        found = detect_format(Path(data))
    except OSError:
        return None
    return None if found == "otlp" else found


def _check_export_file(target: Optional[str]) -> None:
    """Before any item is scored: an ``--export-otlp`` file that is a folder exits 2; its parent
    folder is made (as ``--out``'s is), exiting 2 when it cannot be."""
    from pathlib import Path

    if not target or target.lower().startswith(("http://", "https://")):
        return
    path = Path(target)
    if path.is_dir():
        fail(f"--export-otlp {target}: is a folder; give the file to write the evaluation records to")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--export-otlp {target}: cannot make its folder ({exc.strerror or exc})")


def export_or_exit(db: Any, run_id: str, scorers: list[Any], cutoffs: dict[str, float], flags: TraceFlags) -> list[str]:
    """Send the run's results on traces where the flags say; the lines to print. Exits 2 when
    an export fails (the run's results stay in the store and the out file)."""
    if not flags.export_otlp and not flags.export_phoenix:
        return []
    from ..traces.otlp_export import OtlpExportError, export
    from ..traces.phoenix import PhoenixError, annotate

    notes = []
    try:
        if flags.export_otlp:
            count = export(_evaluations(db, run_id, scorers, cutoffs), flags.export_otlp)
            notes.append(f"{count} evaluation record(s) → {flags.export_otlp}" + (NONE_ON_TRACES if not count else ""))
        if flags.export_phoenix:
            count = annotate(_evaluations(db, run_id, scorers, cutoffs), flags.export_phoenix)
            notes.append(f"{count} span annotation(s) → {flags.export_phoenix}" + (NONE_ON_TRACES if not count else ""))
    except (OtlpExportError, PhoenixError, OSError) as exc:
        fail(f"export: {exc}")
    return notes


def _evaluations(db: Any, run_id: str, scorers: list[Any], cutoffs: dict[str, float]) -> Iterator[Any]:
    """The evaluations of the run's results on items read from traces, in the order stored."""
    from ..core.direction import direction_of
    from ..report.ci import ItemOutcome
    from ..traces.evaluations import evaluation_of

    by_label = {s.label: s for s in scorers}
    for line in db.results(run_id, with_items=True):
        item = line.pop("item", None)
        scorer = by_label.get(line.get("label"))
        cutoff = cutoffs.get(line.get("label")) if line.get("label") in cutoffs else cutoffs.get(line.get("scorer"))
        passed = None
        if cutoff is not None and scorer is not None:
            passed = not ItemOutcome.of_line(line, cutoff=cutoff, direction=direction_of(scorer)).missed_cutoff
        evaluation = evaluation_of(line, item, passed)
        if evaluation is not None:
            yield evaluation


__all__ = ["NONE_ON_TRACES", "TraceFlags", "export_or_exit", "trace_data"]

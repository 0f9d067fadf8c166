"""A run as the HTML report reads it (`engine.report.html`): from the store, or from an out file.

`load_run(ref, db)` takes a run id (or a unique prefix of one) looked up in the store, or the path
of a run's JSONL out file. An out file that the store knows (`Store.run_for_out`) is read from the
store, which also holds the run's items, configuration and calibrations; an out file alone gives
the results only (their prompts still show what the judge was given).

A `ReportRun` holds one result line per (item, label) — the out-file line shape of
`engine.run.outfile.out_line` — and what is known about the run around them. `label_summary` gives a
scorer's statistics (`engine.run.summary`) with the run's threshold; `usage_totals` sums the judge usage.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.result import Usage, result_status
from ..run.items import item_key
from ..run.outfile import iter_out_lines
from ..run.summary import ScorerStats, ScorerSummary, Threshold

__all__ = ["ReportError", "ReportRun", "LabelSpec", "load_run", "run_from_store", "run_from_out_file",
           "label_summary", "spread", "usage_totals"]


class ReportError(UserError, ValueError):
    """The run to report cannot be found or read (the message says which and why)."""


@dataclass
class LabelSpec:
    """What the results say about one scorer of a run: its id, spec versions and hashes (more
    than one when a resumed run changed its spec), the spec chain (the spec and what it extends)
    and the judge models used."""

    label: str
    scorer: str
    versions: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)


@dataclass
class ReportRun:
    """One run's results and context. source: ``store`` or ``out file``. lines: one result per
    (item, label), each an out-file line (``id``, ``scorer``, ``label``, then the `ScoreResult`
    JSON fields), in the order first written. items: item key (`engine.run.items.item_key`) →
    the item's data as the run read it (empty when read from an out file alone). calibrations:
    scorer id → the figures ``scorespec calibrate`` stored for this run (`Calibration.to_json_dict`).
    config: what the store recorded with the run (thresholds, per label the scorer id, and once
    known its direction and scale); created_at: ISO 8601 UTC (an out file's modification time)."""

    run_id: str
    source: str
    lines: list[dict[str, Any]]
    status: str | None = None
    verdict: str | None = None
    created_at: str | None = None
    data: str | None = None
    out: str | None = None
    store: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibrations: dict[str, dict[str, Any]] = field(default_factory=dict)
    declared_labels: list[str] = field(default_factory=list)
    #: label → its pass rate corrected for the judge's errors (``eval --calibration``), as the
    #: stored summary holds it (`engine.analysis.corrected.Correction.to_json_dict`)
    corrected: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        """The run's scorer labels: those it declared, then any other found in its results."""
        seen = dict.fromkeys(self.declared_labels)
        for line in self.lines:
            seen.setdefault(line["label"], None)
        return list(seen)

    @property
    def item_count(self) -> int:
        return len(self.items) or len({item_key(line["id"]) for line in self.lines})

    def label_config(self, label: str) -> dict[str, Any]:
        """What the run's configuration says of a label (scorer id, spec hash, maybe direction and scale)."""
        return dict(((self.config.get("labels") or {}).get(label)) or {})

    def threshold(self, label: str) -> Threshold | None:
        value = (self.config.get("thresholds") or {}).get(label)
        return Threshold(value.get("min"), value.get("max")) if isinstance(value, Mapping) else None

    def specs(self) -> dict[str, LabelSpec]:
        """Per label, what its results say about its spec and model."""
        specs: dict[str, LabelSpec] = {}
        for line in self.lines:
            label = line["label"]
            spec = specs.setdefault(label, LabelSpec(label, str(line.get("scorer") or label)))
            _add(spec.versions, line.get("specVersion"))
            _add(spec.hashes, line.get("specHash"))
            _add(spec.models, line.get("model"))
            if not spec.chain and line.get("specChain"):
                spec.chain = [str(s) for s in line["specChain"]]
        for label in self.labels:
            known = self.label_config(label)
            specs.setdefault(label, LabelSpec(label, str(known.get("scorer") or label),
                                              hashes=[known["specHash"]] if known.get("specHash") else []))
        return specs


def _add(values: list[str], value: Any) -> None:
    if value is not None and str(value) not in values:
        values.append(str(value))


def label_summary(run: ReportRun, label: str) -> ScorerSummary:
    """A scorer's counts and statistics over the run's results (scored items only), with the
    run's threshold on its mean; its sub-scores' (each by the direction the run recorded, else the
    scorer's) and its label counts too."""
    known = run.label_config(label)
    lines = [line for line in run.lines if line["label"] == label]
    direction = known.get("direction") or "higher_is_better"
    subs = dict(known.get("scores") or {})  # each sub-score's direction, as the run recorded them
    for line in lines:
        subs.update({name: direction for name in line.get("scores") or {} if name not in subs})
    stats = ScorerStats(label, known.get("scorer"), known.get("specHash"), direction, subs)
    for line in lines:
        status = result_status(line)
        stats.add(status, line.get("score") if status == "scored" else None, None, line.get("scores"),
                  line.get("labelValue"))
        if status == "scored":
            stats.add_pair(line.get("pairwise"))
    thresholds = {name: run.threshold(f"{label}.{name}") for name in subs}
    return stats.summary(run.threshold(label), {name: t for name, t in thresholds.items() if t is not None})


def spread(scores: Iterable[float]) -> dict[str, float | None]:
    """``{"sd", "q1", "q3"}``: the sample standard deviation and the quartiles (None with fewer
    than two scores)."""
    values = sorted(scores)
    if len(values) < 2:
        return {"sd": None, "q1": None, "q3": None}
    q1, _median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"sd": statistics.stdev(values), "q1": q1, "q3": q3}


def usage_totals(lines: Iterable[Mapping[str, Any]]) -> tuple[Usage, dict[str, float]]:
    """The judge usage summed over results, and the costs: each result's ``costUsd`` (what its
    judge calls cost, `engine.run.prices`; absent when no price is known) summed as ``cost (USD)``,
    and any numeric key of a usage whose name starts with ``cost``."""
    total = Usage()
    costs: dict[str, float] = {}
    for line in lines:
        usd = line.get("costUsd")
        if isinstance(usd, (int, float)) and not isinstance(usd, bool):
            costs["cost (USD)"] = costs.get("cost (USD)", 0.0) + usd
        usage = line.get("usage") or {}
        total.add(Usage.model_validate({k: v for k, v in usage.items() if k in _USAGE_KEYS}))
        for key, value in usage.items():
            if key.lower().startswith("cost") and isinstance(value, (int, float)) and not isinstance(value, bool):
                costs[key] = costs.get(key, 0.0) + value
    return total, costs


_USAGE_KEYS = {f.alias or name for name, f in Usage.model_fields.items()} | set(Usage.model_fields)


def load_run(ref: str, db: Any | None) -> ReportRun:
    """The run `ref` names: a path to an out file, else a run id or unique id prefix in `db` (a
    `Store`, or None when there is none). Raises `ReportError` when it cannot be found or read."""
    path = Path(ref)
    if path.is_file():
        return run_from_out_file(path, db)
    if db is None:
        raise ReportError(f"{ref!r}: no such out file, and no store to look a run up in (give --store)")
    try:
        found = db.get_run(ref)
    except LookupError as exc:  # an ambiguous prefix
        raise ReportError(str(exc)) from None
    if found is None:
        raise ReportError(f"{ref!r}: no such out file, and no run with that id in the store {db} "
                          "(see `scorespec runs`)")
    return run_from_store(db, found)


def run_from_store(db: Any, run: Mapping[str, Any]) -> ReportRun:
    """A stored run (`Store.get_run`'s dict) with its results, items and calibrations."""
    run_id = run["run_id"]
    calibrations = {c["scorer"]: c["figures"] for c in reversed(db.calibrations()) if c["run_id"] == run_id}
    return ReportRun(run_id=run_id, source="store", lines=list(db.results(run_id)), status=run.get("status"),
                     verdict=run.get("verdict"), created_at=run.get("created_at"), data=run.get("data"),
                     out=run.get("out"), store=str(db), config=dict(run.get("config") or {}),
                     items=dict(db.items(run_id)), calibrations=calibrations,
                     declared_labels=list(run.get("scorers") or []),
                     corrected={label: s["correctedPassRate"] for label, s in
                                ((run.get("summary") or {}).get("scorers") or {}).items()
                                if isinstance(s, dict) and s.get("correctedPassRate")})


def run_from_out_file(path: Path, db: Any | None = None) -> ReportRun:
    """The run that wrote the out file `path`: from `db` when it holds that run, else from the
    file's lines alone (the last line per (item, label)). Raises `ReportError` for a file with
    no result line."""
    path = path.resolve()
    if db is not None:
        run_id = db.run_for_out(str(path))
        if run_id is not None:
            found = db.get_run(run_id)
            if found is not None:
                return run_from_store(db, found)
    last: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        for key, _raw, line in iter_out_lines(path):
            last[key] = {**line, "label": key[1]}  # a later line replaces an earlier one in its place
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not last:
        raise ReportError(f"{path}: no result line in it (is it a scorespec out file?)")
    lines = list(last.values())
    run_ids = [line.get("runId") for line in lines if line.get("runId")]
    stamp = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
    return ReportRun(run_id=str(run_ids[-1]) if run_ids else path.stem, source="out file", lines=lines,
                     created_at=stamp.replace("+00:00", "Z"), out=str(path))


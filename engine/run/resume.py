"""Resuming a run: what its out file or the store already holds, and bringing both in line.

A run is identified by its ``out`` file (an empty or missing one, as a kill before the first
result leaves it, by the run the store recorded for that file) or, without one, by its run id
in the store. Results are keyed by (item, label): a label is a scorer's name in its run, its id
unless given (a line or row written before labels existed has its scorer id as label).
Resuming (`find_prior`) repairs a torn last line left by a kill, reads the last
result per (item, label), and brings the store in line with the out file (`sync_store`: a kill
between the out-file write and the store commit leaves the store one result behind). The runner
then skips every (item, label) already scored or not scorable and retries the failed ones; at
the end `tidy_out_file` rewrites the out file compactly when retried results left older lines,
so it holds exactly one line per (item, label).

The settings the run recorded fill what the resuming call leaves unset (`resumed_settings`,
`engine.run.settings.RUN_RESUMED_FIELDS`; a setting the call gives wins), and a resuming call
must score under the same labels as the run (`check_same_labels`): results are never mixed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.result import result_status
from .items import item_key
from .outfile import LineKey, compact_out_file, iter_out_lines, line_key, read_lines, repair_last_line
from .jury_stats import jury_of
from .settings import RUN_RESUMED_FIELDS, RunSettings
from .store import Store


@dataclass
class PriorResults:
    """What an earlier attempt of a run left: the last status and score per (item key, label),
    the run id it used, and whether the out file needs a compacting rewrite. `agreements`: the
    agreement of each such result that has one (sampled stages); `spent`: the model and the
    tokens in and out of each (what the run's budget counts as spent before); `pairs`: the pairwise
    outcome of each result that has one (``pairwise``, for the summary's win rate); `juries`: the
    jury votes and failures of each result a jury gave (`engine.run.jury_stats.jury_of`); `extras`:
    the sub-scores and label of each result that has them."""

    run_id: str | None = None
    records: dict[LineKey, tuple[str, float | None]] = field(default_factory=dict)
    agreements: dict[LineKey, float] = field(default_factory=dict)
    pairs: dict[LineKey, dict[str, Any]] = field(default_factory=dict)
    spent: dict[LineKey, tuple[str | None, int, int]] = field(default_factory=dict)
    juries: dict[LineKey, Any] = field(default_factory=dict)  # `engine.run.jury_stats.jury_of` each line
    extras: dict[LineKey, tuple[dict[str, float] | None, str | None]] = field(default_factory=dict)
    untidy: bool = False
    repaired: str | None = None  # a message when a torn last line was repaired
    resuming: bool = False  # an earlier attempt of the run exists

    def done(self, key: LineKey) -> bool:
        """Whether the result of `key` is final (scored or not scorable): not asked again."""
        found = self.records.get(key)
        return found is not None and found[0] != "failed"

    def note(self, key: LineKey, record: dict[str, Any]) -> None:
        """Take `record` (an out-file line) as the last result of `key`."""
        status = result_status(record)
        self.records[key] = (status, record.get("score") if status == "scored" else None)
        _note_extras(self, key, record)


def scan_out_file(path: Path) -> PriorResults:
    """Read an existing out file for resuming: repair a torn last line (`repair_last_line`) and
    collect the last result per (item, label). Unreadable lines and repeated keys mark the
    file for compaction."""
    prior = PriorResults(repaired=repair_last_line(path))
    for raw, record in read_lines(path):
        if record is None:
            if raw.strip():
                prior.untidy = True
            continue
        key = line_key(record)
        if key in prior.records:
            prior.untidy = True
        prior.note(key, record)
        if prior.run_id is None and isinstance(record.get("runId"), str):
            prior.run_id = record["runId"]
    return prior


def _note_extras(prior: PriorResults, key: LineKey, record: dict[str, Any]) -> None:
    """Keep a prior result's agreement and its model's tokens (see `PriorResults`)."""
    agreement = record.get("agreement")
    if isinstance(agreement, (int, float)) and not isinstance(agreement, bool):
        prior.agreements[key] = float(agreement)
    else:
        prior.agreements.pop(key, None)
    if isinstance(record.get("pairwise"), dict):
        prior.pairs[key] = record["pairwise"]
    else:
        prior.pairs.pop(key, None)
    usage = record.get("usage") if isinstance(record.get("usage"), dict) else {}
    tokens = [usage.get(k) if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool) else 0
              for k in ("tokensIn", "tokensOut")]
    model = record.get("model") if isinstance(record.get("model"), str) else None
    prior.spent[key] = (model, tokens[0], tokens[1])
    jury = jury_of(record)
    if jury is not None:
        prior.juries[key] = jury
    else:
        prior.juries.pop(key, None)
    scores, label = record.get("scores"), record.get("labelValue")
    if isinstance(scores, dict) or isinstance(label, str):
        prior.extras[key] = (scores if isinstance(scores, dict) else None, label if isinstance(label, str) else None)
    else:
        prior.extras.pop(key, None)


def sync_store(db: Store, run_id: str, out_path: Path, prior: PriorResults) -> None:
    """Make the store hold the out file's last result per (item, label): a kill between the
    out-file write and the store commit leaves the store one result behind."""
    stored = {(i, s): (st, sc) for i, s, st, sc in db.statuses(run_id)}
    missing = {key for key, value in prior.records.items() if stored.get(key) != value}
    if not missing:
        return
    rows: dict[LineKey, tuple[str, str, dict[str, Any], None]] = {}
    for key, _raw, record in iter_out_lines(out_path):
        if key in missing:
            result = {k: v for k, v in record.items() if k != "id"}
            rows[key] = (key[0], key[1], result, None)
    db.record_results(run_id, list(rows.values()))


def find_prior(out: Path | None, run_id: str | None, db: Store | None, *, resume: bool,
               note: Callable[[str], None]) -> PriorResults:
    """What the run already holds, with its run id (None for a new run without a given id).

    out: the run's out file (absolute), if any. With results in `out`, `resume` must be True
    (`FileExistsError` otherwise); the file is scanned (`note` hears of a repaired torn line)
    and the store brought in line. An empty or missing `out` resumes the run of exactly the id
    `run_id` (or, without one, the run the store recorded for `out`), scoring every item again. Without `out`, `resume` reads the run `run_id` (a unique
    prefix is enough) from the store. Raises `ValueError` when `out` holds another run than
    `run_id`, or when there is no run to resume.
    """
    if out is not None and out.exists() and out.stat().st_size > 0:
        if not resume:
            raise FileExistsError(f"{out}: already holds results; resume the run (--resume) or choose another file")
        prior = scan_out_file(out)
        if prior.repaired:
            note(prior.repaired)
        if run_id is not None and prior.run_id is not None and run_id != prior.run_id:
            raise ValueError(f"{out} holds run {prior.run_id}, not {run_id}")
        prior.run_id = prior.run_id or run_id or (db.run_for_out(str(out)) if db else None)
        prior.resuming = True
        if db is not None and prior.run_id is not None:
            sync_store(db, prior.run_id, out, prior)
        return prior
    if not resume:
        return PriorResults(run_id=run_id)
    if out is not None:
        # killed before its first result line: keep the run id recorded for this out file
        # (else the store would keep an empty run marked running forever); every item is
        # scored again, since the out file must hold every result
        found = None
        if db is not None and run_id is None:
            found = db.run_for_out(str(out))
        elif db is not None and _stored_exactly(db, run_id):
            found = run_id
        return PriorResults(run_id=found, resuming=True) if found is not None else PriorResults(run_id=run_id)
    return _prior_in_store(run_id, db)


def _stored_exactly(db: Store, run_id: str) -> bool:
    """Whether the store holds a run of exactly this id (a prefix of another's is a new run's)."""
    try:
        run = db.get_run(run_id)
    except LookupError:
        return False
    return run is not None and run["run_id"] == run_id


def _prior_in_store(run_id: str | None, db: Store | None) -> PriorResults:
    if run_id is None:
        raise ValueError("resume needs the run's out file or its run id")
    run = db.get_run(run_id) if db is not None else None
    if db is None or run is None:
        raise ValueError(f"no run {run_id!r} in the store {db or '(none)'} to resume")
    prior = PriorResults(run_id=run["run_id"], resuming=True)
    for item, label, status, score in db.statuses(prior.run_id):
        prior.records[(item, label)] = (status, score)
    for line in db.results(prior.run_id):
        _note_extras(prior, (item_key(line["id"]), line["label"]), line)
    return prior


def tidy_out_file(out: Path | None, prior: PriorResults, rewrote: bool) -> None:
    """At the end of an attempt: rewrite the out file with one line per (item, label) when it
    holds older lines (`rewrote`: a retried result was appended) or unreadable ones."""
    if out is not None and (prior.untidy or rewrote):
        compact_out_file(out)


def stored_results(run_id: str, *, out: str | Path | None, store: str | Path | Store | None,
                   label: str) -> dict[str, dict[str, Any]]:
    """Every result of the scorer `label` in run `run_id`, by item key (`engine.run.datasets.
    item_key`), each as its out-file line: read from `out` when given, else from the store (a
    `Store` or its path). E.g. the results a resumed run made in its earlier attempts."""
    found: dict[str, dict[str, Any]] = {}
    if out is not None:
        for (key, line_label), _raw, line in iter_out_lines(Path(out)):
            if line_label == label:
                found[key] = line
        return found
    if store is None:
        return found
    db = store if isinstance(store, Store) else Store(store)
    try:
        for line in db.results(run_id):
            if line["label"] == label:
                found[item_key(line["id"])] = line
    finally:
        if db is not store:
            db.close()
    return found


def resumed_settings(db: Store | None, run_id: str | None, settings: RunSettings,
                     config: Mapping[str, Any] | None) -> tuple[RunSettings, dict[str, Any], tuple[str, ...]]:
    """For a call resuming the stored run `run_id` (None: a new run, or none stored): `settings`
    with what they leave unset among `RUN_RESUMED_FIELDS` taken from the settings the run
    recorded (`RunSettings.from_stored`; a setting the call gives wins), the config to record
    (the stored one with the call's `config` laid over it, so a resumed attempt never records
    less than the run had) and the labels the run scored (``()`` when unknown)."""
    run = db.get_run(run_id) if db is not None and run_id is not None else None
    if run is None:
        return settings, dict(config or {}), ()
    stored = run.get("config") or {}
    merged = settings.resumed_from(RunSettings.from_stored(stored), RUN_RESUMED_FIELDS)
    return merged, {**stored, **(config or {})}, tuple(run.get("scorers") or ())


def check_same_labels(run_id: str | None, stored: Sequence[str], labels: Sequence[str]) -> None:
    """Raises `ValueError` when a resuming call scores under other labels than the run it resumes
    (`stored`, its labels; nothing to check when empty): the out file and the store would mix
    the results of both."""
    if stored and sorted(stored) != sorted(labels):
        raise ValueError(f"resume: run {run_id} scored {', '.join(stored)}; this call scores {', '.join(labels)}: "
                         "resume with the same scorers, or start a new run with another out file")


def stored_run_of(out: Path | None, run_id: str | None, db: Store) -> dict[str, Any] | None:
    """The stored run a resuming call continues, read only (nothing is repaired or written):
    the run `run_id` (a unique prefix is enough), else the run `out` holds (the run id of its
    first readable line, else the run the store recorded for the file). None when the store
    has none. Raises `LookupError` for a prefix of several run ids."""
    if run_id is not None:
        return db.get_run(run_id)
    if out is None:
        return None
    out = out.resolve()
    found = None
    if out.is_file():
        found = next((record["runId"] for _raw, record in read_lines(out)
                      if record is not None and isinstance(record.get("runId"), str)), None)
    found = found or db.run_for_out(str(out))
    return db.get_run(found) if found is not None else None

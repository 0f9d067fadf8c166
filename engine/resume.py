"""Resuming a run: what its out file or the store already holds, and bringing both in line.

A run is identified by its ``out`` file (an empty or missing one, as a kill before the first
result leaves it, by the run the store recorded for that file) or, without one, by its run id
in the store. Resuming (`find_prior`) repairs a torn last line left by a kill, reads the last
result per (item, scorer), and brings the store in line with the out file (`sync_store`: a kill
between the out-file write and the store commit leaves the store one result behind). The runner
then skips every (item, scorer) already scored or not scorable and retries the failed ones; at
the end `tidy_out_file` rewrites the out file compactly when retried results left older lines,
so it holds exactly one line per (item, scorer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .outfile import LineKey, iter_out_lines, line_key, read_lines, repair_last_line
from .result import result_status
from .store import Store


@dataclass
class PriorResults:
    """What an earlier attempt of a run left: the last status and score per (item key, scorer
    id), the run id it used, and whether the out file needs a compacting rewrite."""

    run_id: str | None = None
    records: dict[LineKey, tuple[str, float | None]] = field(default_factory=dict)
    untidy: bool = False
    repaired: str | None = None  # a message when a torn last line was repaired

    def done(self, key: LineKey) -> bool:
        """Whether the result of `key` is final (scored or not scorable): not asked again."""
        found = self.records.get(key)
        return found is not None and found[0] != "failed"


def scan_out_file(path: Path) -> PriorResults:
    """Read an existing out file for resuming: repair a torn last line (`repair_last_line`) and
    collect the last result per (item, scorer). Unreadable lines and repeated keys mark the
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
        status = result_status(record)
        prior.records[key] = (status, record.get("score") if status == "scored" else None)
        if prior.run_id is None and isinstance(record.get("runId"), str):
            prior.run_id = record["runId"]
    return prior


def sync_store(db: Store, run_id: str, out_path: Path, prior: PriorResults) -> None:
    """Make the store hold the out file's last result per (item, scorer): a kill between the
    out-file write and the store commit leaves the store one result behind."""
    stored = {(i, s): (st, sc) for i, s, st, sc in db.statuses(run_id)}
    missing = {key for key, value in prior.records.items() if stored.get(key) != value}
    if not missing:
        return
    rows: dict[LineKey, tuple[str, str, dict[str, Any], None]] = {}
    for key, _raw, record in iter_out_lines(out_path):
        if key in missing:
            result = {k: v for k, v in record.items() if k not in ("id", "scorer")}
            result["scorer"] = record["scorer"]
            rows[key] = (key[0], key[1], result, None)
    db.record_results(run_id, list(rows.values()))

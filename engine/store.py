"""Where results are kept: the embedded SQLite store holding every eval run, and a run's JSONL
out file (`OutWriter`, `scan_out_file`, `compact_out_file`).

Default path: ``$SCORESPEC_STORE``, else ``.scorespec/store.sqlite`` under the current directory.

Tables::

    runs     run_id PK, status (running | finished | interrupted), data, out, scorers (JSON),
             config (JSON), summary (JSON), verdict, created_at, updated_at
    items    (run_id, item_id) PK, position, item (JSON: id, input, output, ground_truth,
             context and the rest), created_at
    results  (run_id, item_id, scorer_id) PK, status (scored | not_scorable | failed), score,
             spec_hash, model, usage (JSON), result (JSON, camelCase as `ScoreResult.to_json_dict`),
             created_at, updated_at
    calibrations  (run_id, scorer_id) PK, spec_hash, model, figures (JSON: `engine.calibration.
             Calibration.to_json_dict`), created_at — the latest calibration of a run

Item ids are stored as text (`engine.datasets.item_key`: a string id as is, any other id as JSON,
so 1 → ``1``). Each result is committed on its own as it completes (``synchronous=NORMAL``: a
killed process loses no committed result). A retried result replaces the earlier one, so a run
holds exactly one row per (item, scorer). Timestamps are ISO 8601 UTC.

The out file gets one JSON line per result, ``{"id", "scorer", …}``, written and flushed as it
completes and fsync'd at least every `FSYNC_INTERVAL_S` seconds and on close. Resuming scans it
(`scan_out_file`: a torn last line left by a kill is repaired) and, when retried results left
older lines behind, rewrites it atomically with one line per (item, scorer) (`compact_out_file`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .datasets import item_key

SCHEMA_VERSION = 1
FSYNC_INTERVAL_S = 0.5
DEFAULT_RELATIVE = Path(".scorespec") / "store.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    data TEXT,
    out TEXT,
    scorers TEXT NOT NULL DEFAULT '[]',
    config TEXT NOT NULL DEFAULT '{}',
    summary TEXT,
    verdict TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    position INTEGER,
    item TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    spec_hash TEXT,
    model TEXT,
    usage TEXT,
    result TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id, scorer_id)
);
CREATE TABLE IF NOT EXISTS calibrations (
    run_id TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    spec_hash TEXT,
    model TEXT,
    figures TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, scorer_id)
);
CREATE INDEX IF NOT EXISTS runs_out ON runs (out);
"""


def default_store_path() -> Path:
    """``$SCORESPEC_STORE`` or ``./.scorespec/store.sqlite``."""
    env = os.environ.get("SCORESPEC_STORE")
    return Path(env) if env else Path.cwd() / DEFAULT_RELATIVE


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dumps(value: Any) -> str:
    """JSON text for the store and the out file: UTF-8 as is, falling back to ASCII escapes when
    the value holds text that cannot be encoded (a lone surrogate from a JSON ``\\ud800``)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, default=str)
    return text


class Store:
    """A handle on the SQLite store. Thread-safe (one connection, a lock); use as a context
    manager or call `close()`. `path`: a file path, ``":memory:"``, or None for the default."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None and str(path) != ":memory:" else (
            default_store_path() if path is None else None)
        target = str(self.path) if self.path is not None else ":memory:"
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(target, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout = 30000")
        if self.path is not None:
            self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        with self._lock:
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    # -- runs ---------------------------------------------------------------------------------

    def begin_run(self, run_id: str, *, data: str | None = None, out: str | None = None,
                  scorers: list[str] | None = None, config: dict[str, Any] | None = None) -> None:
        """Create the run, or mark an existing one running again (on resume)."""
        stamp = now()
        self._exec(
            "INSERT INTO runs (run_id, status, data, out, scorers, config, created_at, updated_at) "
            "VALUES (?, 'running', ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(run_id) DO UPDATE SET status='running', data=coalesce(excluded.data, data), "
            "out=coalesce(excluded.out, out), scorers=excluded.scorers, config=excluded.config, "
            "updated_at=excluded.updated_at",
            (run_id, data, out, dumps(scorers or []), dumps(config or {}), stamp, stamp))

    def finish_run(self, run_id: str, *, status: str, summary: dict[str, Any] | None = None,
                   verdict: str | None = None) -> None:
        """Record the run's end: status ``finished`` or ``interrupted``, its summary and verdict."""
        self._exec("UPDATE runs SET status=?, summary=?, verdict=?, updated_at=? WHERE run_id=?",
                   (status, dumps(summary) if summary is not None else None, verdict, now(), run_id))

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """One run (a unique prefix of its id is enough), with counts per status; None if absent.
        Raises `LookupError` when the prefix matches several runs."""
        rows = self._exec("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchall()
        if not rows:
            rows = self._exec("SELECT * FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY created_at",
                              (_like_prefix(run_id),)).fetchall()
            if len(rows) > 1:
                raise LookupError(f"{run_id!r} matches {len(rows)} runs: "
                                  + ", ".join(r[0] for r in rows[:5]))
        if not rows:
            return None
        return self._run_dict(rows[0])

    def run_for_out(self, out: str) -> str | None:
        """The id of the latest run that wrote `out` (an absolute path), if any."""
        row = self._exec("SELECT run_id FROM runs WHERE out = ? ORDER BY created_at DESC LIMIT 1", (out,)).fetchone()
        return row[0] if row else None

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first, each with counts per status."""
        sql = "SELECT * FROM runs ORDER BY created_at DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [self._run_dict(row) for row in self._exec(sql).fetchall()]

    def _run_dict(self, row: tuple[Any, ...]) -> dict[str, Any]:
        keys = ("run_id", "status", "data", "out", "scorers", "config", "summary", "verdict", "created_at",
                "updated_at")
        run = dict(zip(keys, row))
        for key in ("scorers", "config", "summary"):
            run[key] = json.loads(run[key]) if run[key] else None
        counts = {"scored": 0, "not_scorable": 0, "failed": 0}
        for status, n in self._exec("SELECT status, count(*) FROM results WHERE run_id=? GROUP BY status",
                                    (run["run_id"],)):
            counts[status] = n
        run["counts"] = counts
        run["items"] = self._exec("SELECT count(*) FROM items WHERE run_id=?", (run["run_id"],)).fetchone()[0]
        return run

    # -- items and results --------------------------------------------------------------------

    def record_item(self, run_id: str, item_id: str, position: int | None, item: dict[str, Any]) -> None:
        """Store an item's data (kept from its first recording)."""
        self._exec("INSERT OR IGNORE INTO items (run_id, item_id, position, item, created_at) VALUES (?, ?, ?, ?, ?)",
                   (run_id, item_id, position, dumps(item), now()))

    def record_result(self, run_id: str, item_id: str, scorer_id: str, result: dict[str, Any],
                      status: str | None = None) -> None:
        """Store (or replace) one result; `result` is the camelCase JSON dict of a `ScoreResult`."""
        self.record_results(run_id, [(item_id, scorer_id, result, status)])

    def record_calibration(self, run_id: str, scorer_id: str, spec_hash: str | None, model: str | None,
                           figures: dict[str, Any]) -> None:
        """Store (or replace) the calibration figures of a run's scorer (`engine.calibration`)."""
        self._exec("INSERT OR REPLACE INTO calibrations (run_id, scorer_id, spec_hash, model, figures, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (run_id, scorer_id, spec_hash, model, dumps(figures), now()))

    def calibrations(self, scorer_id: str | None = None) -> list[dict[str, Any]]:
        """Stored calibrations, newest first: ``{run_id, scorer, spec_hash, model, created_at,
        figures}``; only `scorer_id`'s when given."""
        sql = "SELECT run_id, scorer_id, spec_hash, model, created_at, figures FROM calibrations"
        rows = self._exec(sql + (" WHERE scorer_id=?" if scorer_id else "") + " ORDER BY created_at DESC",
                          (scorer_id,) if scorer_id else ()).fetchall()
        return [{"run_id": r[0], "scorer": r[1], "spec_hash": r[2], "model": r[3], "created_at": r[4],
                 "figures": json.loads(r[5])} for r in rows]

    def record_results(self, run_id: str, rows: list[tuple[str, str, dict[str, Any], str | None]]) -> None:
        """Store several results in one transaction: (item id, scorer id, result JSON, status)."""
        stamp = now()
        params = []
        for item_id, scorer_id, result, status in rows:
            status = status or result_status(result)
            params.append((run_id, item_id, scorer_id, status, result.get("score") if status == "scored" else None,
                           result.get("specHash"), result.get("model"), dumps(result.get("usage")), dumps(result),
                           stamp, stamp))
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO results (run_id, item_id, scorer_id, status, score, spec_hash, model, usage, result, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(run_id, item_id, scorer_id) DO UPDATE SET status=excluded.status, "
                    "score=excluded.score, spec_hash=excluded.spec_hash, model=excluded.model, usage=excluded.usage, "
                    "result=excluded.result, updated_at=excluded.updated_at", params)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def statuses(self, run_id: str) -> Iterator[tuple[str, str, str, float | None]]:
        """(item id, scorer id, status, score) of every stored result of a run."""
        yield from self._exec("SELECT item_id, scorer_id, status, score FROM results WHERE run_id=?", (run_id,))

    def results(self, run_id: str, batch: int = 500) -> Iterator[dict[str, Any]]:
        """Every result of a run as an out-file line: ``{"id", "scorer", …result JSON}``, in the
        order they were first written (read in batches, not all at once)."""
        last = 0
        while True:
            rows = self._exec(
                "SELECT r.rowid, r.item_id, r.scorer_id, r.result, i.item FROM results r LEFT JOIN items i "
                "ON i.run_id = r.run_id AND i.item_id = r.item_id WHERE r.run_id=? AND r.rowid > ? "
                "ORDER BY r.rowid LIMIT ?", (run_id, last, batch)).fetchall()
            if not rows:
                return
            for rowid, item_id, scorer_id, result, item in rows:
                last = rowid
                data = json.loads(result)
                original = json.loads(item)["id"] if item else item_id
                yield {"id": original, "scorer": scorer_id,
                       **{k: v for k, v in data.items() if k not in ("id", "scorer")}}


# --- the out file (JSONL) ------------------------------------------------------------------------


@dataclass
class PriorResults:
    """What an earlier attempt of a run left: the last status and score per (item key,
    scorer id), the run id it used, and whether the out file needs a compacting rewrite."""

    run_id: str | None = None
    records: dict[tuple[str, str], tuple[str, float | None]] = field(default_factory=dict)
    untidy: bool = False
    repaired: str | None = None  # a message when a torn last line was repaired

    def done(self, key: tuple[str, str]) -> bool:
        found = self.records.get(key)
        return found is not None and found[0] != "failed"


def scan_out_file(path: Path) -> PriorResults:
    """Read an existing out file for resuming: repair a torn last line (a final line without its
    newline is kept when it is a whole JSON object, else truncated away), and collect the last
    result per (item, scorer). Unreadable lines and repeated keys mark the file for compaction."""
    prior = PriorResults()
    good_end = 0
    with open(path, "r+b") as f:
        offset = 0
        for raw in f:
            end = offset + len(raw)
            complete = raw.endswith(b"\n")
            record = _parse_line(raw)
            if not complete:
                if record is not None:
                    f.seek(end)
                    f.write(b"\n")
                    good_end = end + 1
                    prior.repaired = f"{path}: completed a last line that lacked its newline"
                else:
                    f.truncate(good_end)
                    prior.repaired = f"{path}: removed a torn last line ({len(raw)} bytes) left by an interrupted run"
                    break
            else:
                good_end = end
            offset = end
            if record is None:
                if raw.strip():
                    prior.untidy = True
                continue
            key = (item_key(record["id"]), str(record["scorer"]))
            if key in prior.records:
                prior.untidy = True
            status = result_status(record)
            prior.records[key] = (status, record.get("score") if status == "scored" else None)
            if prior.run_id is None and isinstance(record.get("runId"), str):
                prior.run_id = record["runId"]
        f.flush()
        os.fsync(f.fileno())
    return prior


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or "id" not in record or "scorer" not in record:
        return None
    return record


def iter_out_lines(path: Path) -> Iterator[tuple[tuple[str, str], bytes, dict[str, Any]]]:
    with open(path, "rb") as f:
        for raw in f:
            record = _parse_line(raw)
            if record is not None and raw.endswith(b"\n"):
                yield (item_key(record["id"]), str(record["scorer"])), raw, record


def compact_out_file(path: Path) -> None:
    """Rewrite the out file keeping only the last line per (item, scorer), in file order,
    atomically (a temporary file, fsync'd, then renamed over it)."""
    last: dict[tuple[str, str], int] = {}
    for index, (key, _raw, _record) in enumerate(iter_out_lines(path)):
        last[key] = index
    tmp = path.with_name(path.name + ".compact.tmp")
    with open(tmp, "wb") as out:
        for index, (key, raw, _record) in enumerate(iter_out_lines(path)):
            if last.get(key) == index:
                out.write(raw)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


class OutWriter:
    """Appends result lines to the out file: one write and flush per line, fsync at most every
    `FSYNC_INTERVAL_S` seconds and on close."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "ab", buffering=0)
        self._synced = time.monotonic()
        self._dirty = False

    def write(self, line: dict[str, Any]) -> None:
        # an unbuffered write may write fewer bytes than given (a signal, a full disk): write
        # the rest, so a line is never left half-written with the next one appended after it
        data = memoryview((dumps(line) + "\n").encode("utf-8"))
        while data:
            data = data[self._f.write(data) or 0:]
        self._dirty = True
        if time.monotonic() - self._synced >= FSYNC_INTERVAL_S:
            self.sync()

    def sync(self) -> None:
        if self._dirty:
            os.fsync(self._f.fileno())
            self._dirty = False
        self._synced = time.monotonic()

    def close(self) -> None:
        if not self._f.closed:
            self.sync()
            self._f.close()


def result_status(result: dict[str, Any]) -> str:
    """``failed``, ``not_scorable`` or ``scored`` for a result's JSON dict."""
    if result.get("error"):
        return "failed"
    if result.get("notScorable"):
        return "not_scorable"
    return "scored"


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


__all__ = ["Store", "default_store_path", "result_status", "dumps", "OutWriter", "PriorResults", "scan_out_file",
           "iter_out_lines", "compact_out_file"]

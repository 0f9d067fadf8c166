"""The embedded SQLite store holding every eval run: its items, results and calibrations.
(A run's JSONL out file is `engine.run.outfile`.)

Default path: ``$SCORESPEC_STORE``, else ``.scorespec/store.sqlite`` under the current directory.

Tables (`engine.run.store_schema`: the DDL, versioned, and the migration of older stores)::

    runs     run_id PK, status (running | finished | interrupted), data, out, scorers (JSON:
             the scorers' labels), config (JSON), summary (JSON), verdict, created_at, updated_at
    items    (run_id, item_id) PK, position, item (JSON: id, input, output, ground_truth,
             context and the rest), created_at
    results  (run_id, item_id, label) PK, scorer_id, status (scored | not_scorable | failed),
             score, spec_hash, model, usage (JSON), result (JSON, camelCase as
             `ScoreResult.to_json_dict`), created_at, updated_at
    calibrations  (run_id, scorer_id) PK, spec_hash, model, figures (JSON: `engine.analysis.calibration.
             Calibration.to_json_dict`), created_at — the latest calibration of a run
    specs    spec_hash PK, scorer_id, sources (JSON: [[file, text], …], the spec first, then what
             it extends), templates (JSON: name → text), created_at — every spec version a run
             used; a run's config names each label's spec hash (`engine.spec.snapshot`)

Item ids are stored as text (`engine.run.items.item_key`: a string id as is, any other id as JSON,
so 1 → ``1``). Each result is committed on its own as it completes (``synchronous=NORMAL``: a
killed process loses no committed result). A retried result replaces the earlier one, so a run
holds exactly one row per (item, label): a label is a scorer's name in its run, its id unless
given. Timestamps are ISO 8601 UTC.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core import environment
from ..core.result import json_text, result_status
from .store_schema import prepare

DEFAULT_RELATIVE = Path(".scorespec") / "store.sqlite"


def default_store_path() -> Path:
    """``$SCORESPEC_STORE`` or ``./.scorespec/store.sqlite``."""
    env = environment.value("SCORESPEC_STORE")
    return Path(env) if env else Path.cwd() / DEFAULT_RELATIVE


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Store:
    """A handle on the SQLite store. Thread-safe (one connection, a lock); use as a context
    manager or call `close()`. `path`: a file path, ``":memory:"``, or None for the default.
    Opening a store written by an older scorespec migrates it (`engine.run.store_schema`); raises
    `engine.run.store_schema.StoreVersionError` for one written by a newer scorespec."""

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
        try:
            with self._lock:
                prepare(self._db, target)
        except BaseException:
            self._db.close()
            raise

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
            (run_id, data, out, json_text(scorers or []), json_text(config or {}), stamp, stamp))

    def finish_run(self, run_id: str, *, status: str, summary: dict[str, Any] | None = None,
                   verdict: str | None = None) -> None:
        """Record the run's end: status ``finished`` or ``interrupted``, its summary and verdict."""
        self._exec("UPDATE runs SET status=?, summary=?, verdict=?, updated_at=? WHERE run_id=?",
                   (status, json_text(summary) if summary is not None else None, verdict, now(), run_id))

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
                   (run_id, item_id, position, json_text(item), now()))

    def record_result(self, run_id: str, item_id: str, label: str, result: dict[str, Any],
                      status: str | None = None) -> None:
        """Store (or replace) the result of the scorer `label` on an item; `result` is the
        camelCase JSON dict of a `ScoreResult` (its ``scorer`` is the scorer id)."""
        self.record_results(run_id, [(item_id, label, result, status)])

    def record_calibration(self, run_id: str, scorer_id: str, spec_hash: str | None, model: str | None,
                           figures: dict[str, Any]) -> None:
        """Store (or replace) the calibration figures of a run's scorer (`engine.analysis.calibration`)."""
        self._exec("INSERT OR REPLACE INTO calibrations (run_id, scorer_id, spec_hash, model, figures, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (run_id, scorer_id, spec_hash, model, json_text(figures), now()))

    def record_spec(self, spec_hash: str, scorer_id: str, sources: Any, templates: Any) -> None:
        """Keep a spec version's full text (kept once per hash): `sources` as (file, text) pairs,
        the spec's own first; `templates` as name → text."""
        self._exec("INSERT OR IGNORE INTO specs (spec_hash, scorer_id, sources, templates, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", (spec_hash, scorer_id, json_text([list(p) for p in sources]),
                                              json_text(dict(templates)), now()))

    def spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A kept spec version: ``{spec_hash, scorer, sources: [(file, text)…], templates: {name:
        text}, created_at}``, or None when this store has no text for the hash."""
        row = self._exec("SELECT spec_hash, scorer_id, sources, templates, created_at FROM specs WHERE spec_hash=?",
                         (spec_hash,)).fetchone()
        if row is None:
            return None
        return {"spec_hash": row[0], "scorer": row[1], "sources": [tuple(p) for p in json.loads(row[2])],
                "templates": json.loads(row[3]), "created_at": row[4]}

    def calibrations(self, scorer_id: str | None = None) -> list[dict[str, Any]]:
        """Stored calibrations, newest first: ``{run_id, scorer, spec_hash, model, created_at,
        figures}``; only `scorer_id`'s when given."""
        sql = "SELECT run_id, scorer_id, spec_hash, model, created_at, figures FROM calibrations"
        rows = self._exec(sql + (" WHERE scorer_id=?" if scorer_id else "") + " ORDER BY created_at DESC",
                          (scorer_id,) if scorer_id else ()).fetchall()
        return [{"run_id": r[0], "scorer": r[1], "spec_hash": r[2], "model": r[3], "created_at": r[4],
                 "figures": json.loads(r[5])} for r in rows]

    def record_results(self, run_id: str, rows: list[tuple[str, str, dict[str, Any], str | None]]) -> None:
        """Store several results in one transaction: (item id, label, result JSON, status)."""
        stamp = now()
        params = []
        for item_id, label, result, status in rows:
            status = status or result_status(result)
            score = result.get("score") if status == "scored" else None
            params.append((run_id, item_id, label, result.get("scorer") or label, status, score,
                           result.get("specHash"), result.get("model"), json_text(result.get("usage")),
                           json_text(result), stamp, stamp))
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO results (run_id, item_id, label, scorer_id, status, score, spec_hash, model, usage, "
                    "result, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(run_id, item_id, label) DO UPDATE SET scorer_id=excluded.scorer_id, "
                    "status=excluded.status, score=excluded.score, spec_hash=excluded.spec_hash, "
                    "model=excluded.model, usage=excluded.usage, result=excluded.result, "
                    "updated_at=excluded.updated_at", params)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def items(self, run_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(item key, item data) of every item of a run, in the order the run recorded them."""
        for item_id, item in self._exec("SELECT item_id, item FROM items WHERE run_id=? ORDER BY position, rowid",
                                        (run_id,)).fetchall():
            yield item_id, json.loads(item)

    def statuses(self, run_id: str) -> Iterator[tuple[str, str, str, float | None]]:
        """(item id, label, status, score) of every stored result of a run."""
        yield from self._exec("SELECT item_id, label, status, score FROM results WHERE run_id=?", (run_id,))

    def results(self, run_id: str, batch: int = 500, *, with_items: bool = False) -> Iterator[dict[str, Any]]:
        """Every result of a run as an out-file line: ``{"id", "scorer", "label", …result JSON}``,
        in the order they were first written (read in batches, not all at once); `with_items`
        adds the item's stored data under ``"item"`` (None when not recorded)."""
        last = 0
        while True:
            rows = self._exec(
                "SELECT r.rowid, r.item_id, r.scorer_id, r.label, r.result, i.item FROM results r LEFT JOIN items i "
                "ON i.run_id = r.run_id AND i.item_id = r.item_id WHERE r.run_id=? AND r.rowid > ? "
                "ORDER BY r.rowid LIMIT ?", (run_id, last, batch)).fetchall()
            if not rows:
                return
            for rowid, item_id, scorer_id, label, result, item in rows:
                last = rowid
                data = json.loads(result)
                original = json.loads(item)["id"] if item else item_id
                line = {"id": original, "scorer": scorer_id, "label": label,
                        **{k: v for k, v in data.items() if k not in ("id", "scorer", "label")}}
                if with_items:
                    line["item"] = json.loads(item) if item else None
                yield line


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


__all__ = ["Store", "default_store_path"]

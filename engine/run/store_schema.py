"""The store's tables, versioned with SQLite's ``PRAGMA user_version``, and their migrations.

Version 1 keyed results by (run, item, scorer id). Version 2 keys them by (run, item, label) —
a scorer's name in its run, its id unless given — so one run can hold two versions of a scorer;
the scorer id stays a column. `prepare` brings a store of any earlier version up to
`SCHEMA_VERSION` in one transaction (a version-1 store's results get their scorer id as label),
so a store written before labels existed opens and resumes. Version 3 adds ``specs``: the
full text of every spec version a run used (by spec hash), so it can be shown and run again. A
store written by a newer scorespec is refused rather than misread.
"""

from __future__ import annotations

import sqlite3

from ..core.errors import UserError

SCHEMA_VERSION = 3

RUNS = """CREATE TABLE IF NOT EXISTS runs (
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
)"""

ITEMS = """CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    position INTEGER,
    item TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id)
)"""

RESULTS = """CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    label TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    spec_hash TEXT,
    model TEXT,
    usage TEXT,
    result TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id, label)
)"""

CALIBRATIONS = """CREATE TABLE IF NOT EXISTS calibrations (
    run_id TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    spec_hash TEXT,
    model TEXT,
    figures TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, scorer_id)
)"""

SPECS = """CREATE TABLE IF NOT EXISTS specs (
    spec_hash TEXT PRIMARY KEY,
    scorer_id TEXT NOT NULL,
    sources TEXT NOT NULL,
    templates TEXT NOT NULL,
    created_at TEXT NOT NULL
)"""

TABLES = (RUNS, ITEMS, RESULTS, CALIBRATIONS, SPECS, "CREATE INDEX IF NOT EXISTS runs_out ON runs (out)")

_RESULT_COLUMNS = "status, score, spec_hash, model, usage, result, created_at, updated_at"


class StoreVersionError(UserError, RuntimeError):
    """The store was written by a newer scorespec (a schema version above `SCHEMA_VERSION`)."""


def prepare(db: sqlite3.Connection, where: str) -> None:
    """Create the tables of a new store, or migrate an older one, up to `SCHEMA_VERSION`, in one
    transaction (another process opening the same store at once waits, then finds it done).
    `db` must be in autocommit mode (``isolation_level=None``); `where` names the store in
    errors. Raises `StoreVersionError` for a store of a newer version."""
    if _version(db, where) == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if _version(db, where) < SCHEMA_VERSION:
            if _columns(db, "results") and "label" not in _columns(db, "results"):
                _results_keyed_by_label(db)
            for statement in TABLES:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _version(db: sqlite3.Connection, where: str) -> int:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreVersionError(f"{where}: the store has schema version {version}, written by a newer scorespec; "
                                f"this one reads up to version {SCHEMA_VERSION}")
    return version


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def _results_keyed_by_label(db: sqlite3.Connection) -> None:
    """Version 1 → 2: rebuild ``results`` with a ``label`` column in its key, filled from the
    scorer id, rows kept in the order they were first written."""
    db.execute("ALTER TABLE results RENAME TO results_v1")
    db.execute(RESULTS)
    db.execute(f"INSERT INTO results (run_id, item_id, label, scorer_id, {_RESULT_COLUMNS}) "
               f"SELECT run_id, item_id, scorer_id, scorer_id, {_RESULT_COLUMNS} FROM results_v1 ORDER BY rowid")
    db.execute("DROP TABLE results_v1")


__all__ = ["SCHEMA_VERSION", "TABLES", "StoreVersionError", "prepare"]

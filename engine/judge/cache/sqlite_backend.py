"""The judge-call cache in an embedded SQLite file (`SQLiteJudgeCache`): the default backend of
`engine.judge.cache.base.JudgeCache`, safe to share between threads and processes on one machine.

Table (the file's ``application_id`` marks it as a scorespec judge cache, ``user_version`` its
format; any other SQLite database is left untouched)::

    answers  key TEXT PK (`CallIdentity.key()`), value BLOB (`encode_entry`: JSON naming its key),
             checksum TEXT (SHA-256 of value), model TEXT, created_at REAL (epoch seconds)

Safety: write-ahead logging (readers never wait for a writer), each answer committed in its own
short ``BEGIN IMMEDIATE`` transaction, a busy timeout so that processes writing at once wait for
each other rather than fail, ``synchronous=NORMAL`` (a killed process loses no committed answer;
an uncommitted one is rolled back whole). Every value is checked against its checksum on read:
a torn, corrupt or unparsable entry is deleted and counted as a miss, never served. A file that
cannot be opened or used (not a database, another program's database, locked past the timeout,
read-only, corrupt) is reported once and the cache then behaves as empty and drops writes.

Connections: one per cache object and process, shared by threads under a lock (sqlite3 objects do
not cross threads by default, hence ``check_same_thread=False`` and the lock); a process made by
``fork`` opens its own on first use and never touches its parent's. The file is opened on first
use, so a run that never asks the judge creates nothing.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from .base import CachedAnswer, CacheStats, JudgeCacheWarning, decode_entry, encode_entry

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SQLiteJudgeCache"]

#: SQLite ``application_id`` of a judge-cache file (the bytes ``SSJC``).
APPLICATION_ID = int.from_bytes(b"SSJC", "big")
#: ``user_version`` of the table layout below.
SCHEMA_VERSION = 1
#: How long a write waits for another process's transaction before the cache gives up (seconds).
DEFAULT_BUSY_TIMEOUT_S = 5.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    checksum TEXT NOT NULL,
    model TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS answers_created_at ON answers (created_at);
CREATE INDEX IF NOT EXISTS answers_model ON answers (model);
"""

_log = logging.getLogger(__name__)

# Connections a forked process inherited from its parent, kept referenced so that they are never
# closed (by garbage collection) in the child.
_INHERITED: list[sqlite3.Connection] = []


class _Unusable(Exception):
    """The file opens but is not a judge cache this version can use."""


def _header(db: sqlite3.Connection) -> tuple[int, int]:
    """The file's application id and its number of schema objects, read in one snapshot (two
    statements outside a transaction could straddle another process creating the cache)."""
    in_transaction = db.in_transaction
    if not in_transaction:
        db.execute("BEGIN")
    try:
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    finally:
        if not in_transaction:
            db.execute("COMMIT")
    return app_id, tables


class SQLiteJudgeCache:
    """The judge-call cache in the SQLite file `path` (created with its folder on first use).

    `busy_timeout_s`: how long a call waits for another process's lock before the cache is
    disabled. Implements `engine.judge.cache.base.JudgeCache`; never raises into the caller for a
    storage failure (see the module docstring). Use as a context manager or call `close()`.
    """

    #: Test hook, None in normal use: called as ``hook(point, n)`` while the n-th answer of this
    #: object is stored, at ``"before_commit"`` (its row written, the transaction still open) and
    #: at ``"after_commit"``. A test makes it call ``os._exit`` to kill the process there.
    write_hook: ClassVar[Callable[[str, int], None] | None] = None

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        #: Why the cache is not used (set once, with a `JudgeCacheWarning`), or None.
        self.disabled_reason: str | None = None
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._hits = self._misses = self._writes = self._discarded = self._dropped = 0

    @property
    def location(self) -> str:
        """The file's path, as messages and `stats` show it."""
        return str(self.path)

    def __repr__(self) -> str:
        state = f", disabled={self.disabled_reason!r}" if self.disabled_reason else ""
        return f"SQLiteJudgeCache({str(self.path)!r}{state})"

    def __enter__(self) -> SQLiteJudgeCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the connection (callers hold self._lock) ---------------------------------------------

    def _connection(self) -> sqlite3.Connection | None:
        """This process's open connection, opened now if needed; None when disabled."""
        if self.disabled_reason is not None:
            return None
        if self._db is not None and self._pid == os.getpid():
            return self._db
        if self._db is not None:  # made by the parent before a fork: never used, and never closed
            _INHERITED.append(self._db)  # here (closing it could checkpoint or unlock the parent's file)
        self._db = None
        try:
            self._db = self._open()
        except _Unusable as exc:
            self._disable(str(exc))
            return None
        except (sqlite3.Error, OSError) as exc:
            self._disable(f"cannot be opened ({exc})")
            return None
        self._pid = os.getpid()
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, isolation_level=None,
                             check_same_thread=False)
        try:
            app_id, tables = _header(db)
            if app_id == 0 and tables == 0:  # a new (or empty) file: make it a judge cache
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect before the first table
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("BEGIN IMMEDIATE")
                try:
                    app_id, tables = _header(db)  # again under the write lock: another process may have made it
                    if app_id == 0 and tables == 0:
                        for statement in filter(str.strip, _SCHEMA.split(";")):
                            db.execute(statement)
                        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        app_id = APPLICATION_ID
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
            if app_id != APPLICATION_ID:
                raise _Unusable("is not a scorespec judge cache (another program's SQLite database; "
                                "left untouched)")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                raise _Unusable(f"has format {version}, this scorespec reads format {SCHEMA_VERSION} "
                                "(delete the file or choose another with --cache)")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            db.close()
            raise
        return db

    def _disable(self, reason: str) -> None:
        """Stop using the file: report `reason` once, drop the connection."""
        if self.disabled_reason is None:
            self.disabled_reason = reason
            message = f"judge cache {self.path} {reason}; going on without the cache"
            try:
                warnings.warn(JudgeCacheWarning(message), stacklevel=4)
            except Warning:  # warnings turned into errors: still never raise into the judge call
                _log.warning(message)
        if self._db is not None and self._pid == os.getpid():
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None

    # -- JudgeCache ---------------------------------------------------------------------------

    def get(self, key: str) -> CachedAnswer | None:
        """The answer stored under `key`, or None: absent, discarded (torn, corrupt, unparsable:
        deleted then) or the cache disabled."""
        with self._lock:
            db = self._connection()
            row = None
            if db is not None:
                try:
                    row = db.execute("SELECT value, checksum FROM answers WHERE key = ?", (key,)).fetchone()
                except sqlite3.Error as exc:
                    self._disable(f"cannot be read ({exc})")
            if row is None:
                self._misses += 1
                return None
            answer = decode_entry(key, row[0], row[1])
            if answer is None:
                self._discarded += 1
                self._misses += 1
                try:  # only this bad row: another process may have replaced it meanwhile
                    db.execute("DELETE FROM answers WHERE key = ? AND value = ?", (key, row[0]))
                except sqlite3.Error as exc:
                    self._disable(f"cannot be written ({exc})")
                return None
            self._hits += 1
            return answer

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store `answer` under `key` (replacing any earlier one) in its own transaction. Raises
        ValueError for an empty key or an answer that must not be stored (no data, not JSON); a
        storage failure disables the cache instead, and a disabled cache drops the write."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"a cache key is a non-empty string, got {key!r}")
        value, checksum = encode_entry(key, answer)
        with self._lock:
            db = self._connection()
            if db is None:
                self._dropped += 1
                return
            hook = type(self).write_hook
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.execute("INSERT OR REPLACE INTO answers (key, value, checksum, model, created_at) "
                               "VALUES (?, ?, ?, ?, ?)", (key, value, checksum, answer.model, float(answer.created_at)))
                    if hook is not None:
                        hook("before_commit", self._writes + 1)
                    db.execute("COMMIT")
                except BaseException:
                    try:
                        db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    raise
            except sqlite3.Error as exc:
                self._disable(f"cannot be written ({exc})")
                self._dropped += 1
                return
            self._writes += 1
            if hook is not None:
                hook("after_commit", self._writes)

    def stats(self) -> CacheStats:
        """Entries, size on disk (database + write-ahead log), entries per model, oldest and newest
        `created_at`, and this object's counters. A missing file is reported empty, not created."""
        with self._lock:
            per_model: dict[str, int] = {}
            oldest = newest = None
            db = self._connection() if self._db is not None or self.path.exists() else None
            if db is not None:
                try:
                    rows = db.execute("SELECT model, count(*), min(created_at), max(created_at) "
                                      "FROM answers GROUP BY model").fetchall()
                except sqlite3.Error as exc:
                    self._disable(f"cannot be read ({exc})")
                    rows = []
                for model, count, low, high in rows:
                    per_model[model] = count
                    oldest = low if oldest is None else min(oldest, low)
                    newest = high if newest is None else max(newest, high)
            size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.is_file())
            return CacheStats(location=str(self.path), entries=sum(per_model.values()), size_bytes=size,
                              per_model=per_model, oldest=oldest, newest=newest, hits=self._hits,
                              misses=self._misses, writes=self._writes, discarded=self._discarded,
                              dropped_writes=self._dropped, disabled_reason=self.disabled_reason)

    def clear(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """Delete the entries created more than `older_than_s` seconds ago and/or whose model is
        `model` (both: entries matching both; neither: all), then return freed pages to the file
        system. Returns how many were deleted (0 when the cache is disabled or the file absent).
        Raises ValueError for a negative or non-finite `older_than_s`."""
        if older_than_s is not None and (isinstance(older_than_s, bool) or not isinstance(older_than_s, (int, float))
                                         or not math.isfinite(older_than_s) or older_than_s < 0):
            raise ValueError(f"older_than_s: a finite number of seconds >= 0 is needed, got {older_than_s!r}")
        where, params = [], []
        if older_than_s is not None:
            where.append("created_at < ?")
            params.append(time.time() - older_than_s)
        if model is not None:
            where.append("model = ?")
            params.append(model)
        sql = "DELETE FROM answers" + (" WHERE " + " AND ".join(where) if where else "")
        with self._lock:
            db = self._connection() if self._db is not None or self.path.exists() else None
            if db is None:
                return 0
            try:
                deleted = db.execute(sql, params).rowcount
                if deleted:
                    db.executescript("PRAGMA incremental_vacuum")  # executescript steps it to the end
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                self._disable(f"cannot be written ({exc})")
                return 0
            return deleted

    def close(self) -> None:
        """Close this process's connection; a later call opens the file again."""
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                try:
                    self._db.close()
                except sqlite3.Error:
                    pass
            self._db = None

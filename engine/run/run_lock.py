"""One process at a time per run: a lock held while a run (or its resumption) writes.

Two `scorespec eval --resume` of one run started at once would each read the same prior results
and each write every missing result, so the out file and the store would hold every result
twice. `lock_run` takes an exclusive, non-blocking lock on a lock file named after the run — beside
its out file (``OUT.lock``) or, for a run kept only in the store, beside the store
(``STORE.run-<digest>.lock``) — before anything is read, and the second process is refused at
once with `RunInUse`. The lock is the operating system's (``fcntl.flock`` on POSIX,
``msvcrt.locking`` on Windows), so a killed process never leaves a run locked; the lock file is
removed when the run ends.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

__all__ = ["RunInUse", "RunLock", "lock_run", "lock_path"]


class RunInUse(FileExistsError):
    """Another process is scoring this run now (its lock file is held). A `FileExistsError`, as
    an out file that already holds results is, so callers that handle one handle both."""


def lock_path(out: Path | None, run_id: str | None, store_path: Path | None) -> Path | None:
    """The lock file of a run: ``OUT.lock`` beside its out file; without one, a file beside the
    store named by the SHA-256 of the run id (any text may be an id); None when the run has
    neither an out file nor (id and on-disk store) — nothing another process could share."""
    if out is not None:
        return out.with_name(out.name + ".lock")
    if run_id is not None and store_path is not None:
        digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:16]
        return store_path.with_name(f"{store_path.name}.run-{digest}.lock")
    return None


class RunLock:
    """A held run lock; `release()` (idempotent) frees it and removes its file."""

    def __init__(self, path: Path | None, handle: Any = None):
        self.path = path
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            assert self.path is not None
            self.path.unlink(missing_ok=True)  # unlinked while held: a later opener makes a new file
        finally:
            _unlock(handle)
            handle.close()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_run(out: Path | None, run_id: str | None, store: Any = None) -> RunLock:
    """Lock the run written to `out` (absolute path or None) or kept as `run_id` in `store` (a
    `Store`; its ``path``, None in memory). Returns the held `RunLock` (holding nothing when the
    run has no lock file, see `lock_path`). Raises `RunInUse` when another process holds it,
    naming the file; `OSError` when the lock file cannot be created."""
    path = lock_path(out, run_id, getattr(store, "path", None))
    if path is None:
        return RunLock(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle = open(path, "a+b")  # noqa: SIM115 - held until release()
        if not _try_lock(handle):
            handle.close()
            what = f"its out file {out}" if out is not None else f"run {run_id} in the store {store}"
            raise RunInUse(f"{what} is being written by another scorespec process now (lock {path}); "
                           "wait for it to finish, or stop it, then resume the run")
        try:
            same = os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return RunLock(path, handle)
        _unlock(handle)  # the holder released and removed this file between our open and lock
        handle.close()


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: Any) -> bool:
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(handle: Any) -> None:
        try:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        except OSError:
            pass
else:
    import fcntl

    def _try_lock(handle: Any) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(handle: Any) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

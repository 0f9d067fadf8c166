"""The embedded models running on this machine, and the CPU threads each one took.

llama.cpp's worker threads meet at a barrier after every step of a layer; two models whose
threads add up to more than the cores wait at those barriers for threads the other model holds,
and both slow down many times over (measured on 2 cores: two jobs of 2 threads each took 7×
their time alone; see the docs' Performance page). So a model loaded without an explicit thread
count takes the CPUs no other embedded model of this user has taken, at least one
(`default_threads`).

Each loaded model holds a claim while it lives: a small file in `claims_dir()` naming its thread
count, locked (``flock``) by the process. A claim whose lock can be taken belongs to a process
that ended, and is removed. Without ``fcntl`` (Windows) no claim is made or seen.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import IO

from ..core import environment

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["ThreadClaim", "claim_threads", "claims_dir", "default_threads", "threads_taken"]


def claims_dir() -> Path:
    """Where claims live: ``$SCORESPEC_LOCAL_JOBS``, else a folder of this user's in the system's
    temporary folder (shared by every process of the user, whatever its caches)."""
    env = environment.value("SCORESPEC_LOCAL_JOBS")
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / f"scorespec-local-jobs-{os.getuid() if hasattr(os, 'getuid') else 0}"


class ThreadClaim:
    """This process's claim of `threads` CPU threads, held until `release` (or the process ends)."""

    def __init__(self, threads: int, path: Path | None, handle: IO[str] | None):
        self.threads = threads
        self.path = path
        self._handle = handle

    def release(self) -> None:
        """Give the threads back (idempotent)."""
        if self._handle is not None:
            self._handle.close()  # closing the file drops its lock
            self._handle = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def threads_taken(folder: Path | None = None) -> int:
    """The threads that the live claims of other processes hold (0 without ``fcntl``, or when the
    folder cannot be read). Claims of processes that ended are removed."""
    if fcntl is None:
        return 0
    folder = folder or claims_dir()
    total = 0
    try:
        paths = list(folder.glob("*.json"))
    except OSError:
        return 0
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # held: a live model
                    total += int(json.loads(handle.read() or "{}").get("threads", 1))
                    continue
                # not held: its process ended (ours hold theirs until released)
            path.unlink(missing_ok=True)
        except (OSError, ValueError):
            continue
    return total


def claim_threads(threads: int | None, folder: Path | None = None, cpus: int = 1) -> ThreadClaim:
    """Claim CPU threads for this process's model: `threads`, or when None the `cpus` no other
    live model has taken (at least 1). The count is decided and the claim written while this
    process holds a lock on the folder, so two models loading at the same moment do not both
    take every CPU. Never raises: when the claim cannot be written, it is simply not seen by
    others."""
    if fcntl is None:
        return ThreadClaim(threads or cpus, None, None)
    folder = folder or claims_dir()
    name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        guard = os.open(folder, os.O_RDONLY)
    except OSError:
        return ThreadClaim(threads or default_threads(cpus, folder), None, None)
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one claim decided at a time
        threads = threads or default_threads(cpus, folder)
        # written and locked under another name first: a claim is never seen unlocked
        handle = open(folder / f"{name}.new", "w", encoding="utf-8")
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.write(json.dumps({"threads": threads, "pid": os.getpid()}))
        handle.flush()
        os.replace(folder / f"{name}.new", folder / f"{name}.json")
    except OSError:
        return ThreadClaim(threads or cpus, None, None)
    finally:
        os.close(guard)  # closing the folder drops its lock
    return ThreadClaim(threads, folder / f"{name}.json", handle)


def default_threads(cpus: int, folder: Path | None = None) -> int:
    """The threads a model takes when none is set: the `cpus` the other live models have not
    taken, at least 1."""
    return max(1, cpus - threads_taken(folder))

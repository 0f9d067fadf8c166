"""The identity of an embedded judge's weights: the SHA-256 of its GGUF file, computed once.

The judge-call cache keys an embedded model (``local``, ``local-tiny``, ``llamacpp/PATH.gguf``)
by its weights, never by its name or path: two files of one name are two models, and one file
reached by two names is one. Hashing a 1.1 GB file takes seconds, so a file's digest is computed
once and remembered by (resolved path, size in bytes, modification time in ns): in this process,
and across runs in a small JSON sidecar, ``weights-sha256.json`` in the folder the embedded
models live in (`engine.core.paths.cache_dir`). A file whose size or modification time changed is
hashed again. The sidecar is written whole and renamed into place; an unreadable or unwritable
sidecar only costs a new hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

__all__ = ["SIDECAR_NAME", "weights_sha256"]

#: File name of the remembered digests, in the embedded models' folder.
SIDECAR_NAME = "weights-sha256.json"

_CHUNK = 8 << 20
_LOCK = threading.Lock()  # one hash at a time per process (the same file is never read twice at once)
_KNOWN: dict[tuple[str, int, int], str] = {}


def weights_sha256(path: str | os.PathLike[str], *, sidecar: str | os.PathLike[str] | None = None) -> str:
    """The SHA-256 (64 lowercase hex digits) of the file at `path`, remembered by (resolved path,
    size, mtime): in this process, and in `sidecar` (default ``weights-sha256.json`` in
    `engine.core.paths.cache_dir()`). Raises OSError when the file cannot be read."""
    resolved = Path(path).expanduser().resolve()
    stat = resolved.stat()
    fingerprint = (str(resolved), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        found = _KNOWN.get(fingerprint)
        if found is not None:
            return found
        memo_path = Path(sidecar) if sidecar is not None else _default_sidecar()
        memo = _read(memo_path)
        entry = memo.get(str(resolved))
        if isinstance(entry, dict) and entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns \
                and isinstance(entry.get("sha256"), str) and len(entry["sha256"]) == 64:
            digest = entry["sha256"]
        else:
            digest = _hash(resolved)
            memo[str(resolved)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
            _write(memo_path, memo)
        _KNOWN[fingerprint] = digest
        return digest


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _default_sidecar() -> Path:
    from ..core.paths import cache_dir

    return cache_dir() / SIDECAR_NAME


def _read(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write(path: Path, memo: dict) -> None:
    """Write `memo` whole beside `path`, then rename it into place; a failure is ignored (the
    digest is hashed again next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(memo, out, sort_keys=True, indent=1)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass

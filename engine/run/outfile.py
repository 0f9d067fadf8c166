"""A run's JSONL out file: one line per result, appended as it completes.

Each line is ``{"id": <item id>, "scorer": <scorer id>, "label": <its label in the run>, …}``
followed by the result's other fields as `ScoreResult.to_json_dict()` gives them (`out_line`).
A line is keyed by (item, label); a line without ``label`` (written before labels existed) has
its scorer id as label.

`OutWriter` appends a line in one complete write, flushed at once and fsync'd at least every
`FSYNC_INTERVAL_S` seconds and on close, so a kill leaves at most a torn last line:
`repair_last_line` completes or removes it. `iter_out_lines` reads the whole lines back;
`compact_out_file` rewrites the file atomically with the last line per (item, label). Deciding
when to do which is `engine.run.resume`'s part.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.result import json_text
from .items import item_key

FSYNC_INTERVAL_S = 0.5
_TAIL_CHUNK = 64 * 1024

LineKey = tuple[str, str]  # (item key as `engine.run.items.item_key` gives it, label)


def out_line(item_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    """The out-file line of one result: the item's own id, the scorer, its label, then the
    result's other fields (`result` is the camelCase JSON dict of a `ScoreResult`)."""
    return {"id": item_id, "scorer": result["scorer"], "label": result.get("label") or result["scorer"],
            **{k: v for k, v in result.items() if k not in ("scorer", "label")}}


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """A line's record, or None when it is not a JSON object with ``id`` and ``scorer``."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or "id" not in record or "scorer" not in record:
        return None
    return record


def line_label(record: dict[str, Any]) -> str:
    """The label of a parsed line: its ``label``, else (an older line) its scorer id."""
    label = record.get("label")
    return str(label) if label is not None else str(record["scorer"])


def line_key(record: dict[str, Any]) -> LineKey:
    """(item key, label) of a parsed line: the result it holds."""
    return item_key(record["id"]), line_label(record)


def read_lines(path: Path) -> Iterator[tuple[bytes, dict[str, Any] | None]]:
    """Every line of the file with its record (None for an unreadable or incomplete line)."""
    with open(path, "rb") as f:
        for raw in f:
            yield raw, parse_line(raw) if raw.endswith(b"\n") else None


def iter_out_lines(path: Path) -> Iterator[tuple[LineKey, bytes, dict[str, Any]]]:
    """(key, raw bytes, record) of every whole, readable line, in file order."""
    for raw, record in read_lines(path):
        if record is not None:
            yield line_key(record), raw, record


def repair_last_line(path: Path) -> str | None:
    """Repair a torn last line left by a kill: a last line without its newline is completed when
    it is a whole JSON object, else truncated away (fsync'd either way). Returns a message saying
    what was done, or None when the file ended cleanly."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return None
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        start = _last_line_start(f, size)
        f.seek(start)
        tail = f.read()
        if parse_line(tail) is not None:
            f.write(b"\n")
            message = f"{path}: completed a last line that lacked its newline"
        else:
            f.truncate(start)
            message = f"{path}: removed a torn last line ({len(tail)} bytes) left by an interrupted run"
        f.flush()
        os.fsync(f.fileno())
    return message


def _last_line_start(f: Any, size: int) -> int:
    """The offset of the last line of a file that does not end with a newline."""
    position = size
    while position > 0:
        step = min(_TAIL_CHUNK, position)
        position -= step
        f.seek(position)
        newline = f.read(step).rfind(b"\n")
        if newline >= 0:
            return position + newline + 1
    return 0


def compact_out_file(path: Path) -> None:
    """Rewrite the out file keeping only the last line per (item, label), in file order, and
    dropping unreadable lines, atomically (a temporary file, fsync'd, then renamed over it)."""
    last: dict[LineKey, int] = {}
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
        data = memoryview((json_text(line) + "\n").encode("utf-8"))
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


__all__ = ["OutWriter", "out_line", "parse_line", "line_label", "line_key", "read_lines", "iter_out_lines",
           "repair_last_line", "compact_out_file", "FSYNC_INTERVAL_S"]

"""A Ray run's shard files: each actor's results, written as they complete, merged by the driver.

Every scoring actor appends each result it makes, as an out-file line (`engine.run.outfile`), to a
file of its own in the run's shard folder — ``OUT.shards/`` beside the out file, or
``shards/RUN_ID/`` beside the store without one — before handing it to the driver, which keeps
it in the out file and the store (`engine.run.sink`). So a result a stopped driver never
received is not lost: resuming the run merges the shard lines the out file lacks (`recover`),
then scores only what is left. At the end of a run that finished, the folder is removed.

A result's identity is (run, item, scorer label, spec hash): a shard line of another run, or of
a label whose spec hash differs from the run's, is never merged; a line whose (item, label) the
run already holds as final is merged at most once, so a retried batch (the same item scored
twice, by a killed actor and again) never duplicates a result.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.result import result_status
from ..run.outfile import LineKey, OutWriter, iter_out_lines
from ..run.resume import PriorResults
from ..run.store import Store

__all__ = ["KILLED_MARK", "SHARD_SUFFIX", "recover", "remove_shards", "shard_folder", "shard_lines", "shard_path"]

SHARD_SUFFIX = ".jsonl"
#: The file whose creation lets one actor of a run act on the kill test hook.
KILLED_MARK = "killed-once"


def shard_folder(run_id: str, out: Path | None, store: Path | None) -> Path | None:
    """The run's shard folder (see the module docstring); None without an out file or a store file."""
    if out is not None:
        return out.with_name(out.name + ".shards")
    if store is not None:
        return store.parent / "shards" / run_id
    return None


def shard_path(folder: Path) -> Path:
    """A new shard file in `folder` for the calling actor process (its pid and a random tag)."""
    return folder / f"actor-{os.getpid()}-{secrets.token_hex(4)}{SHARD_SUFFIX}"


def shard_lines(folder: Path) -> Iterator[tuple[LineKey, dict[str, Any]]]:
    """(key, line) of every whole, readable line of every shard file in `folder` (a torn last
    line, left by an actor that died mid-write, is skipped)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*" + SHARD_SUFFIX)):
        for key, _raw, record in iter_out_lines(path):
            yield key, record


def recover(folder: Path | None, run_id: str, spec_hashes: Mapping[str, str | None], prior: PriorResults,
            out: Path | None, db: Store | None) -> int:
    """Merge into the out file and the store the shard lines of run `run_id` they lack: each
    (item, label) whose label runs with that spec hash and that `prior` holds no final result
    for, once (a final line before a failed one; a failed line only where `prior` has none).
    `prior` then holds them too (it is marked for compaction when one replaces a failed result).
    Returns how many results were merged."""
    if folder is None or not folder.is_dir():
        return 0
    merged: dict[LineKey, dict[str, Any]] = {}
    for key, record in shard_lines(folder):
        label = key[1]
        if record.get("runId") != run_id or label not in spec_hashes or prior.done(key):
            continue
        if spec_hashes[label] is not None and record.get("specHash") != spec_hashes[label]:
            continue
        final = result_status(record) != "failed"
        if (key in prior.records or key in merged) and not final:
            continue  # a failed result adds nothing to one already held
        if key not in merged or result_status(merged[key]) == "failed":
            merged[key] = record
    if not merged:
        return 0
    if out is not None:
        writer = OutWriter(out)
        try:
            for record in merged.values():
                writer.write(record)
        finally:
            writer.close()
    if db is not None:
        db.record_results(run_id, [(key[0], key[1], {k: v for k, v in record.items() if k != "id"}, None)
                                   for key, record in merged.items()])
    for key, record in merged.items():
        if key in prior.records:
            prior.untidy = True  # a failed result's line stays above the merged one
        prior.note(key, record)
    return len(merged)


def remove_shards(folder: Path | None) -> None:
    """Remove the shard folder of a finished run (its results are in the out file and the store)."""
    if folder is not None and folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)

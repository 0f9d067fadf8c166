"""A run's dataset as Ray Data reads it: the same items, ids and problems as one process reads.

`dataset_of(data, fields, limit)` is a Ray Dataset of *records*, each one of:

- ``("item", item)``: an item exactly as `engine.run.datasets` makes it (its ``id``, else its line or
  position; the field mapping applied; duplicate ids within a file skipped);
- ``("problem", DatasetProblem)``: a record that could not be read (``FILE:LINE: message``);
- ``("fatal", message)``: the file cannot be read as a whole (`engine.run.items.DatasetError`).

Files are read by `ItemsDatasource`, a Ray Data file datasource: Ray lists the paths (a file, a
folder, a glob; local or any filesystem Ray Data reads — ``s3://``, ``gs://``, ``abfs://``…;
compressed ``.gz`` and the like), reads each file in one task on the cluster and streams its
records in blocks (a read task reserves `READ_CPUS`); each file is parsed by
`engine.run.readers.read_stream`, so JSONL, CSV/TSV,
JSON arrays and Parquet give the items a one-process run gives. Items given in memory (a list,
a DataFrame) are read here and handed to Ray Data as they are. With `limit`, each file gives at
most that many items (the driver takes the first `limit` overall).

Records travel as pickled values in one binary column, so an item keeps its Python types
(mixed id types, nested messages) through Arrow.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..run.datasets import iter_items
from ..run.items import DatasetError, DatasetProblem
from ..run.readers import format_of, read_stream
from .cluster import import_ray

try:
    from ray.data.datasource import FileBasedDatasource
except ImportError:  # the optional extra is not installed: `dataset_of` says so (`import_ray`)
    FileBasedDatasource = object  # type: ignore[assignment,misc]

__all__ = ["READ_CPUS", "RECORD_COLUMN", "ItemsDatasource", "dataset_of", "decode_record", "encode_record",
           "is_location", "location_of"]

#: The dataset's one column: a pickled record.
RECORD_COLUMN = "record"
#: Records per block a read task yields.
BLOCK_RECORDS = 256
#: CPUs a read task reserves: parsing is light next to scoring, and the actors reserve theirs.
READ_CPUS = 0.25


def encode_record(kind: str, value: Any) -> bytes:
    """A record as the bytes a block carries."""
    return pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)


def decode_record(raw: bytes) -> tuple[str, Any]:
    """(kind, value) of a record's bytes (made by `encode_record` inside the run)."""
    return pickle.loads(raw)


def _block(records: list[bytes]) -> Any:
    import pyarrow as pa

    return pa.table({RECORD_COLUMN: pa.array(records, type=pa.large_binary())})


def is_location(data: Any) -> bool:
    """Whether `data` names files (a path or a URL) rather than holding items."""
    return isinstance(data, (str, os.PathLike))


def location_of(data: str | os.PathLike[str]) -> str:
    """A path as every node reads it: absolute (a relative path is the driver's); a URL as is."""
    text = os.fspath(data)
    if "://" in text:
        return text
    return str(Path(text).expanduser().resolve())


class ItemsDatasource(FileBasedDatasource):
    """Each file's records (see the module docstring): `paths` as Ray Data takes them;
    `fields`: the run's field mapping; `limit`: at most this many items per file."""

    def __init__(self, paths: str | list[str], *, fields: Mapping[str, str], limit: int | None = None):
        super().__init__(paths)
        self.fields = dict(fields)
        self.limit = limit

    def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> Any:
        if format_of(path) == "parquet":  # its footer is read first: a seekable file
            return filesystem.open_input_file(path)
        return super()._open_input_source(filesystem, path, **open_args)

    def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
        records: list[bytes] = []
        stream = f if format_of(path) == "parquet" else io.BufferedReader(f)

        def problem(found: DatasetProblem) -> None:
            records.append(encode_record("problem", found))

        items = 0
        try:
            for item in read_stream(stream, path, self.fields, problem):
                records.append(encode_record("item", item))
                items += 1
                if len(records) >= BLOCK_RECORDS:
                    yield _block(records)
                    records.clear()
                if self.limit is not None and items >= self.limit:
                    break
        except DatasetError as exc:
            records.append(encode_record("fatal", str(exc)))
        if records:
            yield _block(records)


def dataset_of(data: Any, fields: Mapping[str, str] | None = None, limit: int | None = None) -> Any:
    """The Ray Dataset of `data`'s records (see the module docstring): `data` is a path or URL
    (a file, a folder, a glob) or items in memory (a list of dicts, a DataFrame). Raises
    `engine.run.items.DatasetError` for files Ray cannot find, or items it cannot read."""
    ray = import_ray()
    fields = dict(fields or {})
    if is_location(data):
        location = location_of(data)
        try:
            source = ItemsDatasource(location, fields=fields, limit=limit)
            return ray.data.read_datasource(source, num_cpus=READ_CPUS)
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise DatasetError(f"{os.fspath(data)}: {exc}") from None
    records: list[bytes] = []
    items = 0
    for item in iter_items(data, fields, lambda found: records.append(encode_record("problem", found))):
        records.append(encode_record("item", item))
        items += 1
        if limit is not None and items >= limit:
            break
    return ray.data.from_items([{RECORD_COLUMN: raw} for raw in records])

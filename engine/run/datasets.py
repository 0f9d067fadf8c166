"""Datasets for batch evaluation: any source — a file (`engine.run.readers`: JSONL, CSV/TSV,
JSON array, Parquet, OTLP JSON traces), traces (`engine.traces.TraceSource`: a file, or a
``phoenix://`` URL), a list of dicts, a pandas DataFrame — as a stream of items
(`engine.run.items`: the item shape, the field mapping, ids and problems).

In a list or a DataFrame an item without an ``id`` gets its 1-based position; a record that is
not a dict, nested too deeply or repeating an earlier id is a `DatasetProblem` (``<data>:N:
message``) and skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..traces.source import TraceSource, is_phoenix
from .items import (
    TOO_DEEP,
    DatasetError,
    DatasetProblem,
    Item,
    OnProblem,
    plain_value,
    print_problem,
    to_item,
    too_deep,
    unique_items,
)
from .readers import count_records, read_file, read_traces


def iter_items(data: Any, fields: Mapping[str, str] | None = None,
               on_problem: OnProblem | None = None) -> Iterator[Item]:
    """Items from any supported source: a path (str or Path), a list (or any iterable) of dicts,
    or a pandas DataFrame (pandas is imported only if a DataFrame is given); traces given as a
    `TraceSource` or a ``phoenix://HOST:PORT[/PROJECT]`` URL (`engine.traces`)."""
    if is_phoenix(data):
        data = TraceSource(data)
    if isinstance(data, TraceSource):
        if is_phoenix(data.location) or Path(data.location).is_file():
            return read_traces(data, fields, on_problem)
        raise DatasetError(f"{data.location}: no such file")
    if isinstance(data, (str, os.PathLike)):
        return read_file(data, fields, on_problem)
    report = on_problem or print_problem
    if _is_dataframe(data):
        records: Iterable[Any] = (row for row in _dataframe_records(data))
    elif isinstance(data, Mapping):
        raise DatasetError("data must be a file path, a list of dicts or a DataFrame, not a single dict")
    else:
        records = data
    return unique_items(_from_records(records, fields or {}, report), "<data>", report)


def data_len(data: Any) -> int | None:
    """How many items `data` holds, when cheap to know (for progress)."""
    if isinstance(data, TraceSource) or is_phoenix(data):
        return None
    if isinstance(data, (str, os.PathLike)):
        try:
            return count_records(data)
        except OSError:
            return None
    try:
        return len(data)
    except TypeError:
        return None


def _from_records(records: Iterable[Any], fields: Mapping[str, str],
                  report: OnProblem) -> Iterator[tuple[int, Item]]:
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            report(DatasetProblem("<data>", number, f"expected a dict, got {type(record).__name__}"))
            continue
        if too_deep(dict(record)):
            report(DatasetProblem("<data>", number, TOO_DEEP))
            continue
        yield number, to_item(record, number, fields)


def _is_dataframe(data: Any) -> bool:
    module = type(data).__module__ or ""
    return module.startswith("pandas") and type(data).__name__ == "DataFrame"


def _dataframe_records(frame: Any) -> Iterator[dict[str, Any]]:
    columns = [str(c) for c in frame.columns]
    for row in frame.itertuples(index=False, name=None):
        yield {c: plain_value(v) for c, v in zip(columns, row)}


__all__ = ["data_len", "iter_items"]

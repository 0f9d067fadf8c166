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
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..traces.source import TraceSource, is_phoenix
from .items import (
    TOO_DEEP,
    DatasetError,
    counting_mapped,
    path_stop,
    DatasetProblem,
    Item,
    OnProblem,
    plain_value,
    print_problem,
    to_item,
    too_deep,
    unique_items,
)
from .readers import count_records, detect_format, read_file, read_traces


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


def check_mapping(data: Any, fields: Mapping[str, str] | None, note: Callable[[str], None] | None = None) -> None:
    """Check a field mapping against every record of `data` before a run: a mapping found in no
    record raises `DatasetError` naming it and where its path stops in the first record
    (``--field input=trace.messages.-5.content: found in none of the 3 records (the first: trace.messages
    has no item -5 (a list of 2; …)))``); one found in some records only is a warning to `note`
    with the count. Reads the data once more (a file is parsed twice); records that cannot be read
    are left to the run to report. Nothing is checked for traces (their mapping reads span
    attributes, `engine.traces`), for data that can be read only once (an iterator), or with no
    mapping."""
    if not fields or is_phoenix(data) or isinstance(data, TraceSource) or isinstance(data, Iterator):
        return
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.is_file() or detect_format(path) == "otlp":
            return
    total, first = 0, {}
    with counting_mapped() as found:
        for item in iter_items(data, fields, lambda problem: None):
            first = first if total else item
            total += 1
    if not total:
        return
    unmapped = [name for name in fields if found[name] == 0]
    if unmapped:
        record = {k: v for k, v in first.items() if v is not None}
        lost = "; ".join(f"--field {name}={fields[name]}: found in none of the {total} record"
                         f"{'s' if total != 1 else ''} (the first: {path_stop(record, fields[name])})"
                         for name in unmapped)
        raise DatasetError(f"{lost}. A path's parts are keys of objects or indices of lists (0, 1, …; -1 the last)")
    for name in fields:
        if found[name] < total:
            missing = total - found[name]
            (note or _stderr)(f"--field {name}={fields[name]}: not found in {missing} of {total} record"
                 f"{'s' if total != 1 else ''}; {'it has' if missing == 1 else 'they have'} no {name} from it")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


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


__all__ = ["check_mapping", "data_len", "iter_items"]

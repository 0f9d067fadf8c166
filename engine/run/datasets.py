"""Datasets for batch evaluation: JSONL, CSV, JSON-array and Parquet files, lists of dicts, DataFrames.

Every source becomes a stream of *items*, plain dicts with the run fields a scorer reads::

    {"id": …, "input": …, "output": …, "ground_truth": …, "context": [str, …] | None, …the rest}

- ``id``: the record's own ``id`` field, else its line number in a JSONL or CSV file, its
  position in a JSON array, a Parquet file, a list or a DataFrame (all 1-based). Problems name
  the line.
- ``ground_truth`` also reads ``groundTruth`` (the seed's spelling) when no mapping is given.
- ``context``: a list of strings; a string becomes a one-element list (in CSV, a cell holding a
  JSON array of strings is read as that list); absent or empty → None (not given).
- ``input`` / ``output``: a text or a list of chat messages (`engine.core.messages`); in CSV a cell
  holding a JSON array of messages is read as that list. ``system`` and ``tool_calls`` (in CSV:
  a JSON array in the cell) are in the item only when the record has them.
- Field mapping: ``{"output": "answer", "context": "passages"}`` (from ``--field
  output=answer``) reads a run field — or a field a scorer declares (``rubric=criteria``) —
  from another column; a dotted name (``meta.passages``) reads a nested key. Every other column
  is kept under its own name (a scorer's declared field too).

Reading streams: items are yielded one at a time and never all held in memory (a JSON array
excepted). `read_stream` reads a file some other code opened (the Ray executor's reads,
`engine.ray.datasource`): the same items, ids and problems as `read_file`. A malformed
record (bad JSON, invalid UTF-8, a CSV row with the wrong number of cells, a duplicate id) is
reported as a `DatasetProblem` (``FILE:LINE: message``) to the `on_problem` callback and
skipped; the rest still loads. So is a record nested deeper than `MAX_DEPTH` levels (JSON
arrays and objects inside each other): no run field needs more, and deeper values would
exhaust the recursion limit wherever they are later walked. NUL bytes and other control
characters inside strings are ordinary text.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.messages import is_messages
from ..core.run_fields import ITEM_FIELDS, RUN_FIELDS

MAPPABLE = ("id",) + RUN_FIELDS
ALIASES = {"ground_truth": ("groundTruth",)}
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")
CSV_SUFFIXES = (".csv", ".tsv")
PARQUET_SUFFIXES = (".parquet", ".pq")
FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")
MAX_DEPTH = 100  # nesting levels of arrays/objects in one record

Item = dict[str, Any]


@dataclass(frozen=True)
class DatasetProblem:
    """One record that could not be read: the file (or ``<data>`` for in-memory data), its
    1-based line (0 when unknown) and what was wrong."""

    file: str
    line: int
    message: str

    def render(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"

    def __str__(self) -> str:
        return self.render()


class DatasetError(ValueError):
    """The dataset as a whole cannot be read (missing file, unknown format, a mapped column
    absent from a CSV header). Single bad records are `DatasetProblem`s instead."""


OnProblem = Callable[[DatasetProblem], None]


def parse_fields(pairs: Iterable[str], declared: Iterable[str] = ()) -> dict[str, str]:
    """``["output=answer", "context=passages"]`` → ``{"output": "answer", "context": "passages"}``.
    Raises `ValueError` for a pair without ``=`` or a name that is neither ``id``, a run field
    (`engine.core.run_fields.RUN_FIELDS`) nor one of `declared` (the fields the scorers declare)."""
    known = MAPPABLE + tuple(name for name in declared if name not in MAPPABLE)
    mapping: dict[str, str] = {}
    for pair in pairs:
        name, sep, column = pair.partition("=")
        name, column = name.strip().replace("-", "_"), column.strip()
        if name == "groundTruth":
            name = "ground_truth"
        if not sep or not name or not column:
            raise ValueError(f"--field {pair!r}: expected name=column (e.g. output=answer)")
        if name not in known:
            raise ValueError(f"--field {pair!r}: {name!r} is not one of {', '.join(known)}")
        mapping[name] = column
    return mapping


# --- one record → one item ----------------------------------------------------------------------


def _lookup(record: Mapping[str, Any], column: str) -> tuple[bool, Any]:
    if column in record:
        return True, record[column]
    value: Any = record
    for part in column.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def coerce_context(value: Any, *, from_text: bool = False) -> list[str] | None:
    """An item's context as a list of strings, or None when not given. A string is one passage
    (with `from_text`, e.g. a CSV cell, a string holding a JSON array of strings is that list)."""
    if _missing(value):
        return None
    if isinstance(value, str):
        if from_text:
            text = value.strip()
            if not text:
                return None
            if text.startswith("["):
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = None
                if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed):
                    return parsed
        return [value]
    if isinstance(value, (list, tuple)):
        return ["" if _missing(v) else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays in DataFrame cells
        return coerce_context(value.tolist())
    return [str(value)]


def _json_cell(name: str, text: str) -> Any:
    """A CSV cell of `name`: chat messages for input / output and tool calls written as a JSON
    array are read as that list; any other cell stays text."""
    if name not in ("input", "output", "tool_calls") or not text.lstrip().startswith("["):
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if name == "tool_calls" and isinstance(parsed, list):
        return parsed
    return parsed if parsed and is_messages(parsed) else text


def to_item(record: Mapping[str, Any], number: int, fields: Mapping[str, str] | None = None,
            *, from_text: bool = False) -> Item:
    """Build an item from one record. `number` is its line (or 1-based position), used as the id
    when the record has none. `from_text` marks records whose cells are all text (CSV): empty
    cells of the run fields are then 'not given'."""
    fields = fields or {}
    item: Item = {}
    used: set[str] = set()
    for name in MAPPABLE + tuple(name for name in fields if name not in MAPPABLE):
        column = fields.get(name)
        if column is not None:
            found, value = _lookup(record, column)
            if found:
                used.add(column)
        else:
            found, value = (True, record[name]) if name in record else (False, None)
            if found:
                used.add(name)
            else:
                for alias in ALIASES.get(name, ()):
                    if alias in record:
                        found, value = True, record[alias]
                        used.add(alias)
                        break
        if from_text and isinstance(value, str):
            value = None if not value.strip() else _json_cell(name, value)  # an empty CSV cell: not given
        if _missing(value):
            value = None
        if found or name == "id" or name in ITEM_FIELDS:
            item[name] = value
    if item["id"] is None or item["id"] == "":
        item["id"] = number
    elif not isinstance(item["id"], (str, int)) or isinstance(item["id"], bool):
        item["id"] = str(item["id"]) if not (isinstance(item["id"], float) and item["id"].is_integer()) \
            else int(item["id"])
    item["context"] = coerce_context(item["context"], from_text=from_text)
    for key, value in record.items():
        if key not in used and key not in item:
            item[key] = None if _missing(value) else value
    return item


# --- files ---------------------------------------------------------------------------------------


def format_of(name: str) -> str | None:
    """The format a file's name says (``jsonl``, ``csv``, ``tsv``, ``parquet``, ``json``; any
    compression suffix such as ``.gz`` ignored), or None for a suffix that says none."""
    parts = [p.lower() for p in PurePosixPath(name.split("?", 1)[0]).suffixes]
    while parts and parts[-1] in (".gz", ".gzip", ".bz2", ".zst", ".lz4", ".snappy", ".br"):
        parts.pop()
    suffix = parts[-1] if parts else ""
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    return {".csv": "csv", ".tsv": "tsv", ".json": "json"}.get(suffix)


def detect_format(path: Path) -> str:
    """``jsonl``, ``csv``, ``tsv``, ``parquet`` or ``json`` (a JSON array) from the suffix; a
    ``.json`` file whose first non-blank character is ``{`` is read as JSONL. Unknown suffixes
    are sniffed."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix == ".csv":
        return "csv"
    if suffix == ".tsv":
        return "tsv"
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{") or not head:
        return "jsonl"
    if suffix == ".json":
        return "json"
    return "csv"


def _decode(raw: bytes) -> str:
    """Decode one line; raise `ValueError` naming the first invalid byte and its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


def _read_jsonl(lines: Iterable[bytes], name: str, fields: Mapping[str, str],
                report: OnProblem) -> Iterator[tuple[int, Item]]:
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            continue
        try:
            text = _decode(raw).rstrip("\r\n")
            record = json.loads(text, strict=False)
        except json.JSONDecodeError as exc:
            report(DatasetProblem(name, number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        except ValueError as exc:
            report(DatasetProblem(name, number, str(exc)))
            continue
        except RecursionError:
            report(DatasetProblem(name, number, _TOO_DEEP))
            continue
        if not isinstance(record, dict):
            report(DatasetProblem(name, number, f"expected a JSON object, got {_json_type(record)}"))
            continue
        if _too_deep(record):
            report(DatasetProblem(name, number, _TOO_DEEP))
            continue
        yield number, to_item(record, number, fields)


_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep; skipped"


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays/objects in `value` nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _read_json_array(data: bytes, name: str, fields: Mapping[str, str],
                     report: OnProblem) -> Iterator[tuple[int, Item]]:
    """A JSON array of objects, decoded element by element: each problem names its line, and an
    element without an ``id`` gets its 1-based position in the array (a one-line array, as
    ``json.dump`` writes it, has all its elements on line 1).
    (The file is read whole — a JSON array cannot be streamed with the standard library; use
    JSONL for very large datasets.) A syntax error stops the read at that element."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        report(DatasetProblem(name, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); the file was not read"))
        return
    del data
    decoder = json.JSONDecoder(strict=False)
    ws = " \t\r\n"
    pos, line, counted = 0, 1, 0

    def line_at(at: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, at)
        counted = at
        return line

    while pos < len(text) and text[pos] in ws:
        pos += 1
    if not text.startswith("[", pos):
        report(DatasetProblem(name, line_at(pos), "expected a JSON array of objects"))
        return
    pos += 1
    first = True
    position = 0
    while True:
        while pos < len(text) and text[pos] in ws:
            pos += 1
        if pos >= len(text):
            report(DatasetProblem(name, line_at(pos), "invalid JSON: the array is not closed"))
            return
        if text[pos] == "]":
            return
        if not first:
            if text[pos] != ",":
                report(DatasetProblem(name, line_at(pos), "invalid JSON: expected ',' or ']'"))
                return
            pos += 1
            while pos < len(text) and text[pos] in ws:
                pos += 1
        first = False
        start = pos
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            report(DatasetProblem(name, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno}); "
                                  "the rest of the array was not read"))
            return
        except RecursionError:
            report(DatasetProblem(name, line_at(start), f"nested more than {MAX_DEPTH} levels deep; "
                                  "the rest of the array was not read"))
            return
        number = line_at(start)
        position += 1
        if not isinstance(record, dict):
            report(DatasetProblem(name, number, f"expected a JSON object, got {_json_type(record)}"))
            continue
        if _too_deep(record):
            report(DatasetProblem(name, number, _TOO_DEEP))
            continue
        yield number, to_item(record, position, fields)


def _csv_lines(f: Any, bad: dict[int, str]) -> Iterator[str]:
    for number, raw in enumerate(f, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield _decode(raw)
        except ValueError as exc:
            bad[number] = str(exc)
            yield raw.decode("utf-8", errors="replace")


def _read_csv(lines: Iterable[bytes], name: str, fields: Mapping[str, str], report: OnProblem,
              delimiter: str) -> Iterator[tuple[int, Item]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    bad: dict[int, str] = {}
    reader = csv.reader(_csv_lines(lines, bad), delimiter=delimiter)
    header: list[str] | None = None
    last = 0
    while True:
        start = last + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            last = reader.line_num
            report(DatasetProblem(name, start, f"malformed CSV: {exc}"))
            continue
        last = reader.line_num
        broken = [n for n in range(start, last + 1) if n in bad]
        if header is None:
            if broken:
                report(DatasetProblem(name, broken[0], bad[broken[0]] + "; the header was not read"))
                return
            if not row:
                continue
            header = [h.strip() for h in row]
            columns = set(header)
            absent = [f"{k}={c}" for k, c in fields.items() if c not in columns and c.split(".")[0] not in columns]
            if absent:
                raise DatasetError(f"{name}: --field {', '.join(absent)}: no such column "
                                   f"(columns: {', '.join(header)})")
            continue
        if broken:
            report(DatasetProblem(name, broken[0], bad.pop(broken[0], "not valid UTF-8")))
            continue
        if not row or (len(row) == 1 and not row[0].strip() and len(header) > 1):
            continue
        if len(row) != len(header):
            report(DatasetProblem(name, start, f"{len(row)} cell(s), the header has {len(header)}"))
            continue
        yield start, to_item(dict(zip(header, row)), start, fields, from_text=True)


def read_file(path: str | os.PathLike[str], fields: Mapping[str, str] | None = None,
              on_problem: OnProblem | None = None, *, format: str | None = None) -> Iterator[Item]:
    """Stream the items of a JSONL, CSV/TSV, JSON-array or Parquet file (see the module docstring).

    Raises `DatasetError` when the file is missing or unusable as a whole; single bad records
    go to `on_problem` (default: printed to stderr) and are skipped."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise DatasetError(f"{path}: unknown format {fmt!r} ({', '.join(FORMATS)})")
    report = on_problem or _print_problem
    name = str(path)
    return _unique(_opened(path, name, fmt, dict(fields or {}), report), name, report)


def _opened(path: Path, name: str, fmt: str, fields: Mapping[str, str],
            report: OnProblem) -> Iterator[tuple[int, Item]]:
    with open(path, "rb") as f:
        yield from _records(f, name, fmt, fields, report)


def _records(f: Any, name: str, fmt: str, fields: Mapping[str, str],
             report: OnProblem) -> Iterator[tuple[int, Item]]:
    """(line or position, item) of each readable record of the open binary file `f` in format `fmt`."""
    if fmt == "jsonl":
        return _read_jsonl(f, name, fields, report)
    if fmt == "json":
        return _read_json_array(f.read(), name, fields, report)
    if fmt == "parquet":
        return _read_parquet(f, name, fields, report)
    return _read_csv(f, name, fields, report, "\t" if fmt == "tsv" else ",")


def read_stream(f: Any, name: str, fields: Mapping[str, str] | None = None, on_problem: OnProblem | None = None,
                *, format: str | None = None) -> Iterator[Item]:
    """The items of one file already open as the binary file object `f` (lines are read by
    iterating it; Parquet needs it seekable), named `name` in problems (a path or URL, whose
    suffix gives the format unless `format` does): what `read_file` gives for that file. A
    ``.json`` file whose first character is ``{`` is read as JSONL, as `read_file` does.
    Raises `DatasetError` for a format it cannot tell or read."""
    fmt = format or format_of(name)
    if fmt is None:
        raise DatasetError(f"{name}: cannot tell the format from the name (give one of {', '.join(FORMATS)})")
    if fmt not in FORMATS:
        raise DatasetError(f"{name}: unknown format {fmt!r} ({', '.join(FORMATS)})")
    report = on_problem or _print_problem
    fields = dict(fields or {})
    if fmt == "json":
        data = f.read()
        if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
            return _unique(_read_jsonl(data.splitlines(keepends=True), name, fields, report), name, report)
        return _unique(_read_json_array(data, name, fields, report), name, report)
    return _unique(_records(f, name, fmt, fields, report), name, report)


def _read_parquet(f: Any, name: str, fields: Mapping[str, str], report: OnProblem) -> Iterator[tuple[int, Item]]:
    """The rows of a Parquet file, each with its 1-based position (its id when it has none);
    list and struct columns become lists and dicts (chat messages, tool calls, passages)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{name}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.ParquetFile(f)
    except Exception as exc:  # pyarrow's own errors: not a Parquet file, a cut-off footer
        raise DatasetError(f"{name}: not a readable Parquet file ({exc})") from None
    position = 0
    for batch in table.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            position += 1
            record = {str(k): _plain(v) for k, v in row.items()}
            if _too_deep(record):
                report(DatasetProblem(name, position, _TOO_DEEP))
                continue
            yield position, to_item(record, position, fields)


def _print_problem(problem: DatasetProblem) -> None:
    print(problem.render(), file=sys.stderr)


def _unique(numbered: Iterator[tuple[int, Item]], name: str, report: OnProblem) -> Iterator[Item]:
    """Drop (and report) records whose id repeats an earlier one: results are keyed by id."""
    seen: dict[str, int] = {}
    for number, item in numbered:
        key = item_key(item["id"])
        first = seen.get(key)
        if first is not None:
            report(DatasetProblem(name, number, f"duplicate id {item['id']!r} (first at line {first}); skipped"))
            continue
        seen[key] = number
        yield item


def label_value(item: Mapping[str, Any], label_field: str) -> Any:
    """The item's value at `label_field` (dots reach into nested objects: ``meta.label``), or
    None when it has none there; where calibrate and compare read an item's human label."""
    value: Any = item
    for part in label_field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def item_key(item_id: Any) -> str:
    """The text form of an item id, used to match results across runs (1 and "1" are one item)."""
    return item_id if isinstance(item_id, str) else json.dumps(item_id)


def count_records(path: str | os.PathLike[str], format: str | None = None) -> int | None:
    """A quick estimate of how many items a file holds (for progress ETA): non-blank lines for
    JSONL, rows for CSV, elements for a JSON array (None if it cannot be counted cheaply)."""
    path = Path(path)
    fmt = format or detect_format(path)
    if fmt == "jsonl":
        count = 0
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    count += 1
        return count
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        except Exception:  # no pyarrow, or not a readable file: the read says why
            return None
    if fmt in ("csv", "tsv"):
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            return max(0, sum(1 for row in csv.reader(f, delimiter="\t" if fmt == "tsv" else ",") if row) - 1)
    return None


def iter_items(data: Any, fields: Mapping[str, str] | None = None,
               on_problem: OnProblem | None = None) -> Iterator[Item]:
    """Items from any supported source: a path (str or Path), a list (or any iterable) of dicts,
    or a pandas DataFrame (pandas is imported only if a DataFrame is given)."""
    if isinstance(data, (str, os.PathLike)):
        return read_file(data, fields, on_problem)
    report = on_problem or _print_problem
    if _is_dataframe(data):
        records: Iterable[Any] = (row for row in _dataframe_records(data))
    elif isinstance(data, Mapping):
        raise DatasetError("data must be a file path, a list of dicts or a DataFrame, not a single dict")
    else:
        records = data
    return _unique(_from_records(records, fields or {}, report), "<data>", report)


def _from_records(records: Iterable[Any], fields: Mapping[str, str],
                  report: OnProblem) -> Iterator[tuple[int, Item]]:
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            report(DatasetProblem("<data>", number, f"expected a dict, got {type(record).__name__}"))
            continue
        if _too_deep(dict(record)):
            report(DatasetProblem("<data>", number, _TOO_DEEP))
            continue
        yield number, to_item(record, number, fields)


def _is_dataframe(data: Any) -> bool:
    module = type(data).__module__ or ""
    return module.startswith("pandas") and type(data).__name__ == "DataFrame"


def _dataframe_records(frame: Any) -> Iterator[dict[str, Any]]:
    columns = [str(c) for c in frame.columns]
    for row in frame.itertuples(index=False, name=None):
        yield {c: _plain(v) for c, v in zip(columns, row)}


def _plain(value: Any, depth: int = 0) -> Any:
    """numpy scalars → Python values; NaN/NaT → None; numpy arrays (a list column read from
    Parquet: messages, tool calls) → lists, inside lists and dicts too."""
    if value is None:
        return None
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) >= 1:
        value = value.tolist()
    if isinstance(value, (list, tuple, dict)) and depth < MAX_DEPTH:
        if isinstance(value, dict):
            return {k: _plain(v, depth + 1) for k, v in value.items()}
        return [_plain(v, depth + 1) for v in value]
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NaTType", "NAType"):
        return None
    return value


def data_len(data: Any) -> int | None:
    """How many items `data` holds, when cheap to know (for progress)."""
    if isinstance(data, (str, os.PathLike)):
        try:
            return count_records(data)
        except OSError:
            return None
    try:
        return len(data)
    except TypeError:
        return None


__all__ = ["DatasetProblem", "DatasetError", "Item", "parse_fields", "to_item", "read_file", "read_stream",
           "iter_items",
           "label_value", "coerce_context", "item_key", "count_records", "data_len", "detect_format", "format_of",
           "FORMATS"]

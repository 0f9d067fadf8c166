"""Dataset files: JSONL, CSV/TSV, JSON arrays, Parquet and OTLP JSON traces, streamed as items
(`engine.run.items`; traces through `engine.traces`: one item per trace by default).

- ``id``: the record's own ``id`` field, else its line number in a JSONL or CSV file, its
  position in a JSON array or a Parquet file (1-based). Problems name the line.
- ``context``: in CSV, a cell holding a JSON array of strings is read as that list.
- ``input`` / ``output``: in CSV a cell holding a JSON array of messages is read as that list;
  ``tool_calls`` likewise (a JSON array in the cell).

Items are yielded one at a time and never all held in memory (a JSON array excepted).
`read_stream` reads a file some other code opened (the Ray executor's reads,
`engine.ray.datasource`): the same items, ids and problems as `read_file`. A malformed record
(bad JSON, invalid UTF-8, a CSV row with the wrong number of cells, a duplicate id, nesting
deeper than `engine.run.items.MAX_DEPTH`) is reported as a `DatasetProblem` (``FILE:LINE:
message``) to the `on_problem` callback and skipped; the rest still loads. NUL bytes and other
control characters inside strings are ordinary text.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.lines import content_lines
from ..traces.assemble import TraceOptions
from ..traces.source import TraceSource
from .items import (
    MAX_DEPTH,
    TOO_DEEP,
    DatasetError,
    DatasetProblem,
    Item,
    OnProblem,
    json_type,
    plain_value,
    print_problem,
    to_item,
    too_deep,
    unique_items,
)

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")
CSV_SUFFIXES = (".csv", ".tsv")
PARQUET_SUFFIXES = (".parquet", ".pq")
FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "otlp")


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
    are sniffed. A JSON or JSONL file whose first JSON object is an OTLP JSON document or a span
    (`engine.traces.otlp_json.looks_like_spans`: told by the structure, bad lines before it passed
    over) is ``otlp``."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "otlp" if _spans(path) else "jsonl"
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
    if head.startswith(b"{") and _spans(path):
        return "otlp"
    if head.startswith(b"{") or not head:
        return "jsonl"
    if suffix == ".json":
        return "json"
    return "csv"


def _spans(path: Path) -> bool:
    from ..traces.otlp_json import looks_like_spans

    with open(path, "rb") as f:
        return looks_like_spans(f)


def read_file(path: str | os.PathLike[str], fields: Mapping[str, str] | None = None,
              on_problem: OnProblem | None = None, *, format: str | None = None,
              traces: TraceOptions | None = None) -> Iterator[Item]:
    """Stream the items of a JSONL, CSV/TSV, JSON-array, Parquet or OTLP JSON file (see the module
    docstring; `traces`: how an ``otlp`` file's traces become items, `engine.traces.TraceOptions`).

    Raises `DatasetError` when the file is missing or unusable as a whole; single bad records
    go to `on_problem` (default: printed to stderr) and are skipped."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise DatasetError(f"{path}: unknown format {fmt!r} ({', '.join(FORMATS)})")
    report = on_problem or print_problem
    name = str(path)
    if fmt == "otlp":
        return read_traces(TraceSource(name, traces or TraceOptions()), fields, report)
    return unique_items(_opened(path, name, fmt, dict(fields or {}), report), name, report)


def read_traces(source: TraceSource, fields: Mapping[str, str] | None = None,
                on_problem: OnProblem | None = None) -> Iterator[Item]:
    """The items of traces (`engine.traces.TraceSource`: an OTLP JSON file or a Phoenix server),
    field mappings read as attribute paths; a span that cannot be read is a `DatasetProblem`."""
    report = on_problem or print_problem
    name = source.location

    def problem(line: int, message: str) -> None:
        report(DatasetProblem(name, line, message))

    def items() -> Iterator[tuple[int, Item]]:
        for line, record in source.records(dict(fields or {}), problem):
            yield line, to_item(record, line)

    return unique_items(items(), name, report)


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
    report = on_problem or print_problem
    fields = dict(fields or {})
    if fmt == "json":
        data = f.read()
        if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
            return unique_items(_read_jsonl(data.splitlines(keepends=True), name, fields, report,
                                            whole=lambda: data), name, report)
        return unique_items(_read_json_array(data, name, fields, report), name, report)
    return unique_items(_records(f, name, fmt, fields, report), name, report)


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
                    if count == 0 and _cut(raw):
                        return None  # one object over many lines: its lines are no items
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


def _opened(path: Path, name: str, fmt: str, fields: Mapping[str, str],
            report: OnProblem) -> Iterator[tuple[int, Item]]:
    with open(path, "rb") as f:
        if fmt == "jsonl":
            yield from _read_jsonl(f, name, fields, report, whole=path.read_bytes)
        else:
            yield from _records(f, name, fmt, fields, report)


def _records(f: Any, name: str, fmt: str, fields: Mapping[str, str],
             report: OnProblem) -> Iterator[tuple[int, Item]]:
    """(line or position, item) of each readable record of the open binary file `f` in format `fmt`."""
    if fmt == "otlp":
        return _stream_traces(f, name, fields, report)
    if fmt == "jsonl":
        return _read_jsonl(f, name, fields, report)
    if fmt == "json":
        return _read_json_array(f.read(), name, fields, report)
    if fmt == "parquet":
        return _read_parquet(f, name, fields, report)
    return _read_csv(f, name, fields, report, "\t" if fmt == "tsv" else ",")


def _stream_traces(f: Any, name: str, fields: Mapping[str, str], report: OnProblem) -> Iterator[tuple[int, Item]]:
    """The traces of an open OTLP JSON file, one item per trace (one document per line; a
    document over many lines needs `read_file`)."""
    from ..traces.assemble import assemble_documents
    from ..traces.otlp_json import read_documents

    def problem(line: int, message: str) -> None:
        report(DatasetProblem(name, line, message))

    for line, record in assemble_documents(read_documents(f, problem), TraceOptions(), fields, problem):
        yield line, to_item(record, line)


def _decode(raw: bytes) -> str:
    """Decode one line; raise `ValueError` naming the first invalid byte and its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


NOT_ITEMS = ("the file is one JSON object over many lines, neither items nor traces: a JSON file must be an "
             "array of items ([{…}, …]), JSON Lines (one item per line) or an OTLP JSON document "
             "({\"resourceSpans\": …}, --format otlp); the file was not read")


def _read_jsonl(lines: Iterable[bytes], name: str, fields: Mapping[str, str],
                report: OnProblem, whole: Callable[[], bytes] | None = None) -> Iterator[tuple[int, Item]]:
    """The items of JSON Lines. When the first non-blank line is an object cut at its line's end
    and the whole file (`whole`) is one JSON object (pretty-printed JSON), that is said once
    (`NOT_ITEMS`) and nothing is read."""
    first = True
    for number, raw in content_lines(lines):
        was_first, first = first, False
        try:
            text = _decode(raw).rstrip("\r\n")
            record = json.loads(text, strict=False)
        except json.JSONDecodeError as exc:
            if was_first and whole is not None and text.lstrip().startswith("{") \
                    and exc.pos >= len(text.rstrip()) and _one_object(whole()):
                report(DatasetProblem(name, number, NOT_ITEMS))
                return
            report(DatasetProblem(name, number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        except ValueError as exc:
            report(DatasetProblem(name, number, str(exc)))
            continue
        except RecursionError:
            report(DatasetProblem(name, number, TOO_DEEP))
            continue
        if not isinstance(record, dict):
            report(DatasetProblem(name, number, f"expected a JSON object, got {json_type(record)}"))
            continue
        if too_deep(record):
            report(DatasetProblem(name, number, TOO_DEEP))
            continue
        yield number, to_item(record, number, fields)


def _cut(raw: bytes) -> bool:
    """Whether a JSONL line starts an object it does not close."""
    text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace").rstrip()
    try:
        json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        return text.lstrip().startswith("{") and exc.pos >= len(text)
    except RecursionError:
        return False
    return False


def _one_object(data: bytes) -> bool:
    """Whether `data` is one JSON object (over many lines)."""
    try:
        return isinstance(json.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"), strict=False), dict)
    except (ValueError, RecursionError):
        return False


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
            report(DatasetProblem(name, number, f"expected a JSON object, got {json_type(record)}"))
            continue
        if too_deep(record):
            report(DatasetProblem(name, number, TOO_DEEP))
            continue
        yield number, to_item(record, position, fields)


def _csv_lines(f: Any, bad: dict[int, str]) -> Iterator[str]:
    """The decoded lines of a CSV file (every byte-order mark at the start of the first line
    dropped: an editor that adds one to a file that has one leaves two); a line that is not
    UTF-8 is recorded in `bad` by its number."""
    for number, raw in enumerate(f, start=1):
        while number == 1 and raw.startswith(b"\xef\xbb\xbf"):
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
    # strict: a quoted cell left open to the end of the file is an error, not a cell holding
    # every later row; so is text after a cell's closing quote
    reader = csv.reader(_csv_lines(lines, bad), delimiter=delimiter, strict=True)
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
            if str(exc) == "unexpected end of data":
                report(DatasetProblem(name, start, f"malformed CSV: a quoted cell opened on this line is never "
                                      f"closed; lines {start} to {last} (the end of the file) were not read"))
                return
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


def _read_parquet(f: Any, name: str, fields: Mapping[str, str], report: OnProblem) -> Iterator[tuple[int, Item]]:
    """The rows of a Parquet file, each with its 1-based position (its id when it has none);
    list and struct columns become lists and dicts (chat messages, tool calls, passages)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{name}: reading Parquet needs pyarrow (pip install 'scorespec[parquet]')") from None
    try:
        table = pq.ParquetFile(f)
    except Exception as exc:  # pyarrow's own errors: not a Parquet file, a cut-off footer
        raise DatasetError(f"{name}: not a readable Parquet file ({exc})") from None
    position = 0
    for batch in table.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            position += 1
            record = {str(k): plain_value(v) for k, v in row.items()}
            if too_deep(record):
                report(DatasetProblem(name, position, TOO_DEEP))
                continue
            yield position, to_item(record, position, fields)


__all__ = ["CSV_SUFFIXES", "FORMATS", "JSONL_SUFFIXES", "PARQUET_SUFFIXES", "count_records", "detect_format",
           "format_of", "read_file", "read_stream", "read_traces"]

"""OTLP JSON spans, streamed: the OpenTelemetry Collector's file exporter format (one
``{"resourceSpans": …}`` document per line, or one document over many lines) and JSONL of spans.

A span line may be an OTLP span (``traceId``, ``spanId``, ``parentSpanId``, ``attributes`` as a
list of ``{key, value: AnyValue}``) or a flat one (``trace_id`` / ``context.trace_id``,
``span_id``, ``parent_id`` / ``parent_span_id``, ``attributes`` as an object, as Phoenix and many
exporters write). Ids are read as hex (OTLP/JSON's spelling); 16 or 8 bytes written in base64
(protobuf's default JSON) are turned into hex. A flat span's ``span_kind`` (Phoenix's) stands
for ``openinference.span.kind``. Attributes are kept flat (``llm.input_messages.0
.message.role``); a nested attributes object is flattened to dotted keys.

`read_documents` yields ``(line, spans)`` per document (a span line is a document of one span),
`read_spans` ``(line, Span)``. A line that is not JSON or not an object goes to `on_problem(line,
message)` and is skipped; a part of a document of the wrong shape (``resourceSpans`` not a list,
a span not an object, malformed attributes or ids) too, the message naming its JSON path
(``resourceSpans[0].scopeSpans[0].spans[2].traceId: …``), and the rest of the document is read.
A file whose first record is neither an OTLP document nor a span (no key a trace or span id
is read from) is reported once as not traces, and not read further.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.lines import content_lines

OnSpanProblem = Callable[[int, str], None]
MAX_ATTRIBUTE_DEPTH = 20
MAX_DECODED_DEPTH = 1000
"""About the deepest nesting a line can have and be read: Python's JSON decoder gives up near
its recursion limit (1,000 levels by default)."""


@dataclass
class Span:
    """One span: ids in lower-case hex (trace 32 digits, span 16), its parent's id ('' for a
    root), name, start time (Unix nanoseconds, 0 when unknown), status (``ERROR`` or ''), and
    its attributes flat (dotted keys → str, bool, int, float or a list of them)."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str = ""
    start: int = 0
    status: str = ""
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)


def hex_id(value: Any, size: int) -> str:
    """An id as lower-case hex of `size` bytes: hex as it is, base64 of `size` bytes decoded
    ('' for None or ''). Raises `ValueError` for anything else."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ValueError(f"an id must be a string, not {type(value).__name__}")
    text = value.strip().lower().removeprefix("0x")
    if len(text) == 2 * size and all(c in "0123456789abcdef" for c in text):
        return text
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex()
    raise ValueError(f"id {value!r} is neither {2 * size} hex digits nor {size} bytes in base64")


def _shape(value: Any) -> str:
    """What a JSON value is, for a message: an object, a list, a string, a number, …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def _items(value: Any, path: str) -> list[Any]:
    """`value` as a list (null or absent: empty). Raises `ValueError` naming `path` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{path} must be a list, not {_shape(value)}")
    return value


def any_value(value: Any, depth: int = 0, path: str = "value") -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": …}``, ``intValue`` as a string, ``arrayValue``,
    ``kvlistValue``, …) as a plain value; anything else as it is. Raises `ValueError` naming
    `path` for an ``arrayValue`` / ``kvlistValue`` that is not ``{"values": [...]}`` (or a
    kvlist entry without a string key)."""
    if not isinstance(value, Mapping) or depth > MAX_ATTRIBUTE_DEPTH:
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        try:
            return float(value["doubleValue"])
        except (TypeError, ValueError):
            return value["doubleValue"]
    if "arrayValue" in value:
        where = f"{path}.arrayValue"
        return [any_value(v, depth + 1, f"{where}.values[{i}]")
                for i, v in enumerate(_items(_object(value["arrayValue"], where).get("values"), f"{where}.values"))]
    if "kvlistValue" in value:
        where = f"{path}.kvlistValue"
        found = {}
        for i, kv in enumerate(_items(_object(value["kvlistValue"], where).get("values"), f"{where}.values")):
            key = _keyed(kv, f"{where}.values[{i}]")
            found[key] = any_value(kv.get("value"), depth + 1, f"{where}.values[{i}].value")
        return found
    if "bytesValue" in value:
        return value["bytesValue"]
    return None if not value else value


def _object(value: Any, path: str) -> Mapping[str, Any]:
    """`value` as an object (null: empty). Raises `ValueError` naming `path` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{path} must be an object, not {_shape(value)}")
    return value


def _keyed(entry: Any, path: str) -> str:
    """The key of a ``{key, value}`` entry. Raises `ValueError` naming `path` when it has none."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("key"), str):
        got = "an object without one" if isinstance(entry, Mapping) else _shape(entry)
        raise ValueError(f"{path} must be an object with a string key ({{key, value}}), not {got}")
    return entry["key"]


def attributes_of(value: Any, path: str = "attributes") -> dict[str, Any]:
    """Attributes as a flat dict: an OTLP list of ``{key, value}``, or an object (nested objects
    flattened to dotted keys); null: none. Raises `ValueError` naming `path` (and the entry) for
    anything else."""
    flat: dict[str, Any] = {}
    if isinstance(value, list):
        for i, kv in enumerate(value):
            key = _keyed(kv, f"{path}[{i}]")
            flat[key] = any_value(kv.get("value"), 0, f"{path}[{i}].value")
    elif isinstance(value, Mapping):
        _flatten(value, "", flat, 0)
    elif value is not None:
        raise ValueError(f"{path} must be a list of {{key, value}} or an object, not {_shape(value)}")
    return flat


def _flatten(value: Mapping[str, Any], prefix: str, flat: dict[str, Any], depth: int) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item and depth < MAX_ATTRIBUTE_DEPTH:
            _flatten(item, name + ".", flat, depth + 1)
        else:
            flat[name] = item


TRACE_KEYS = ("traceId", "trace_id", "context.trace_id")
SPAN_KEYS = ("spanId", "span_id", "context.span_id")
PARENT_KEYS = ("parentSpanId", "parent_span_id", "parent_id")
NOT_TRACES = ("not traces: the first record is neither an OTLP JSON document ({\"resourceSpans\": …}) nor a span "
              "(traceId and spanId, or context.trace_id and context.span_id); the file was not read as traces")


def _first(record: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    """(the key, the value) of the first of `keys` the record holds (``context.`` keys inside its
    ``context`` object); ``(keys[0], None)`` when none."""
    context = record.get("context") if isinstance(record.get("context"), Mapping) else {}
    for key in keys:
        holder, name = (context, key[8:]) if key.startswith("context.") else (record, key)
        if name in holder:
            return key, holder[name]
    return keys[0], None


def _id(record: Mapping[str, Any], keys: tuple[str, ...], size: int, path: str) -> str:
    key, value = _first(record, keys)
    try:
        return hex_id(value, size)
    except ValueError as exc:
        raise ValueError(f"{path}{key}: {exc}") from None


def span_of(record: Mapping[str, Any], path: str = "") -> Span:
    """A span from its OTLP JSON or flat form (`path`: where it is in its document, e.g.
    ``resourceSpans[0].scopeSpans[0].spans[2]``, put before the messages). Raises `ValueError`
    naming what is missing or wrong (no trace or span id, a malformed id, malformed attributes)."""
    at = f"{path}." if path else ""
    trace = _id(record, TRACE_KEYS, 16, at)
    span = _id(record, SPAN_KEYS, 8, at)
    if not trace or not span:
        raise ValueError(f"{path + ': ' if path else ''}a span needs a trace id and a span id (traceId and spanId)")
    parent = _id(record, PARENT_KEYS, 8, at)
    status = record.get("status") if isinstance(record.get("status"), Mapping) else {}
    code = status.get("code", record.get("status_code", ""))
    start = record.get("startTimeUnixNano", record.get("start_time_unix_nano", 0))
    try:
        start = int(start)
    except (TypeError, ValueError, OverflowError):
        start = 0  # an ISO time (Phoenix): order falls back to the file's
    attributes = attributes_of(record.get("attributes"), f"{at}attributes")
    kind = record.get("span_kind")  # Phoenix gives openinference.span.kind here, not among the attributes
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":
        attributes.setdefault("openinference.span.kind", kind)
    return Span(trace, span, parent, str(record.get("name") or ""), start,
                "ERROR" if code in (2, "2", "STATUS_CODE_ERROR", "ERROR") else "",
                str(status.get("message") or record.get("status_message") or ""), attributes)


def is_span(record: Mapping[str, Any]) -> bool:
    """Whether a record names a trace id and a span id (under any of the keys `span_of` reads)."""
    return bool(_first(record, TRACE_KEYS)[1] and _first(record, SPAN_KEYS)[1])


def _names_an_id(record: Mapping[str, Any]) -> bool:
    """Whether a record has any of the keys a span's trace or span id is read from (even empty)."""
    context = record.get("context") if isinstance(record.get("context"), Mapping) else {}
    return any((key[8:] in context) if key.startswith("context.") else (key in record)
               for key in TRACE_KEYS + SPAN_KEYS)


def spans_of_document(document: Mapping[str, Any], on_bad: Callable[[str], None] | None = None) -> Iterator[Span]:
    """The spans of one ``{"resourceSpans": …}`` document, in order. A part of the wrong shape
    (see the module docstring) goes to `on_bad(message)`, the message naming its JSON path, and
    is skipped; without `on_bad` it raises `ValueError`."""

    def bad(exc: ValueError) -> None:
        if on_bad is None:
            raise exc
        on_bad(str(exc))

    try:
        resources = _items(document.get("resourceSpans"), "resourceSpans")
    except ValueError as exc:
        bad(exc)
        return
    for r, resource in enumerate(resources):
        where = f"resourceSpans[{r}]"
        try:
            resource = _object(resource, where)
            key = "scopeSpans" if "scopeSpans" in resource or "instrumentationLibrarySpans" not in resource \
                else "instrumentationLibrarySpans"
            scopes = _items(resource.get(key), f"{where}.{key}")
        except ValueError as exc:
            bad(exc)
            continue
        for s, scope in enumerate(scopes):
            within = f"{where}.{key}[{s}]"
            try:
                records = _items(_object(scope, within).get("spans"), f"{within}.spans")
            except ValueError as exc:
                bad(exc)
                continue
            for n, record in enumerate(records):
                try:
                    yield span_of(_object(record, f"{within}.spans[{n}]"), f"{within}.spans[{n}]")
                except ValueError as exc:
                    bad(exc)


def read_documents(lines: Iterable[bytes], on_problem: OnSpanProblem, whole: Callable[[], bytes] | None = None
                   ) -> Iterator[tuple[int, list[Span]]]:
    """``(line, spans)`` for each document of an OTLP JSON or span-JSONL file given as its lines
    (a line holding one span is a document of one span). When the first non-blank line opens an
    object it does not close whose first key is ``resourceSpans`` (one document written over many
    lines) and `whole` is given, the file is read whole through it instead (the only case that
    is); any other bad line is a problem of its own, and the lines after it are read. Problems go to `on_problem(line,
    message)` (module docstring)."""
    first = at_start = True
    numbered = _Lines(content_lines(lines))
    for number, raw in numbered:
        was_start, at_start = at_start, False
        try:
            record = json.loads(raw.decode("utf-8"), strict=False)
        except RecursionError:
            on_problem(number, f"too deeply nested (more than about {MAX_DECODED_DEPTH:,} levels); not read")
            continue
        except ValueError as exc:
            if was_start and whole is not None and _cut_object(raw, exc) and \
                    _first_key(raw.decode("utf-8", errors="replace"), numbered.peek()) == "resourceSpans":
                yield from _whole_document(whole(), on_problem)
                return
            on_problem(number, f"invalid JSON: {getattr(exc, 'msg', exc)}")
            continue
        if not isinstance(record, dict):
            on_problem(number, f"expected a JSON object (an OTLP document or a span), not {_shape(record)}")
            first = False
            continue
        if "resourceSpans" in record:
            yield number, list(spans_of_document(record, lambda message, n=number: on_problem(n, message)))
        elif first and not _names_an_id(record):
            on_problem(number, NOT_TRACES)
            return
        else:
            try:
                yield number, [span_of(record)]
            except ValueError as exc:
                on_problem(number, str(exc))
        first = False


def read_spans(lines: Iterable[bytes], on_problem: OnSpanProblem, whole: Callable[[], bytes] | None = None
               ) -> Iterator[tuple[int, Span]]:
    """``(line, span)`` for each span of an OTLP JSON or span-JSONL file given as its lines
    (`read_documents`, its documents' spans one after the other)."""
    for number, spans in read_documents(lines, on_problem, whole):
        for span in spans:
            yield number, span


def _whole_document(data: bytes, on_problem: OnSpanProblem) -> Iterator[tuple[int, list[Span]]]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        document = json.loads(data.decode("utf-8"), strict=False)
    except (ValueError, RecursionError) as exc:
        on_problem(getattr(exc, "lineno", 1), f"invalid JSON: {getattr(exc, 'msg', exc)}")
        return
    if not isinstance(document, dict) or "resourceSpans" not in document:
        on_problem(1, "expected an OTLP JSON document ({\"resourceSpans\": …})")
        return
    yield 1, list(spans_of_document(document, lambda message: on_problem(1, message)))


SNIFF_LINES = 100
"""The most lines format detection passes over that are no JSON object (not JSON, nested too
deeply for the decoder, a list) before it decides the file holds no spans."""


def looks_like_spans(lines: Iterable[bytes]) -> bool:
    """Whether a file, given as its lines (bytes, as a binary file yields them), holds OTLP JSON
    or a JSONL of spans, told by its structure: the first line that is a JSON object decides, a
    ``{"resourceSpans": …}`` document or a span (a trace and a span id: `is_span`) being traces
    and any other object not, however long that line is. Lines that are no JSON object (a bad
    line, one nested too deeply) are passed over, up to `SNIFF_LINES` of them. A first line that
    opens an object it does not close is traces when that object's first key is ``resourceSpans``
    (one document written over many lines), and otherwise a bad line."""
    passed = 0
    numbered = _Lines(content_lines(lines))
    for _, raw in numbered:
        text = raw.decode("utf-8", errors="replace")
        try:
            record = json.loads(text, strict=False)
        except RecursionError:
            record = None
        except ValueError as exc:
            if passed == 0 and _opens_object(text, exc) and _first_key(text, numbered.peek()) == "resourceSpans":
                return True
            record = None
        if isinstance(record, dict):
            return "resourceSpans" in record or is_span(record)
        passed += 1
        if passed >= SNIFF_LINES:
            return False
    return False


def _opens_object(text: str, exc: ValueError) -> bool:
    """Whether `text`, which did not parse (`exc`), starts an object its line does not close."""
    return text.lstrip().startswith("{") and getattr(exc, "pos", -1) >= len(text.rstrip())


def _first_key(text: str, more: Iterator[bytes]) -> str | None:
    """The first key of the object `text` opens, reading lines from `more` until it is written
    (at most `SNIFF_LINES` of them); None when the object has no key first."""
    for _ in range(SNIFF_LINES):
        i = text.index("{") + 1
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text):
            if text[i] != '"':
                return None
            try:
                key, _ = json.JSONDecoder(strict=False).raw_decode(text, i)
            except ValueError:
                key = None
            if isinstance(key, str):
                return key
        line = next(more, None)
        if line is None:
            return None
        text += line.decode("utf-8", errors="replace")
    return None


def _cut_object(raw: bytes, exc: ValueError) -> bool:
    """Whether the line `raw`, which did not parse (`exc`), starts an object it does not close."""
    return _opens_object(raw.decode("utf-8", errors="replace"), exc)


class _Lines:
    """Numbered lines that can be looked ahead at: `peek` yields the raw lines after the current
    one, and those it yielded come again from the iteration."""

    def __init__(self, numbered: Iterator[tuple[int, bytes]]):
        self._numbered = numbered
        self._ahead: list[tuple[int, bytes]] = []

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> tuple[int, bytes]:
        return self._ahead.pop(0) if self._ahead else next(self._numbered)

    def peek(self) -> Iterator[bytes]:
        for entry in self._numbered:
            self._ahead.append(entry)
            yield entry[1]


__all__ = ["NOT_TRACES", "OnSpanProblem", "Span", "any_value", "attributes_of", "hex_id", "is_span",
           "SNIFF_LINES", "looks_like_spans", "read_documents", "read_spans", "span_of", "spans_of_document"]

"""OTLP JSON spans, streamed: the OpenTelemetry Collector's file exporter format (one
``{"resourceSpans": …}`` document per line, or one document over many lines) and JSONL of spans.

A span line may be an OTLP span (``traceId``, ``spanId``, ``parentSpanId``, ``attributes`` as a
list of ``{key, value: AnyValue}``) or a flat one (``trace_id`` / ``context.trace_id``,
``span_id``, ``parent_id`` / ``parent_span_id``, ``attributes`` as an object, as Phoenix and many
exporters write). Ids are read as hex (OTLP/JSON's spelling); 16 or 8 bytes written in base64
(protobuf's default JSON) are turned into hex. A flat span's ``span_kind`` (Phoenix's) stands
for ``openinference.span.kind``. Attributes are kept flat (``llm.input_messages.0
.message.role``); a nested attributes object is flattened to dotted keys.

`read_spans` yields ``(line, Span)``; a line that is not JSON, not an object or holds a span
without ids goes to `on_problem(line, message)` and is skipped.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

OnSpanProblem = Callable[[int, str], None]
MAX_ATTRIBUTE_DEPTH = 20


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


def any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": …}``, ``intValue`` as a string, ``arrayValue``,
    ``kvlistValue``, …) as a plain value; anything else as it is."""
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
        return [any_value(v, depth + 1) for v in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return {kv.get("key"): any_value(kv.get("value"), depth + 1)
                for kv in (value["kvlistValue"] or {}).get("values") or () if isinstance(kv, Mapping)}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None if not value else value


def attributes_of(value: Any) -> dict[str, Any]:
    """Attributes as a flat dict: an OTLP list of ``{key, value}``, or an object (nested objects
    flattened to dotted keys)."""
    flat: dict[str, Any] = {}
    if isinstance(value, list):
        for kv in value:
            if isinstance(kv, Mapping) and isinstance(kv.get("key"), str):
                flat[kv["key"]] = any_value(kv.get("value"))
    elif isinstance(value, Mapping):
        _flatten(value, "", flat, 0)
    return flat


def _flatten(value: Mapping[str, Any], prefix: str, flat: dict[str, Any], depth: int) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item and depth < MAX_ATTRIBUTE_DEPTH:
            _flatten(item, name + ".", flat, depth + 1)
        else:
            flat[name] = item


def span_of(record: Mapping[str, Any]) -> Span:
    """A span from its OTLP JSON or flat form. Raises `ValueError` naming what is missing or
    wrong (no trace or span id, a malformed id)."""
    context = record.get("context") if isinstance(record.get("context"), Mapping) else {}
    trace = record.get("traceId", record.get("trace_id", context.get("trace_id")))
    span = record.get("spanId", record.get("span_id", context.get("span_id")))
    if not trace or not span:
        raise ValueError("a span needs a trace id and a span id (traceId and spanId)")
    parent = record.get("parentSpanId", record.get("parent_span_id", record.get("parent_id")))
    status = record.get("status") if isinstance(record.get("status"), Mapping) else {}
    code = status.get("code", record.get("status_code", ""))
    start = record.get("startTimeUnixNano", record.get("start_time_unix_nano", 0))
    try:
        start = int(start)
    except (TypeError, ValueError):
        start = 0  # an ISO time (Phoenix): order falls back to the file's
    attributes = attributes_of(record.get("attributes"))
    kind = record.get("span_kind")  # Phoenix gives openinference.span.kind here, not among the attributes
    if isinstance(kind, str) and kind and kind.upper() != "UNKNOWN":
        attributes.setdefault("openinference.span.kind", kind)
    return Span(hex_id(trace, 16), hex_id(span, 8), hex_id(parent, 8), str(record.get("name") or ""), start,
                "ERROR" if code in (2, "2", "STATUS_CODE_ERROR", "ERROR") else "",
                str(status.get("message") or record.get("status_message") or ""), attributes)


def spans_of_document(document: Mapping[str, Any]) -> Iterator[Span]:
    """The spans of one ``{"resourceSpans": …}`` document, in order. Raises `ValueError` for a
    span without ids."""
    for resource in document.get("resourceSpans") or ():
        if not isinstance(resource, Mapping):
            continue
        for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or ():
            if not isinstance(scope, Mapping):
                continue
            for record in scope.get("spans") or ():
                if isinstance(record, Mapping):
                    yield span_of(record)


def read_spans(lines: Iterable[bytes], on_problem: OnSpanProblem, whole: Callable[[], bytes] | None = None
               ) -> Iterator[tuple[int, Span]]:
    """``(line, span)`` for each span of an OTLP JSON or span-JSONL file given as its lines.
    When the first non-blank line is not JSON on its own (one document written over many lines)
    and `whole` is given, the file is read whole through it instead (the only case that is).
    Problems go to `on_problem(line, message)`; the line is skipped."""
    first = True
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"), strict=False)
        except (ValueError, RecursionError) as exc:
            if first and whole is not None and raw.lstrip().startswith(b"{"):
                yield from _whole_document(whole(), on_problem)
                return
            on_problem(number, f"invalid JSON: {getattr(exc, 'msg', exc)}")
            continue
        first = False
        if not isinstance(record, dict):
            on_problem(number, "expected a JSON object (an OTLP document or a span)")
            continue
        try:
            if "resourceSpans" in record:
                for span in spans_of_document(record):
                    yield number, span
            else:
                yield number, span_of(record)
        except ValueError as exc:
            on_problem(number, str(exc))


def _whole_document(data: bytes, on_problem: OnSpanProblem) -> Iterator[tuple[int, Span]]:
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
    try:
        for span in spans_of_document(document):
            yield 1, span
    except ValueError as exc:
        on_problem(1, str(exc))


def looks_like_spans(head: bytes) -> bool:
    """Whether the start of a file (its first bytes) reads as OTLP JSON or a JSONL of spans:
    ``resourceSpans`` near the start, or a first line that is an object with a trace and a span id."""
    if b'"resourceSpans"' in head:
        return True
    line = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    context = record.get("context") if isinstance(record.get("context"), dict) else {}
    return bool((record.get("traceId") or record.get("trace_id") or context.get("trace_id"))
                and (record.get("spanId") or record.get("span_id") or context.get("span_id")))


__all__ = ["OnSpanProblem", "Span", "any_value", "attributes_of", "hex_id", "looks_like_spans", "read_spans",
           "span_of", "spans_of_document"]

"""Evaluations (`engine.traces.evaluations`) out as OpenTelemetry log records: written to a file
as OTLP JSON (what the Collector's file exporter writes: one ``{"resourceLogs": …}`` document
per line, ids in hex; the standard library only), or sent to an OTLP/HTTP endpoint by the
OpenTelemetry SDK's exporter (``scorespec[otlp]``).

Each record is an event named ``gen_ai.evaluation.result`` (``eventName``), parented to the
judged span by its ``traceId`` and ``spanId``, with the evaluation's attributes; the resource is
``service.name = scorespec``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from .evaluations import EVENT_NAME, Evaluation

BATCH = 512  # log records per document (per line)
SERVICE = "scorespec"


class OtlpExportError(UserError, RuntimeError):
    """The evaluations could not be sent or written (the SDK missing, the endpoint refusing)."""


def any_value(value: Any) -> dict[str, Any]:
    """A plain value as an OTLP/JSON ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def log_record(evaluation: Evaluation, now_ns: int) -> dict[str, Any]:
    """One evaluation as an OTLP/JSON log record."""
    return {"timeUnixNano": str(now_ns), "observedTimeUnixNano": str(now_ns), "eventName": EVENT_NAME,
            "severityNumber": 9, "severityText": "INFO", "traceId": evaluation.trace_id,
            "spanId": evaluation.span_id, "flags": 1,
            "attributes": [{"key": k, "value": any_value(v)} for k, v in evaluation.attributes().items()]}


def document(evaluations: list[Evaluation], now_ns: int) -> dict[str, Any]:
    """The evaluations as one ``{"resourceLogs": …}`` document."""
    return {"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": SERVICE}}]},
        "scopeLogs": [{"scope": {"name": SERVICE},
                       "logRecords": [log_record(e, now_ns) for e in evaluations]}]}]}


def write_file(evaluations: Iterable[Evaluation], path: str | os.PathLike[str]) -> int:
    """Write the evaluations to `path` as OTLP JSON (a document per `BATCH` records, a line
    each; the file replaced, its folder made). Returns how many were written; raises `OSError`."""
    count = 0
    now = time.time_ns()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        batch: list[Evaluation] = []
        for evaluation in evaluations:
            batch.append(evaluation)
            if len(batch) == BATCH:
                f.write(json.dumps(document(batch, now), ensure_ascii=False) + "\n")
                count += len(batch)
                batch = []
        if batch:
            f.write(json.dumps(document(batch, now), ensure_ascii=False) + "\n")
            count += len(batch)
    return count


def send_http(evaluations: Iterable[Evaluation], endpoint: str, timeout_s: float = 10.0) -> int:
    """Send the evaluations to the OTLP/HTTP logs endpoint `endpoint` (the full URL, e.g.
    ``http://HOST:4318/v1/logs``) through the OpenTelemetry SDK (a logger provider and its
    OTLP/HTTP log exporter). Returns how many were sent; raises `OtlpExportError` without the
    SDK (``pip install 'scorespec[otlp]'``) or when the endpoint does not take them."""
    try:
        from opentelemetry import trace
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import LogRecordExportResult, SimpleLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise OtlpExportError(f"sending to an OTLP/HTTP endpoint needs the OpenTelemetry SDK: "
                              f"pip install 'scorespec[otlp]' ({exc})") from None

    class Checked(OTLPLogExporter):  # type: ignore[misc]
        failed = 0

        def export(self, batch: Any) -> Any:
            result = super().export(batch)
            if result != LogRecordExportResult.SUCCESS:
                Checked.failed += len(batch)
            return result

    exporter = Checked(endpoint=endpoint, timeout=timeout_s)
    provider = LoggerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger(SERVICE)
    count = 0
    try:
        for evaluation in evaluations:
            context = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
                int(evaluation.trace_id, 16), int(evaluation.span_id, 16), is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))))
            logger.emit(LogRecord(context=context, event_name=EVENT_NAME, severity_number=SeverityNumber.INFO,
                                  severity_text="INFO", attributes=evaluation.attributes()))
            count += 1
    finally:
        provider.shutdown()
    if Checked.failed:
        raise OtlpExportError(f"{endpoint}: {Checked.failed} of {count} evaluation record(s) were not accepted")
    return count


def export(evaluations: Iterable[Evaluation], target: str) -> int:
    """`send_http` for an ``http://`` / ``https://`` `target`, else `write_file` to that path."""
    if target.lower().startswith(("http://", "https://")):
        return send_http(evaluations, target)
    return write_file(evaluations, target)


__all__ = ["BATCH", "OtlpExportError", "any_value", "document", "export", "log_record", "send_http", "write_file"]

"""Telemetry in and out: OpenTelemetry traces read as items, scores written back as telemetry.

Spans come from OTLP JSON (`otlp_json`: the file exporter's documents, or a JSONL of spans) or
from a running Phoenix server (`phoenix`); `conventions` reads what a span says under the
OpenInference and the GenAI semantic conventions; `assemble` groups spans into traces as they
stream and makes one record per trace (or per span of the kinds asked for), noting for each run
field which attributes were looked for when none gave it. Scores go back as
``gen_ai.evaluation.result`` events (`evaluations`) written as OTLP JSON log records or sent to
an OTLP/HTTP endpoint (`otlp_export`), or as Phoenix span annotations (`phoenix`).

Reading OTLP JSON and writing OTLP JSON files need only the standard library; the OpenTelemetry
SDK (``scorespec[otlp]``) and Phoenix's client (``scorespec[phoenix]``) are imported only by the
functions that use them.

May import: `engine.core`.
"""

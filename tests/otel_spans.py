"""Real OpenTelemetry SDK spans for the trace tests: made by a tracer of their own, captured by
the SDK's in-memory exporter, and written as OTLP JSON through the SDK's own OTLP encoder
(protobuf's JSON, its base64 ids turned into OTLP/JSON's hex), one document per line as the
Collector's file exporter writes them."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ID_KEYS = ("traceId", "spanId", "parentSpanId")


@contextmanager
def captured() -> Iterator[tuple[Any, Any]]:
    """(tracer, exporter): a tracer whose ended spans the in-memory exporter keeps."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider.get_tracer("tests"), exporter
    finally:
        provider.shutdown()


def hex_ids(value: Any) -> Any:
    """protobuf's JSON with every id (base64) turned into hex, as OTLP/JSON writes ids."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v).hex() if k in ID_KEYS and isinstance(v, str) else hex_ids(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value


def otlp_document(spans: Iterable[Any]) -> dict[str, Any]:
    """The spans as one OTLP JSON document (``{"resourceSpans": …}``), by the SDK's encoder."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return hex_ids(json_format.MessageToDict(encode_spans(list(spans))))


def write_otlp(path: Path, batches: Iterable[Iterable[Any]]) -> Path:
    """One OTLP JSON document per batch of spans, a line each."""
    path.write_text("".join(json.dumps(otlp_document(batch)) + "\n" for batch in batches), encoding="utf-8")
    return path


def openinference_trace(tracer: Any, *, answer: str | None = "Paris is the capital of France.",
                        expected: str | None = None) -> None:
    """A RAG agent's trace with OpenInference attributes: a CHAIN root (input.value and, unless
    `answer` is None, output.value), a RETRIEVER with two documents, an LLM with a system
    prompt and messages, a TOOL call with its result."""
    with tracer.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "What is the capital of France?")
        if expected is not None:
            root.set_attribute("eval.expected", expected)
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("input.value", "capital of France")
            span.set_attribute("retrieval.documents.0.document.content", "Paris is the capital of France.")
            span.set_attribute("retrieval.documents.1.document.content", "France is in Europe.")
        with tracer.start_as_current_span("lookup") as span:
            span.set_attribute("openinference.span.kind", "TOOL")
            span.set_attribute("tool.name", "search")
            span.set_attribute("input.value", '{"query": "capital of France"}')
            span.set_attribute("output.value", "Paris")
        with tracer.start_as_current_span("llm") as span:
            span.set_attribute("openinference.span.kind", "LLM")
            span.set_attribute("llm.input_messages.0.message.role", "system")
            span.set_attribute("llm.input_messages.0.message.content", "Answer from the documents.")
            span.set_attribute("llm.input_messages.1.message.role", "user")
            span.set_attribute("llm.input_messages.1.message.content", "What is the capital of France?")
            if answer is not None:
                span.set_attribute("llm.output_messages.0.message.role", "assistant")
                span.set_attribute("llm.output_messages.0.message.content", answer)
        if answer is not None:
            root.set_attribute("output.value", answer)


def genai_trace(tracer: Any) -> None:
    """An agent's trace with GenAI semantic-convention attributes only: an invoke_agent root
    with no input or output of its own, a chat span with system instructions and messages, an
    execute_tool span with its arguments and result."""
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.system_instructions", json.dumps([{"type": "text", "content": "Be brief."}]))
            span.set_attribute("gen_ai.input.messages", json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]))
            span.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather",
                                                  "arguments": {"city": "Paris"}}]}]))
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "get_weather")
            span.set_attribute("gen_ai.tool.call.id", "c1")
            span.set_attribute("gen_ai.tool.call.arguments", '{"city": "Paris"}')
            span.set_attribute("gen_ai.tool.call.result", '{"temp_c": 21}')
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.input.messages", json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]))
            span.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "21 °C and sunny."}],
                  "finish_reason": "stop"}]))

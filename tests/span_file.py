"""A large OTLP JSON trace file for measuring memory: ``python tests/span_file.py OUT SPANS``
writes SPANS spans (4 per trace: a CHAIN root, a RETRIEVER with two documents, a TOOL, an LLM
with messages; OpenInference attributes; about 1.2 kB a span), one ``resourceSpans`` document
per trace, each trace's root last as SDKs export it. ``python tests/span_file.py --measure
OUT`` then reads it as `scorespec eval` does (`engine.run.datasets.iter_items`) and prints the
items and the process's peak resident memory."""

from __future__ import annotations

import json
import sys

SPANS_PER_TRACE = 4


def kv(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def trace_document(number: int) -> dict:
    trace_id = f"{number + 1:032x}"
    root = f"{4 * number + 1:016x}"
    start = 1_700_000_000_000_000_000 + number * 1_000_000
    question = f"Question {number}: what is the capital of country {number % 197}?"
    answer = f"The capital of country {number % 197} is city {number % 1009}."
    children = [
        ("retrieve", "RETRIEVER", [kv("input.value", question)] + [
            kv(f"retrieval.documents.{i}.document.content", f"Passage {i} about country {number % 197}: " + "x" * 200)
            for i in range(2)]),
        ("lookup", "TOOL", [kv("tool.name", "search"), kv("input.value", json.dumps({"q": question})),
                            kv("output.value", "city " + str(number % 1009))]),
        ("llm", "LLM", [kv("llm.input_messages.0.message.role", "system"),
                        kv("llm.input_messages.0.message.content", "Answer from the passages. " + "y" * 100),
                        kv("llm.input_messages.1.message.role", "user"),
                        kv("llm.input_messages.1.message.content", question),
                        kv("llm.output_messages.0.message.role", "assistant"),
                        kv("llm.output_messages.0.message.content", answer)]),
    ]
    spans = [{"traceId": trace_id, "spanId": f"{4 * number + 2 + i:016x}", "parentSpanId": root, "name": name,
              "kind": 1, "startTimeUnixNano": str(start + 10 + i), "endTimeUnixNano": str(start + 100 + i),
              "attributes": [kv("openinference.span.kind", kind)] + attrs, "status": {}}
             for i, (name, kind, attrs) in enumerate(children)]
    spans.append({"traceId": trace_id, "spanId": root, "name": "agent", "kind": 1,
                  "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 200), "status": {},
                  "attributes": [kv("openinference.span.kind", "CHAIN"), kv("input.value", question),
                                 kv("output.value", answer)]})
    return {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "rag-app")]},
                               "scopeSpans": [{"scope": {"name": "generator"}, "spans": spans}]}]}


def write(path: str, spans: int) -> int:
    """Write `spans` spans (rounded down to whole traces) to `path`; returns the traces written."""
    traces = spans // SPANS_PER_TRACE
    with open(path, "w", encoding="utf-8") as f:
        for number in range(traces):
            f.write(json.dumps(trace_document(number)) + "\n")
    return traces


def measure(path: str) -> tuple[int, float]:
    """(items read, peak resident memory in MiB) of reading `path` as a run's data."""
    import resource

    from engine.run.datasets import iter_items

    count = sum(1 for _ in iter_items(path))
    return count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    if sys.argv[1] == "--measure":
        items, peak = measure(sys.argv[2])
        print(f"{items} items; peak resident memory {peak:.0f} MiB")
    else:
        print(f"{write(sys.argv[1], int(sys.argv[2]))} traces written")

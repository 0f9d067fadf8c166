#!/usr/bin/env python3
"""Reading a Phoenix project as items: the reader's peak memory, batched by trace against whole.

    python tests/bench/bench_phoenix_read.py                 # 4,000 traces of 5 spans (20,000 spans)
    python tests/bench/bench_phoenix_read.py --traces 20000  # 100,000 spans

A real Phoenix server is started on 127.0.0.1 (`tests/phoenix_server.py`, a temporary SQLite
database) and sent the traces over OTLP/HTTP by the OpenTelemetry SDK (the test suite's RAG trace:
a chain, a retriever, a tool, an LLM and its answer). Then each way of reading runs in a fresh
process, which reads every trace into items and prints its peak resident memory
(``ru_maxrss``) and the memory after the imports alone:

- ``batched``: `engine.traces.source.TraceSource` as `eval --data phoenix://…` reads it (the trace
  ids first, then the spans of `engine.traces.phoenix.TRACES_PER_READ` traces a request);
- ``whole``: the project's spans in one `get_spans` call, grouped by trace, then the same
  assembly (how the reader worked before it was batched).

Needs the test extra (Phoenix, the OpenTelemetry SDK). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

PROJECT = "bench"

READER = r"""
import json, resource, sys, time
from engine.traces.source import TraceSource
import engine.traces.phoenix as reader
from phoenix.client import Client
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
url, mode = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if mode == "batched":
    items = sum(1 for _ in TraceSource(url).records({}, lambda *a: None))
else:
    from engine.traces.assemble import TraceOptions, assemble_documents
    from engine.traces.otlp_json import span_of
    base_url, project = reader.parse_url(url)
    spans = Client(base_url=base_url).spans.get_spans(project_identifier=project, limit=reader.MAX_SPANS, timeout=600)
    grouped = reader._grouped(span_of(dict(record)) for record in spans)
    items = sum(1 for _ in assemble_documents(enumerate(grouped, start=1), TraceOptions(), {}, lambda *a: None))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"items": items, "seconds": seconds, "peak_mb": peak / 1024, "imports_mb": base / 1024}))
"""


def send(url: str, traces: int) -> int:
    """`traces` RAG traces sent to Phoenix in the project `PROJECT`; the spans sent."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from otel_spans import openinference_trace

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces"),
                                                   max_queue_size=100_000, max_export_batch_size=2_000))
    tracer = provider.get_tracer("bench")
    for n in range(traces):
        openinference_trace(tracer, answer=f"Answer {n}: Paris is the capital of France.")
    provider.shutdown()
    return traces * 5


def wait_for(url: str, spans: int) -> None:
    from phoenix.client import Client

    client = Client(base_url=url)
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        try:
            if len(client.traces.get_traces(project_identifier=PROJECT, limit=10_000_000, timeout=600)) * 5 >= spans:
                return
        except Exception:  # the project appears with its first span
            pass
        time.sleep(2)
    raise SystemExit(f"Phoenix did not store {spans} spans in 30 minutes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=4_000)
    args = parser.parse_args()
    from phoenix_server import PhoenixServer

    with tempfile.TemporaryDirectory() as folder, PhoenixServer(Path(folder) / "phoenix") as server:
        spans = send(server.url, args.traces)
        wait_for(server.url, spans)
        url = f"phoenix://{server.url.removeprefix('http://')}/{PROJECT}"
        print(f"| read | traces | spans | items | seconds | peak RSS (MB) | after imports (MB) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for mode in ("batched", "whole"):
            done = subprocess.run([sys.executable, "-c", READER, url, mode], capture_output=True, text=True,
                                  cwd=ROOT, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"| {mode} | {args.traces:,} | {spans:,} | {row['items']:,} | {row['seconds']:.1f} | "
                  f"{row['peak_mb']:.0f} | {row['imports_mb']:.0f} |")


if __name__ == "__main__":
    main()

"""Phoenix both ways, against a real Phoenix server started by the test (127.0.0.1, a temporary
working directory, SQLite): traces sent with the OpenTelemetry SDK, scored by ``scorespec eval
--data phoenix://… --export-phoenix …``, the annotations read back through Phoenix's client."""

from __future__ import annotations

import time

import pytest
from conftest import require_phoenix
from otel_spans import openinference_trace
from phoenix_server import PhoenixServer
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine.traces.source import TraceSource

pytestmark = pytest.mark.slow  # Phoenix takes about 20 s to start
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
PROJECT = "rag-app"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    """One Phoenix server for the module, stopped at the end."""
    require_phoenix()
    with PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def send_traces(url: str) -> list:
    """Two OpenInference traces (one with no output) sent to Phoenix's OTLP/HTTP endpoint; their spans."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("tests")
    openinference_trace(tracer)
    openinference_trace(tracer, answer="Lyon")
    openinference_trace(tracer, answer=None)
    provider.shutdown()
    return list(kept.get_finished_spans())


def wait_for_spans(client, count: int) -> None:
    """Phoenix writes received spans in the background: wait until the project holds `count`."""
    for _ in range(120):
        try:
            if len(client.spans.get_spans(project_identifier=PROJECT, limit=1000)) >= count:
                return
        except Exception:  # the project appears with its first span
            pass
        time.sleep(0.5)
    raise AssertionError(f"Phoenix did not store {count} spans")


def test_eval_reads_phoenix_traces_and_logs_scores_back_as_span_annotations(phoenix, tmp_path, monkeypatch):
    from phoenix.client import Client

    spans = send_traces(phoenix.url)
    client = Client(base_url=phoenix.url)
    wait_for_spans(client, len(spans))
    monkeypatch.chdir(tmp_path)
    host = phoenix.url.removeprefix("http://")
    result = CliRunner().invoke(app, [
        "eval", "includes", "--option", "expected=Paris", "--data", f"phoenix://{host}/{PROJECT}",
        "--item-cutoff", "includes=1", "--export-phoenix", phoenix.url, "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 2, result.output  # the trace with no output failed
    assert "the trace's root span has no output.value" in result.output
    roots = {f"{s.context.span_id:016x}": s for s in spans if s.parent is None}
    annotations = client.spans.get_span_annotations(span_ids=list(roots), project_identifier=PROJECT)
    got = {a["span_id"]: a for a in annotations if a["name"] == "includes"}
    assert set(got) == set(roots)
    by_answer = {roots[span_id].attributes.get("output.value"): a["result"] for span_id, a in got.items()}
    assert by_answer["Paris is the capital of France."] == {
        "score": 1.0, "label": "pass", "explanation": 'The output includes "Paris".'}
    assert by_answer["Lyon"]["score"] == 0.0 and by_answer["Lyon"]["label"] == "fail"
    failed = by_answer[None]
    assert failed["score"] is None and failed["label"] == "input"
    assert "output.value" in failed["explanation"]
    assert all(a["annotator_kind"] == "LLM" for a in got.values())


def test_phoenix_traces_are_read_a_batch_of_whole_traces_at_a_time(phoenix, monkeypatch):
    import engine.traces.phoenix as reader
    from phoenix.client import Client
    from phoenix.client.resources.spans import Spans

    client = Client(base_url=phoenix.url)
    try:
        before = len(client.spans.get_spans(project_identifier=PROJECT, limit=1000))
    except Exception:  # no project yet: this test runs first
        before = 0
    spans = send_traces(phoenix.url)
    wait_for_spans(client, before + len(spans))
    url = f"phoenix://{phoenix.url.removeprefix('http://')}/{PROJECT}"
    whole = [(line, record["id"]) for line, record in TraceSource(url).records({}, lambda *a: None)]
    asked, get_spans = [], Spans.get_spans

    def counted(self, **kwargs):
        found = get_spans(self, **kwargs)
        asked.append((len(kwargs.get("trace_ids") or ()), len({s["context"]["trace_id"] for s in found})))
        return found

    monkeypatch.setattr(reader, "TRACES_PER_READ", 1)
    monkeypatch.setattr(Spans, "get_spans", counted)
    batched = [(line, record["id"]) for line, record in TraceSource(url).records({}, lambda *a: None)]
    assert batched == whole and len(whole) >= 3  # the same items, one trace a request
    assert len(asked) == len(whole) and set(asked) == {(1, 1)}
    by_trace = {}
    for span in spans:
        by_trace.setdefault(f"{span.context.trace_id:032x}", []).append(span)
    read = dict(((trace[0].trace_id, len(trace)) for _, trace in reader.read_traces(url)))
    assert {trace_id: read.get(trace_id) for trace_id in by_trace} == {
        trace_id: len(members) for trace_id, members in by_trace.items()}  # every trace read whole


def test_an_unreachable_phoenix_is_an_error_naming_the_url(tmp_path, monkeypatch):
    from phoenix_server import free_port

    require_phoenix()
    monkeypatch.chdir(tmp_path)
    url = f"phoenix://127.0.0.1:{free_port()}/{PROJECT}"
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=Paris", "--data", url,
                                      "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 2
    assert url in result.output and "cannot read the spans" in result.output

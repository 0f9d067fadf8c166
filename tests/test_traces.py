"""OpenTelemetry traces as items, and scores back as telemetry: spans made by the real
OpenTelemetry SDK (`otel_spans`), written as OTLP JSON by its own encoder, read by `--data`;
the exported ``gen_ai.evaluation.result`` records parsed with the OTLP protobuf definitions."""

from __future__ import annotations

import base64
import json

import pytest
from otel_spans import captured, genai_trace, openinference_trace, otlp_document, write_otlp
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine.run.datasets import iter_items
from engine import run_evals
from engine.run.readers import detect_format
from engine.traces.assemble import TraceOptions, assemble
from engine.traces.otlp_json import read_spans
from engine.traces.source import TraceSource

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}


def spans_of(make, **kwargs):
    with captured() as (tracer, exporter):
        make(tracer, **kwargs)
        return list(exporter.get_finished_spans())


def ids(span) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def items_of(path, fields=None, **options):
    problems = []
    data = TraceSource(str(path), TraceOptions(**options)) if options else path
    return list(iter_items(data, fields, problems.append)), problems


def test_openinference_trace_is_one_item_with_context_tool_calls_and_system(tmp_path):
    spans = spans_of(openinference_trace)
    path = write_otlp(tmp_path / "traces.jsonl", [spans])
    root = next(s for s in spans if s.parent is None)
    assert detect_format(path) == "otlp"
    items, problems = items_of(path)
    assert problems == []
    [item] = items
    assert (item["id"], item["span_id"]) == ids(root)
    assert item["input"] == "What is the capital of France?"
    assert item["output"] == "Paris is the capital of France."
    assert item["context"] == ["Paris is the capital of France.", "France is in Europe."]
    assert item["system"] == "Answer from the documents."
    assert item["tool_calls"] == [{"name": "search", "arguments": {"query": "capital of France"}, "result": "Paris"}]


def test_genai_trace_takes_input_and_output_from_its_llm_spans(tmp_path):
    spans = spans_of(genai_trace)
    items, problems = items_of(write_otlp(tmp_path / "genai.json", [spans[:2], spans[2:]]))
    assert problems == []
    [item] = items
    assert item["input"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert item["output"] == [{"role": "assistant", "content": "21 °C and sunny."}]  # the last LLM span's answer
    assert item["system"] == "Be brief."
    assert item["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 21},
                                   "id": "c1"}]
    assert item["context"] is None and item["span_kind"] == "AGENT"


def test_item_per_span_gives_an_item_per_llm_span_named_by_trace_and_span(tmp_path):
    spans = spans_of(genai_trace)
    items, _ = items_of(write_otlp(tmp_path / "genai.jsonl", [spans]), item_per="span", span_kinds=("llm",))
    chats = [s for s in spans if s.name.startswith("chat")]
    assert [item["id"] for item in items] == [":".join(ids(s)) for s in chats]
    assert items[0]["output"][0]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert items[1]["output"] == [{"role": "assistant", "content": "21 °C and sunny."}]
    tools, _ = items_of(write_otlp(tmp_path / "genai.jsonl", [spans]), item_per="span", span_kinds=("TOOL",))
    assert [(t["input"], t["output"]) for t in tools] == [('{"city": "Paris"}', '{"temp_c": 21}')]
    assert tools[0]["tool_calls"][0]["result"] == {"temp_c": 21}


def test_a_trace_becomes_an_item_once_its_root_span_is_read(tmp_path):
    first, second = spans_of(openinference_trace), spans_of(genai_trace)
    lines = [json.dumps(otlp_document([s])).encode() for s in first + second]
    read = []

    def feed():
        for number, line in enumerate(lines):
            read.append(number)
            yield line

    records = assemble(read_spans(feed(), lambda line, message: None), TraceOptions(), {}, lambda *a: None)
    line, record = next(records)
    assert record["trace_id"] == ids(first[0])[0]
    assert read == list(range(len(first)))  # nothing of the second trace was read yet
    assert next(records)[1]["trace_id"] == ids(second[0])[0]


def test_field_mapping_reads_an_attribute_path(tmp_path):
    spans = spans_of(openinference_trace, expected="Paris")
    path = write_otlp(tmp_path / "t.jsonl", [spans])
    [item], _ = items_of(path, fields={"ground_truth": "eval.expected", "context": "retrieval.documents"})
    assert item["ground_truth"] == "Paris"
    assert json.loads(item["context"][1]) == {"document": {"content": "France is in Europe."}}


def test_a_pretty_printed_document_and_a_jsonl_of_flat_spans_are_read(tmp_path):
    spans = spans_of(openinference_trace)
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(otlp_document(spans), indent=2))
    flat = tmp_path / "flat.jsonl"
    flat.write_text("".join(json.dumps({
        "name": s.name, "context": {"trace_id": ids(s)[0], "span_id": ids(s)[1]},
        "parent_id": f"{s.parent.span_id:016x}" if s.parent else None, "attributes": dict(s.attributes)}) + "\n"
        for s in spans))
    for path in (pretty, flat):
        assert detect_format(path) == "otlp"
        [item], problems = items_of(path)
        assert problems == [] and item["output"] == "Paris is the capital of France."


def test_a_span_after_its_traces_root_is_reported_and_skipped(tmp_path):
    spans = spans_of(openinference_trace)
    path = write_otlp(tmp_path / "late.jsonl", [spans, spans[:1]])
    [item], problems = items_of(path)
    assert [(p.line, "comes after the document holding the trace's root span" in p.message) for p in problems] == [(2, True)]
    assert item["context"] == ["Paris is the capital of France.", "France is in Europe."]


def test_the_empty_output_trace_gets_no_score_and_its_error_names_the_attributes_looked_for(tmp_path):
    spans = spans_of(openinference_trace, answer=None)
    path = write_otlp(tmp_path / "empty.jsonl", [spans])
    summary = run_evals(path, ["includes"], store=False, out=tmp_path / "out.jsonl")
    [line] = [json.loads(text) for text in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert line["score"] is None and line["error"]["kind"] == "input"
    assert line["error"]["message"] == (
        "includes needs 'output' and the trace's root span has no output.value or output messages "
        "(llm.output_messages.*, gen_ai.output.messages), and no LLM span has output messages")
    assert summary.scorers["includes"].failed == 1


def hex_to_base64(value):
    """OTLP/JSON's hex ids as protobuf's JSON parser reads bytes (base64)."""
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId") else hex_to_base64(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [hex_to_base64(v) for v in value]
    return value


def test_export_otlp_writes_evaluation_events_on_the_judged_spans(tmp_path, monkeypatch):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    good, empty = spans_of(openinference_trace), spans_of(openinference_trace, answer=None)
    wrong = spans_of(openinference_trace, answer="Lyon")
    path = write_otlp(tmp_path / "traces.jsonl", [good, empty, wrong])
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=Paris", "--data", str(path),
                                      "--item-cutoff", "includes=1", "--export-otlp", "evals.jsonl",
                                      "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 2, result.output  # the empty trace failed
    [text] = (tmp_path / "evals.jsonl").read_text().splitlines()
    request = json_format.Parse(json.dumps(hex_to_base64(json.loads(text))), ExportLogsServiceRequest())
    records = request.resource_logs[0].scope_logs[0].log_records
    by_span = {(r.trace_id.hex(), r.span_id.hex()): r for r in records}
    roots = [next(s for s in spans if s.parent is None) for spans in (good, empty, wrong)]
    assert set(by_span) == {ids(r) for r in roots}

    def attributes(root):
        record = by_span[ids(root)]
        assert record.event_name == "gen_ai.evaluation.result"
        return {a.key: json_format.MessageToDict(a.value) for a in record.attributes}

    assert attributes(roots[0]) == {
        "gen_ai.evaluation.name": {"stringValue": "includes"}, "gen_ai.evaluation.score.value": {"doubleValue": 1.0},
        "gen_ai.evaluation.score.label": {"stringValue": "pass"},
        "gen_ai.evaluation.explanation": {"stringValue": 'The output includes "Paris".'}}
    assert attributes(roots[2])["gen_ai.evaluation.score.label"] == {"stringValue": "fail"}
    failed = attributes(roots[1])
    assert failed["error.type"] == {"stringValue": "input"}
    assert "gen_ai.evaluation.score.value" not in failed and "gen_ai.evaluation.score.label" not in failed
    assert "output.value" in failed["gen_ai.evaluation.explanation"]["stringValue"]


def test_export_labels_pass_or_fail_at_the_cutoff_the_spec_documents(tmp_path, monkeypatch):
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "paris.yaml").write_text(
        "id: paris\nextends: includes\ncutoff: 1\noptions:\n  expected:\n    default: Paris\n")
    path = write_otlp(tmp_path / "traces.jsonl", [spans_of(openinference_trace),
                                                  spans_of(openinference_trace, answer="Lyon")])
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "paris", "--data", str(path), "--export-otlp", "evals.jsonl",
                                      "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 0, result.output  # the documented cut-off labels the export, not the exit code
    [text] = (tmp_path / "evals.jsonl").read_text().splitlines()
    records = json.loads(text)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    labels = sorted(next(a["value"]["stringValue"] for a in r["attributes"] if a["key"] == "gen_ai.evaluation.score.label")
                    for r in records)
    assert labels == ["fail", "pass"]


@pytest.mark.parametrize("flags", [["--format", "csv"], ["--span-kind", "LLM"], ["--item-per", "tree"]])
def test_bad_trace_flags_exit_2(tmp_path, flags):
    path = write_otlp(tmp_path / "t.jsonl", [spans_of(openinference_trace)])
    result = CliRunner().invoke(app, ["eval", "includes", "--data", str(path), *flags], env=ENV)
    assert result.exit_code == 2


def test_the_generated_span_file_reads_as_one_item_per_trace(tmp_path):
    from span_file import write

    path = tmp_path / "spans.jsonl"
    assert write(str(path), 400) == 100
    items = list(iter_items(path))
    assert [item["id"] for item in items[:2]] == [f"{1:032x}", f"{2:032x}"] and len(items) == 100
    assert items[7]["context"][0].startswith("Passage 0 about country 7") and items[7]["tool_calls"][0]["name"] == "search"


def test_export_otlp_url_sends_the_records_through_the_sdk_exporter(tmp_path, monkeypatch):
    """A real OTLP/HTTP receiver on 127.0.0.1 (protobuf bodies on /v1/logs) gets the records."""
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
    )

    received = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            received.append((self.path, ExportLogsServiceRequest.FromString(body)))
            reply = ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spans = spans_of(openinference_trace)
        path = write_otlp(tmp_path / "traces.jsonl", [spans])
        monkeypatch.chdir(tmp_path)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/logs"
        result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=Paris", "--data", str(path),
                                          "--export-otlp", url, "--store", "store.sqlite"], env=ENV)
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 0, result.output
    records = [r for p, request in received for rl in request.resource_logs for sl in rl.scope_logs
               for r in sl.log_records]
    assert [p for p, _ in received] == ["/v1/logs"]
    [record] = records
    root = next(s for s in spans if s.parent is None)
    assert (record.trace_id.hex(), record.span_id.hex()) == ids(root)
    assert record.event_name == "gen_ai.evaluation.result"
    values = {a.key: a.value for a in record.attributes}
    assert values["gen_ai.evaluation.name"].string_value == "includes"
    assert values["gen_ai.evaluation.score.value"].double_value == 1.0
    assert "gen_ai.evaluation.score.label" not in values  # no cut-off given


def test_export_otlp_url_that_refuses_is_an_export_error(tmp_path, monkeypatch):
    from phoenix_server import free_port

    path = write_otlp(tmp_path / "traces.jsonl", [spans_of(openinference_trace)])
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=Paris", "--data", str(path),
                                      "--export-otlp", f"http://127.0.0.1:{free_port()}/v1/logs",
                                      "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 2 and "export:" in result.output and "not accepted" in result.output


# hand-written OTLP JSON, for the shapes the SDK never writes
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def otlp_span(span_id, parent="", **attributes):
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": span_id,
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}


def otlp_doc(*spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "app"}, "spans": list(spans)}]}]}


def rag_spans():
    """An LLM span and its root (CHAIN, input and output), in the order SDKs export them."""
    return [otlp_span("b7ad6b7169203331", "a3ce929d0e0e4736", **{"openinference.span.kind": "LLM",
                                                                  "llm.output_messages.0.message.content": "A."}),
            otlp_span("a3ce929d0e0e4736", **{"openinference.span.kind": "CHAIN", "input.value": "Q?",
                                             "output.value": "A."})]


def test_a_malformed_otlp_document_is_an_input_error_naming_file_line_and_path_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "w.json").write_text('{"resourceSpans": 5}\n')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=x", "--data", "w.json",
                                      "--store", "store.sqlite"], env=ENV)
    assert result.exit_code == 2
    assert "w.json:1: resourceSpans must be a list, not a number" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


CHILD = "resourceSpans[0].scopeSpans[0].spans[0]"
MALFORMED = [  # (how the document is spoilt, the problem's message), the child span spoilt when it names one
    (lambda d: d["resourceSpans"][0].update(scopeSpans={}), "resourceSpans[0].scopeSpans must be a list, not an object"),
    (lambda d: d["resourceSpans"].insert(0, "x"), "resourceSpans[0] must be an object, not a string"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"].append(3), "resourceSpans[0].scopeSpans[1] must be an object, not a number"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0].update(spans="x"),
     "resourceSpans[0].scopeSpans[0].spans must be a list, not a string"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"].append([1]),
     "resourceSpans[0].scopeSpans[0].spans[2] must be an object, not a list"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(attributes="a=b"),
     f"{CHILD}.attributes must be a list of {{key, value}} or an object, not a string"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(attributes=[["k", "v"]]),
     f"{CHILD}.attributes[0] must be an object with a string key ({{key, value}}), not a list"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(
        attributes=[{"key": "x", "value": {"arrayValue": [1]}}]), f"{CHILD}.attributes[0].value.arrayValue must be "
     "an object, not a list"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(
        attributes=[{"key": "x", "value": {"kvlistValue": {"values": 3}}}]),
     f"{CHILD}.attributes[0].value.kvlistValue.values must be a list, not a number"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(traceId="zz"),
     f"{CHILD}.traceId: id 'zz' is neither 32 hex digits nor 16 bytes in base64"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(spanId=12),
     f"{CHILD}.spanId: an id must be a string, not int"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(parentSpanId="not hex"),
     f"{CHILD}.parentSpanId: id 'not hex' is neither 16 hex digits nor 8 bytes in base64"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].pop("spanId"),
     f"{CHILD}: a span needs a trace id and a span id (traceId and spanId)"),
]


@pytest.mark.parametrize("spoil,message", MALFORMED)
def test_each_malformed_part_of_a_document_is_reported_by_its_json_path_and_the_rest_is_read(tmp_path, spoil, message):
    document = otlp_doc(*rag_spans())
    spoil(document)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(otlp_doc(otlp_span("00f067aa0ba902b8", "ffffffffffffffff"))) + "\n"
                    + json.dumps(document) + "\n")
    items, problems = items_of(path, item_per="trace")
    assert [str(p) for p in problems] == [f"{path}:2: {message}"]
    assert [item["id"] for item in items] == [TRACE]  # the span of line 1, and what else was whole, still read
    root_spoilt = message.startswith(("resourceSpans[0].scopeSpans must", "resourceSpans[0].scopeSpans[0].spans must"))
    assert items[0]["input"] == (None if root_spoilt else "Q?")


def test_reading_traces_never_raises_on_any_json_shape(tmp_path):
    """A fuzz: any JSON value put anywhere in a good document is read or reported by its JSON
    path, never raised."""
    from hypothesis import given
    from hypothesis import strategies as st

    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                          | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.sampled_from(["key", "value", "values", "stringValue", "arrayValue",
                                                             "kvlistValue", "spans", "traceId"]), inner, max_size=3),
                          max_leaves=8)

    def places(node, at=()):
        yield at
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from places(child, at + (key,))

    good = otlp_doc(*rag_spans())
    spots = [p for p in places(good) if p]

    @given(st.sampled_from(spots), values)
    def check(spot, value):
        document = json.loads(json.dumps(good))
        node = document
        for key in spot[:-1]:
            node = node[key]
        node[spot[-1]] = value
        path = tmp_path / "fuzz.jsonl"
        path.write_text(json.dumps(document) + "\n")
        items, problems = items_of(path, item_per="trace")
        assert all(p.line == 1 and p.message.startswith("resourceSpans") for p in problems), problems  # its path
        assert all(item["id"] == TRACE for item in items)

    check()


def guide_block(title):
    """A file the guide "Scoring traces" writes (its ```json title="…" block)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "traces.md").read_text(encoding="utf-8")
    return text.split(f'```json title="{title}"\n', 1)[1].split("```", 1)[0]


def test_within_one_document_a_root_before_its_children_still_gives_the_whole_trace(tmp_path):
    document = json.loads(guide_block("traces.json"))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.insert(0, spans.pop())  # the root first
    assert not spans[0].get("parentSpanId")
    for name, text in (("pretty.json", json.dumps(document, indent=2)), ("line.jsonl", json.dumps(document) + "\n")):
        (tmp_path / name).write_text(text)
        [item], problems = items_of(tmp_path / name)
        assert problems == []
        assert item["output"] == [{"role": "assistant", "content": "It is 330 metres tall."}]
        assert item["context"] == ["The Eiffel Tower is 330 metres tall.", "It was completed in 1889."]


def test_in_a_jsonl_of_single_spans_a_span_after_its_roots_line_is_left_out_but_one_document_keeps_it(tmp_path):
    lines = guide_block("agent_spans.jsonl").splitlines()
    root_first = [lines[2], lines[0], lines[1]]
    jsonl = tmp_path / "root_first.jsonl"
    jsonl.write_text("\n".join(root_first) + "\n")
    [item], problems = items_of(jsonl)
    assert [(p.line, "comes after the document holding the trace's root span" in p.message) for p in problems] == [
        (2, True), (3, True)]  # the documented rule for single spans: the root's line closes its trace
    assert "tool_calls" not in item or item["tool_calls"] is None
    one = tmp_path / "one_document.json"
    one.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [json.loads(x) for x in root_first]}]}]}))
    [item], problems = items_of(one)
    assert problems == []
    assert item["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"},
                                   "result": {"temp_c": 21, "sky": "sunny"}}]
    assert item["output"] == [{"role": "assistant", "content": "It is 21 °C and sunny in Paris."}]


def test_export_otlp_makes_a_missing_folder_and_refuses_a_folder_before_any_item_is_scored(tmp_path, monkeypatch):
    path = write_otlp(tmp_path / "traces.jsonl", [spans_of(openinference_trace)])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    args = ["eval", "includes", "--option", "expected=Paris", "--data", str(path), "--store", "store.sqlite"]
    refused = CliRunner().invoke(app, [*args, "--export-otlp", "evals", "--out", "refused.jsonl"], env=ENV)
    assert refused.exit_code == 2
    assert "--export-otlp evals: is a folder" in refused.output
    assert not (tmp_path / "refused.jsonl").exists()  # nothing scored
    made = CliRunner().invoke(app, [*args, "--export-otlp", "nodir/deeper/ev.jsonl"], env=ENV)
    assert made.exit_code == 0, made.output
    [text] = (tmp_path / "nodir" / "deeper" / "ev.jsonl").read_text().splitlines()
    [record] = json.loads(text)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert record["eventName"] == "gen_ai.evaluation.result"


def test_an_unknown_span_kind_is_a_usage_error_listing_the_kinds(tmp_path):
    path = write_otlp(tmp_path / "t.jsonl", [spans_of(genai_trace)])
    args = ["eval", "includes", "--option", "expected=x", "--data", str(path), "--item-per", "span",
            "--store", str(tmp_path / "store.sqlite")]
    result = CliRunner().invoke(app, [*args, "--span-kind", "FOO"], env=ENV)
    assert result.exit_code == 2
    assert "--span-kind FOO: unknown kind; the kinds are LLM, AGENT, CHAIN, TOOL, RETRIEVER" in result.output
    with pytest.raises(ValueError, match="span kind FOO: expected one of LLM, AGENT"):
        TraceOptions("span", ("llm", "foo"))
    tools, problems = items_of(path, item_per="span", span_kinds=("tool",))  # any case
    assert problems == [] and [t["span_kind"] for t in tools] == ["TOOL"]


def test_items_given_as_traces_are_said_once_not_to_be_traces(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": n, "output": "Paris"}) + "\n" for n in range(5)))
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=x", "--data", str(path),
                                      "--item-per", "span", "--store", str(tmp_path / "store.sqlite")], env=ENV)
    assert result.exit_code == 2
    assert f"--item-per: {path} is not traces (it reads as jsonl items)" in result.output
    assert "trace id" not in result.output
    items, problems = items_of(path, item_per="span")  # named as traces all the same: one problem
    assert items == [] and [(p.line, p.message.split(":")[0]) for p in problems] == [(1, "not traces")]


def test_export_asked_of_items_not_traces_is_refused_before_any_item_is_scored(tmp_path, monkeypatch):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "q1", "output": "Paris"}) + "\n")
    monkeypatch.chdir(tmp_path)
    args = ["eval", "includes", "--option", "expected=Paris", "--data", str(path), "--store", "store.sqlite",
            "--out", "out.jsonl"]
    for flag, target in (("--export-otlp", "ev.jsonl"), ("--export-phoenix", "http://127.0.0.1:9/")):
        result = CliRunner().invoke(app, [*args, flag, target], env=ENV)
        assert result.exit_code == 2
        assert f"{flag} needs traces as --data: {path} reads as jsonl items" in result.output
    assert not (tmp_path / "ev.jsonl").exists() and not (tmp_path / "out.jsonl").exists()


def test_an_export_of_no_record_warns(tmp_path, monkeypatch):
    path = tmp_path / "empty.json"
    path.write_text('{"resourceSpans": []}\n')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=Paris", "--data", str(path),
                                      "--store", "store.sqlite", "--export-otlp", "ev.jsonl"], env=ENV)
    assert "0 evaluation record(s) → ev.jsonl (warning: no result was on a trace's span" in result.output


def flat_span_line(span_id, parent="", **attributes):
    return json.dumps({"name": span_id, "context": {"trace_id": TRACE, "span_id": span_id},
                       "parent_id": parent or None, "attributes": attributes}) + "\n"


def test_a_first_span_longer_than_any_byte_window_is_still_read_as_a_span(tmp_path):
    """The first span's line holds 200 KB of retrieved text; the file is still traces."""
    path = tmp_path / "long.jsonl"
    path.write_text(flat_span_line("b7ad6b7169203331", "a3ce929d0e0e4736", **{
        "openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "Paris. " * 30_000})
        + flat_span_line("a3ce929d0e0e4736", **{"openinference.span.kind": "CHAIN", "input.value": "Q?",
                                                 "output.value": "A."}), encoding="utf-8")
    assert detect_format(path) == "otlp"
    [item], problems = items_of(path)
    assert problems == [] and (item["input"], item["output"]) == ("Q?", "A.")


@pytest.mark.parametrize("bad", ["{not json at all\n", '{"traceId": "cut", \n', "[1, 2]\n", "[" * 5000 + "\n"])
def test_one_bad_first_line_leaves_the_file_traces_and_is_its_own_problem(tmp_path, bad):
    path = tmp_path / "spans.jsonl"
    path.write_text(bad + json.dumps(otlp_doc(*rag_spans())) + "\n", encoding="utf-8")
    assert detect_format(path) == "otlp"
    [item], problems = items_of(path)
    assert [p.line for p in problems] == [1]
    assert (item["input"], item["output"]) == ("Q?", "A.")


def test_items_after_a_bad_first_line_are_still_items(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("{oops\n" + json.dumps({"id": "a", "output": "x"}) + "\n", encoding="utf-8")
    assert detect_format(path) == "jsonl"
    items, problems = items_of(path)
    assert [i["id"] for i in items] == ["a"] and [p.line for p in problems] == [1]


def test_a_resume_reads_the_traces_as_the_run_first_read_them(tmp_path):
    path = write_otlp(tmp_path / "genai.jsonl", [spans_of(genai_trace)])
    out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
    first = CliRunner().invoke(app, ["eval", "includes", "--option", "expected=sunny", "--data", str(path),
                                     "--item-per", "span", "--span-kind", "TOOL", "--span-kind", "LLM",
                                     "--out", str(out), "--store", str(store), "--limit", "1", "--json"], env=ENV)
    assert first.exit_code in (0, 1), first.output
    resumed = CliRunner().invoke(app, ["eval", "--resume", "--out", str(out), "--store", str(store), "--json"],
                                 env=ENV)
    assert resumed.exit_code in (0, 1), resumed.output
    span_items, _ = items_of(path, item_per="span", span_kinds=("TOOL", "LLM"))
    written = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(span_items) == 3 and sorted(written) == sorted(item["id"] for item in span_items)
    other = CliRunner().invoke(app, ["eval", "--resume", "--out", str(out), "--store", str(store),
                                     "--item-per", "trace"], env=ENV)
    assert other.exit_code == 2
    assert "with --item-per span" in other.output and "with --item-per trace" in other.output


def test_an_llm_span_item_reads_the_documents_its_trace_retrieved_before_it(tmp_path):
    spans = spans_of(openinference_trace)
    [llm], _ = items_of(write_otlp(tmp_path / "rag.jsonl", [spans]), item_per="span", span_kinds=("LLM",))
    assert llm["context"] == ["Paris is the capital of France.", "France is in Europe."]
    [tool], _ = items_of(write_otlp(tmp_path / "rag.jsonl", [spans]), item_per="span", span_kinds=("TOOL",))
    assert tool["context"] is None  # a tool call is not given what was retrieved

"""Spans into traces into records, streamed: a trace becomes a record once the document holding
its root span has been read whole (an OTLP document: one line of the file exporter, or a file
written as one document; in a JSONL of spans each line is a document of one span, so there the
root closes its trace and SDKs export the root last), or at the end of the spans, so what is held
is bounded by the traces still open. Within one document the order of the spans does not matter;
a span read after the document that closed its trace is reported and left out.

One record per trace (`TraceOptions.item_per` ``trace``, the default) — the judged span is the
root (the span without a parent, else the one whose parent is not in the trace, else the first):

- ``input`` / ``output``: the root's ``input.value`` / ``output.value``, else the root's
  messages, else the messages of the first LLM span (input) / the last LLM span (output: the
  final answer of an agent's loop);
- ``system``: the system messages among those input messages, else ``gen_ai.system_instructions``;
- ``context``: the documents of the RETRIEVER spans, in order;
- ``tool_calls``: a call per TOOL span, with its arguments and result, in order.

With ``item_per="span"`` one record per span whose kind is among `TraceOptions.span_kinds`: its
own input and output (a TOOL span: its arguments and result; a RETRIEVER span: its documents as
context), the context and tool calls of the spans under it; a TOOL span's input and output are its call's
arguments and result (``input.value`` / ``gen_ai.tool.call.arguments``, ``output.value`` /
``gen_ai.tool.call.result``). Ids: the trace id in hex, plus
``:SPANID`` per span. Every record names its judged span (``trace_id``, ``span_id``,
``span_name``, ``span_kind``) and, under `engine.core.run_fields.LOOKED_FOR`, the attributes
looked for for each run field it could not give.

Field mappings (``{"ground_truth": "eval.expected"}``) read attribute paths: a flat key of the
judged span, else of the other spans in order; a path above flat keys
(``retrieval.documents``) gives them as nested values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.run_fields import LOOKED_FOR
from .conventions import (
    INPUT_MESSAGES,
    KINDS,
    OUTPUT_MESSAGES,
    documents,
    kind_of,
    messages,
    system_instructions,
    text_value,
    tool_call,
)
from .otlp_json import OnSpanProblem, Span

ITEM_PER = ("trace", "span")


@dataclass(frozen=True)
class TraceOptions:
    """How traces become items: ``item_per`` ``trace`` (one per trace) or ``span`` (one per span
    whose kind is in `span_kinds`, any case, among `engine.traces.conventions.KINDS`; default
    LLM). Raises `ValueError` for another ``item_per`` or an unknown kind."""

    item_per: str = "trace"
    span_kinds: tuple[str, ...] = ("LLM",)

    def __post_init__(self) -> None:
        if self.item_per not in ITEM_PER:
            raise ValueError(f"item per {self.item_per!r}: expected trace or span")
        kinds = tuple(k.strip().upper() for k in self.span_kinds if k.strip())
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"span kind {', '.join(unknown)}: expected one of {', '.join(KINDS)}")
        object.__setattr__(self, "span_kinds", kinds)


class TraceAssembler:
    """Collects spans by trace; `add_document` yields the records of the traces whose root its
    spans hold (once all of them are added), `add` the same for a document of one span,
    `finish` those of the traces still open (in the order they were first seen). A span of a
    trace already made into records is a problem (reported, skipped)."""

    def __init__(self, options: TraceOptions, fields: Mapping[str, str], on_problem: OnSpanProblem) -> None:
        self.options, self.fields, self.on_problem = options, dict(fields), on_problem
        self.open: dict[str, list[tuple[int, Span]]] = {}
        self.done: set[str] = set()

    def add(self, line: int, span: Span) -> Iterator[tuple[int, dict[str, Any]]]:
        return self.add_document(line, [span])

    def add_document(self, line: int, spans: Iterable[Span]) -> Iterator[tuple[int, dict[str, Any]]]:
        rooted: dict[str, None] = {}
        for span in spans:
            if span.trace_id in self.done:
                self.on_problem(line, f"span {span.span_id} of trace {span.trace_id} comes after the document "
                                      "holding the trace's root span; skipped (the trace was scored without it)")
                continue
            self.open.setdefault(span.trace_id, []).append((line, span))
            if not span.parent_id:
                rooted[span.trace_id] = None
        for trace_id in rooted:
            yield from self._close(trace_id)

    def finish(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for trace_id in list(self.open):
            yield from self._close(trace_id)

    def _close(self, trace_id: str) -> Iterator[tuple[int, dict[str, Any]]]:
        numbered = self.open.pop(trace_id)
        self.done.add(trace_id)
        line = numbered[0][0]
        spans = sorted((s for _, s in numbered), key=lambda s: s.start)  # stable: file order among equal starts
        if self.options.item_per == "trace":
            yield line, trace_record(spans, self.fields)
            return
        for span in spans:
            if kind_of(span) in self.options.span_kinds:
                yield line, span_record(span, spans, self.fields)


def assemble(spans: Iterable[tuple[int, Span]], options: TraceOptions, fields: Mapping[str, str],
             on_problem: OnSpanProblem) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for the traces of `spans` (``(line, span)``, each a document of its own:
    a root closes its trace), streamed (module docstring)."""
    assembler = TraceAssembler(options, fields, on_problem)
    for line, span in spans:
        yield from assembler.add(line, span)
    yield from assembler.finish()


def assemble_documents(documents: Iterable[tuple[int, list[Span]]], options: TraceOptions,
                       fields: Mapping[str, str], on_problem: OnSpanProblem) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for the traces of `documents` (``(line, spans)``, as
    `engine.traces.otlp_json.read_documents` reads them), streamed: a trace closes once the
    document holding its root is read whole (module docstring)."""
    assembler = TraceAssembler(options, fields, on_problem)
    for line, spans in documents:
        yield from assembler.add_document(line, spans)
    yield from assembler.finish()


def root_of(spans: list[Span]) -> Span:
    """The trace's root: the span without a parent, else one whose parent is not in the trace."""
    ids = {s.span_id for s in spans}
    for span in spans:
        if not span.parent_id:
            return span
    return next((s for s in spans if s.parent_id not in ids), spans[0])


def _split_system(found: list[dict[str, Any]] | None) -> tuple[list[dict[str, Any]] | None, str | None]:
    """(the messages but the system ones, the system messages' text) of input messages."""
    if not found:
        return None, None
    system = [m for m in found if m.get("role") in ("system", "developer")]
    rest = [m for m in found if m.get("role") not in ("system", "developer")]
    text = "\n".join(m["content"] for m in system if isinstance(m.get("content"), str)) or None
    return rest or None, text


def trace_record(spans: list[Span], fields: Mapping[str, str]) -> dict[str, Any]:
    """The record of one whole trace (`spans` ordered by start; module docstring)."""
    root = root_of(spans)
    kinds = {id(s): kind_of(s) for s in spans}
    llms = [s for s in spans if kinds[id(s)] == "LLM"]
    where = "the trace's root span"
    inputs, system = _split_system(messages(root, "input"))
    first_llm = llms[0] if llms else None
    if inputs is None and first_llm is not None:
        inputs, system = _split_system(messages(first_llm, "input")) if system is None else (
            _split_system(messages(first_llm, "input"))[0], system)
    if system is None:
        system = system_instructions(root) or (system_instructions(first_llm) if first_llm else None)
    values: dict[str, Any] = {
        "input": text_value(root, "input") or inputs,
        "output": text_value(root, "output") or messages(root, "output")
        or (messages(llms[-1], "output") if llms else None),
        "system": system,
        "context": [d for s in spans if kinds[id(s)] == "RETRIEVER" for d in documents(s)] or None,
        "tool_calls": [tool_call(s) for s in spans if kinds[id(s)] == "TOOL"] or None,
    }
    looked = {
        "input": f"{where} has no input.value or input messages ({', '.join(INPUT_MESSAGES)}), and no LLM span "
                 "has input messages",
        "output": f"{where} has no output.value or output messages ({', '.join(OUTPUT_MESSAGES)}), and no LLM "
                  "span has output messages",
        "system": "no LLM span has a system message or gen_ai.system_instructions",
        "context": "the trace has no RETRIEVER span with retrieval.documents.*.document.content",
        "tool_calls": "the trace has no TOOL span (openinference.span.kind TOOL, gen_ai.operation.name "
                      "execute_tool)",
    }
    return _record(root.trace_id, root, kinds[id(root)], values, looked, spans, fields)


def span_record(span: Span, spans: list[Span], fields: Mapping[str, str]) -> dict[str, Any]:
    """The record of one span of a trace (`spans`: the whole trace, ordered by start)."""
    kind = kind_of(span)
    below = _below(span, spans)
    where = f"span {span.name!r} ({span.span_id})"
    if kind == "TOOL":
        call = tool_call(span)
        attrs = span.attributes
        values: dict[str, Any] = {
            "input": text_value(span, "input") or attrs.get("gen_ai.tool.call.arguments") or None,
            "output": text_value(span, "output") or attrs.get("gen_ai.tool.call.result") or None,
            "tool_calls": [call]}
    else:
        inputs, system = _split_system(messages(span, "input"))
        values = {"input": text_value(span, "input") or inputs,
                  "output": text_value(span, "output") or messages(span, "output"),
                  "system": system or system_instructions(span),
                  "tool_calls": [tool_call(s) for s in below if kind_of(s) == "TOOL"] or None}
    values["context"] = _span_context(span, kind, below, spans)
    looked = {
        "input": f"{where} has no input.value or input messages ({', '.join(INPUT_MESSAGES)})"
                 + (" or gen_ai.tool.call.arguments" if kind == "TOOL" else ""),
        "output": f"{where} has no output.value or output messages ({', '.join(OUTPUT_MESSAGES)})"
                  + (" or gen_ai.tool.call.result" if kind == "TOOL" else ""),
        "system": f"{where} has no system message or gen_ai.system_instructions",
        "context": f"{where} has no retrieval.documents.*.document.content, nor has a RETRIEVER span under it or "
                   "before it in its trace",
        "tool_calls": f"{where} has no TOOL span under it",
    }
    return _record(f"{span.trace_id}:{span.span_id}", span, kind, values, looked, spans, fields)


def _span_context(span: Span, kind: str, below: list[Span], spans: list[Span]) -> list[str] | None:
    """A span item's context: a RETRIEVER's own documents and those of the retrievers under the
    span; else, for an LLM or AGENT span, the documents of the trace's retrievers that started
    before it (a RAG application retrieves, then asks its model: the retriever is the LLM span's
    sibling, not its child). None when there are none."""
    own = documents(span) if kind == "RETRIEVER" else []
    found = own + [d for s in below if kind_of(s) == "RETRIEVER" for d in documents(s)]
    if not found and kind in ("LLM", "AGENT"):
        earlier = [s for s in spans if s.start <= span.start and s is not span and kind_of(s) == "RETRIEVER"]
        found = [d for s in earlier for d in documents(s)]
    return found or None


def _below(span: Span, spans: list[Span]) -> list[Span]:
    """The spans under `span` (its descendants), in the trace's order."""
    children: dict[str, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_id, []).append(s)
    found, stack = set(), [span.span_id]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.span_id not in found:
                found.add(child.span_id)
                stack.append(child.span_id)
    return [s for s in spans if s.span_id in found]


def _record(item_id: str, judged: Span, kind: str, values: dict[str, Any], looked: dict[str, str],
            spans: list[Span], fields: Mapping[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {"id": item_id}
    for name, path in fields.items():
        found = _attribute(judged, path)
        for span in spans:
            if found is not None:
                break
            found = _attribute(span, path)
        if found is not None:
            values[name] = _json_value(name, found)
    record.update({k: v for k, v in values.items() if v is not None})
    missing = {k: v for k, v in looked.items() if values.get(k) is None}
    if values.get("ground_truth") is None:
        missing["ground_truth"] = "traces carry no ground truth (map an attribute to it: --field ground_truth=KEY)"
    for name, path in fields.items():
        if values.get(name) is None:
            missing[name] = f"no span of the trace has the attribute {path}"
    record.update(trace_id=judged.trace_id, span_id=judged.span_id, span_name=judged.name, span_kind=kind)
    record[LOOKED_FOR] = missing
    return record


def _attribute(span: Span, path: str) -> Any:
    """The attribute `path` of `span` (a flat key), or the keys under it as nested values."""
    attrs = span.attributes
    if path in attrs:
        value = attrs[path]
        return value if not (isinstance(value, str) and not value.strip()) else None
    prefix = path + "."
    nested: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            node = nested
            parts = key[len(prefix):].split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
            node[parts[-1]] = value
    return _lists(nested) if nested else None


def _lists(value: Any) -> Any:
    """Objects keyed 0..n-1 as lists (indexed attributes), inside out."""
    if not isinstance(value, dict):
        return value
    value = {k: _lists(v) for k, v in value.items()}
    if value and all(k.isdigit() for k in value):
        return [value[k] for k in sorted(value, key=int)]
    return value


def _json_value(name: str, value: Any) -> Any:
    """A mapped attribute's value; a JSON text is parsed for the fields that take lists."""
    if name in ("context", "tool_calls", "input", "output") and isinstance(value, str) \
            and value.lstrip()[:1] == "[":
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


__all__ = ["ITEM_PER", "TraceAssembler", "TraceOptions", "assemble", "assemble_documents", "root_of", "span_record", "trace_record"]

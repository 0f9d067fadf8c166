"""What a span says, read from its attributes under two conventions.

OpenInference (Arize Phoenix and its instrumentors): ``openinference.span.kind``, ``input.value``,
``output.value``, ``llm.input_messages.N.message.{role,content,contents.M.message_content.text,
tool_calls.K.tool_call.{id,function.name,function.arguments}}``, ``llm.output_messages.…``,
``retrieval.documents.N.document.content``, ``tool.name`` with the call's ``input.value`` and
``output.value``.

The GenAI semantic conventions: ``gen_ai.operation.name`` (``chat``, ``execute_tool``,
``invoke_agent``, …), ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON: ``[{role,
parts: [{type: text, content} | {type: tool_call, id, name, arguments} | {type:
tool_call_response, id, response}]}]``), ``gen_ai.system_instructions``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``; and the
older indexed ``gen_ai.prompt.N.{role,content}`` / ``gen_ai.completion.N.{role,content}`` that
OpenLLMetry writes.

Messages come out OpenAI-style (``{role, content, tool_calls?, tool_call_id?}``), as
`engine.core.messages` reads them. An empty text attribute counts as absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .otlp_json import Span

KINDS = ("LLM", "AGENT", "CHAIN", "TOOL", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR")
GENAI_KINDS = {"chat": "LLM", "text_completion": "LLM", "generate_content": "LLM", "execute_tool": "TOOL",
               "invoke_agent": "AGENT", "create_agent": "AGENT", "embeddings": "EMBEDDING", "retrieval": "RETRIEVER"}
INPUT_MESSAGES = ("llm.input_messages.*", "gen_ai.input.messages")
OUTPUT_MESSAGES = ("llm.output_messages.*", "gen_ai.output.messages")


def kind_of(span: Span) -> str:
    """The span's kind: ``openinference.span.kind``, else from ``gen_ai.operation.name`` (or a
    ``gen_ai.tool.name``), else LLM when it holds messages, else CHAIN."""
    attrs = span.attributes
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind.strip():
        return kind.strip().upper()
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in GENAI_KINDS:
        return GENAI_KINDS[operation]
    if _given(attrs.get("gen_ai.tool.name")):
        return "TOOL"
    if any(k.startswith(("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion."))
           for k in attrs) or "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        return "LLM"
    return "CHAIN"


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip()) and value != []


def text_value(span: Span, side: str) -> Any:
    """``input.value`` / ``output.value`` (`side`: ``input`` or ``output``) when not empty, else None."""
    value = span.attributes.get(f"{side}.value")
    return value if _given(value) else None


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The entries ``PREFIX.N.rest`` as a list ordered by N, each ``{rest: value}``."""
    entries: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        number, _, rest = key[len(prefix):].partition(".")
        if number.isdigit() and rest:
            entries.setdefault(int(number), {})[rest] = value
    return [entries[n] for n in sorted(entries)]


def _json(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _openinference_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": str(entry.get("message.role") or "user")}
    content = entry.get("message.content")
    if content is None:
        texts = [c.get("message_content.text") for c in indexed(entry, "message.contents.")
                 if c.get("message_content.type", "text") == "text"]
        content = "\n".join(t for t in texts if isinstance(t, str)) if texts else None
    message["content"] = content
    calls = [{"id": c.get("tool_call.id") or f"call_{i}", "type": "function",
              "function": {"name": c.get("tool_call.function.name") or "",
                           "arguments": c.get("tool_call.function.arguments") or "{}"}}
             for i, c in enumerate(indexed(entry, "message.tool_calls."))]
    if calls:
        message["tool_calls"] = calls
    if entry.get("message.tool_call_id"):
        message["tool_call_id"] = entry["message.tool_call_id"]
    if entry.get("message.name"):
        message["name"] = entry["message.name"]
    return message


def _genai_messages(value: Any) -> list[dict[str, Any]] | None:
    value = _json(value)
    if not isinstance(value, list):
        return None
    messages: list[dict[str, Any]] = []
    for entry in value:
        if not isinstance(entry, Mapping):
            continue
        role = str(entry.get("role") or "user")
        parts = entry.get("parts")
        if not isinstance(parts, list):
            messages.append({"role": role, "content": entry.get("content")})
            continue
        texts, calls = [], []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content") or ""))
            elif kind == "tool_call":
                arguments = part.get("arguments")
                calls.append({"id": part.get("id") or f"call_{len(calls)}", "type": "function",
                              "function": {"name": part.get("name") or "", "arguments": arguments
                                           if isinstance(arguments, str) else json.dumps(arguments)}})
            elif kind == "tool_call_response":
                response = part.get("response")
                messages.append({"role": "tool", "tool_call_id": part.get("id") or "",
                                 "content": response if isinstance(response, str) else json.dumps(response)})
        if texts or calls:
            message: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
    return messages


def messages(span: Span, side: str) -> list[dict[str, Any]] | None:
    """The span's ``input`` or ``output`` messages (`side`), from whichever convention gives
    them (OpenInference, GenAI, OpenLLMetry's indexed prompt/completion); None when none does."""
    attrs = span.attributes
    entries = indexed(attrs, f"llm.{side}_messages.")
    if entries:
        return [_openinference_message(e) for e in entries]
    found = _genai_messages(attrs.get(f"gen_ai.{side}.messages"))
    if found:
        return found
    old = indexed(attrs, "gen_ai.prompt." if side == "input" else "gen_ai.completion.")
    if old:
        return [{"role": str(e.get("role") or ("user" if side == "input" else "assistant")),
                 "content": e.get("content")} for e in old]
    return None


def system_instructions(span: Span) -> str | None:
    """``gen_ai.system_instructions`` as text (its text parts joined), None when absent."""
    value = _json(span.attributes.get("gen_ai.system_instructions"))
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        texts = [str(p.get("content") or "") for p in value if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(texts) or None
    return None


def documents(span: Span) -> list[str]:
    """A retriever span's documents' texts (``retrieval.documents.N.document.content``), in order."""
    return [str(d["document.content"]) for d in indexed(span.attributes, "retrieval.documents.")
            if d.get("document.content") is not None]


def tool_call(span: Span) -> dict[str, Any]:
    """A tool span as one call ``{name, arguments, result?, error?, id?}``: the name from
    ``tool.name`` / ``gen_ai.tool.name`` (else the span's name), arguments from
    ``gen_ai.tool.call.arguments`` / ``tool_call.function.arguments`` / ``input.value``, the
    result from ``gen_ai.tool.call.result`` / ``output.value``, the error from an ERROR status."""
    attrs = span.attributes
    name = attrs.get("tool.name") or attrs.get("gen_ai.tool.name") or attrs.get("tool_call.function.name") \
        or span.name
    arguments = next((attrs[k] for k in ("gen_ai.tool.call.arguments", "tool_call.function.arguments", "input.value")
                      if _given(attrs.get(k))), None)
    call: dict[str, Any] = {"name": str(name), "arguments": _json(arguments) if arguments is not None else {}}
    result = next((attrs[k] for k in ("gen_ai.tool.call.result", "output.value") if _given(attrs.get(k))), None)
    if result is not None:
        call["result"] = _json(result)
    if span.status == "ERROR":
        call["error"] = span.status_message or "the tool span ended with status ERROR"
    call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id")
    if call_id:
        call["id"] = str(call_id)
    return call


__all__ = ["GENAI_KINDS", "INPUT_MESSAGES", "KINDS", "OUTPUT_MESSAGES", "documents", "indexed", "kind_of",
           "messages", "system_instructions", "text_value", "tool_call"]

"""OpenAI chat-completions requests as the embedded llama.cpp server takes them, and its answers
back in OpenAI's shape: messages flattened to text, the answer's JSON Schema picked from
``response_format`` or the forced tool and enforced as an llguidance grammar, token
probabilities passed through. Used by `engine.embedded.llama.LocalChatModel.create`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import LocalJudgeError

__all__ = ["IGNORED_ARGS", "SCHEMA_HINT", "USED_ARGS", "check_arguments", "completion_of", "grammar_for",
           "llama_request", "logprobs_of", "normalise_messages", "pick_schema", "text_of", "with_schema_hint"]


# OpenAI chat-completions arguments this backend reads, and those it accepts
# and ignores (they mean nothing for an in-process model).
USED_ARGS = frozenset(
    {
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "response_format",
        "tools",
        "tool_choice",
        "n",
        "stream",
        "logprobs",
        "top_logprobs",
    }
)
IGNORED_ARGS = frozenset(
    {
        "model",
        "user",
        "metadata",
        "store",
        "timeout",
        "extra_headers",
        "extra_query",
        "extra_body",
        "parallel_tool_calls",
        "service_tier",
        "stream_options",
        "logit_bias",
        "prediction",
        "reasoning_effort",
        "modalities",
    }
)

SCHEMA_HINT = "Respond only with JSON that conforms to this JSON Schema:\n"


def text_of(content: Any) -> str:
    """Flatten OpenAI message content (str, None, or a list of parts) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text"):
                texts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise LocalJudgeError(f"the local judge reads text only; got a {kind!r} part")
        return "".join(texts)
    raise LocalJudgeError(f"unsupported message content of type {type(content).__name__}")


def normalise_messages(messages: Any) -> list[dict[str, str]]:
    """OpenAI messages -> [{"role": system|user|assistant, "content": str}].

    Assistant tool calls become their JSON arguments; tool results become user
    turns, so any chat template (even one without tool support) can render them.
    """
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)) or not messages:
        raise LocalJudgeError("messages must be a non-empty list of chat messages")
    out: list[dict[str, str]] = []
    for msg in messages:
        if not isinstance(msg, Mapping):
            msg = msg.model_dump() if hasattr(msg, "model_dump") else dict(msg)
        role = msg.get("role")
        text = text_of(msg.get("content"))
        if role == "assistant" and not text and msg.get("tool_calls"):
            text = "\n".join(str((call.get("function") or {}).get("arguments", "")) for call in msg["tool_calls"])
        if role in ("tool", "function"):
            role = "user"
        elif role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant"):
            raise LocalJudgeError(f"unsupported message role {role!r}")
        out.append({"role": role, "content": text})
    return out


def with_schema_hint(messages: list[dict[str, str]], schema: Mapping[str, Any]) -> list[dict[str, str]]:
    """The messages with the schema appended to the last user message (a new user message if
    there is none). At the end, not in the system message: the schema differs per stage and
    per item, and everything before it stays a prefix the prompt cache can reuse."""
    hint = SCHEMA_HINT + json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user":
            last = dict(messages[i])
            last["content"] = (text_of(last["content"]).rstrip() + "\n\n" + hint).lstrip()
            return [*messages[:i], last, *messages[i + 1:]]
    return [*messages, {"role": "user", "content": hint}]


def pick_schema(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(JSON schema to enforce or None, tool name when answering as a tool call)."""
    tools = kwargs.get("tools") or []
    tool_choice = kwargs.get("tool_choice")
    if tools and tool_choice != "none":
        by_name = {}
        for tool in tools:
            fn = (tool or {}).get("function") or {}
            if fn.get("name"):
                by_name[fn["name"]] = fn
        if isinstance(tool_choice, Mapping):
            name = ((tool_choice.get("function") or {}).get("name")) or tool_choice.get("name")
        elif len(by_name) == 1:
            name = next(iter(by_name))
        else:
            raise LocalJudgeError("with several tools the local judge needs tool_choice naming one function")
        if name not in by_name:
            raise LocalJudgeError(f"tool_choice names unknown function {name!r}")
        params = by_name[name].get("parameters") or {"type": "object"}
        return dict(params), name
    fmt = kwargs.get("response_format")
    if fmt is None:
        return None, None
    if hasattr(fmt, "model_json_schema"):  # a pydantic class, as openai's parse() takes
        return fmt.model_json_schema(), None
    kind = fmt.get("type")
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        schema = spec.get("schema")
        if not isinstance(schema, Mapping):
            raise LocalJudgeError("response_format json_schema needs json_schema.schema (an object)")
        return dict(schema), None
    if kind == "json_object":
        schema = fmt.get("schema")
        return (dict(schema) if isinstance(schema, Mapping) else {"type": "object"}), None
    if kind in (None, "text"):
        return None, None
    raise LocalJudgeError(f"unsupported response_format type {kind!r}")


def grammar_for(schema: Mapping[str, Any]) -> str:
    """llguidance grammar text enforcing ``schema``, with compact JSON (no free
    whitespace: fewer tokens, and no runaway newlines from small models)."""
    constrained = dict(schema)
    options = dict(constrained.get("x-guidance") or {})
    options.setdefault("whitespace_flexible", False)
    options.setdefault("item_separator", ", ")
    options.setdefault("key_separator", ": ")
    constrained["x-guidance"] = options
    return "%llguidance {}\nstart: %json " + json.dumps(constrained, ensure_ascii=False)


def logprobs_of(choice: Mapping[str, Any]) -> dict[str, Any] | None:
    """A choice's ``logprobs`` in OpenAI's shape (``content``: each generated token with
    ``token``, ``logprob``, ``bytes`` and ``top_logprobs``), or None when the server sent none."""
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list):
        return None

    def entry(item: Mapping[str, Any]) -> dict[str, Any]:
        return {"token": str(item.get("token", "")), "logprob": float(item.get("logprob", float("-inf"))),
                "bytes": item.get("bytes")}

    return {"content": [{**entry(item), "top_logprobs": [entry(alt) for alt in item.get("top_logprobs") or ()]}
                        for item in content if isinstance(item, Mapping)]}


def check_arguments(kwargs: Mapping[str, Any]) -> None:
    """Raise TypeError for a keyword that is neither read (`USED_ARGS`) nor ignored
    (`IGNORED_ARGS`) — ``response_model`` among them — and LocalJudgeError for a streamed
    request or one asking for more than one choice."""
    unknown = set(kwargs) - USED_ARGS - IGNORED_ARGS
    if unknown:
        raise TypeError(
            f"LocalChatModel.create() got unexpected arguments {sorted(unknown)}; "
            "to use response_model, wrap it: instructor.patch(create=model.create, "
            "mode=INSTRUCTOR_MODE) or engine.embedded.llama.instructor_client(model)"
        )
    if kwargs.get("stream"):
        raise LocalJudgeError("the local judge does not stream")
    if kwargs.get("n") not in (None, 1):
        raise LocalJudgeError("the local judge returns one choice (n=1)")


def llama_request(kwargs: Mapping[str, Any], *, default_max_tokens: int,
                  schema_in_prompt: bool) -> tuple[dict[str, Any], str | None]:
    """(the llama.cpp chat request, the tool name when the answer goes back as a tool call) for
    OpenAI ``create`` keywords: messages as text, ``max_tokens`` (default `default_max_tokens`,
    at least 1), temperature 0 unless given, the schema as a grammar (and, with
    `schema_in_prompt`, shown after the last user message), logprobs when asked. Raises
    LocalJudgeError for messages, a schema or max_tokens it cannot use."""
    messages = normalise_messages(kwargs.get("messages"))
    schema, tool_name = pick_schema(kwargs)
    max_tokens = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
    max_tokens = default_max_tokens if max_tokens is None else int(max_tokens)
    if max_tokens < 1:
        raise LocalJudgeError("max_tokens must be at least 1")
    temperature = kwargs.get("temperature")
    request: dict[str, Any] = {
        "messages": with_schema_hint(messages, schema)
        if schema is not None and schema_in_prompt
        else messages,
        "max_tokens": max_tokens,
        "temperature": 0.0 if temperature is None else float(temperature),
    }
    for key in ("top_p", "seed", "frequency_penalty", "presence_penalty"):
        if kwargs.get(key) is not None:
            request[key] = kwargs[key]
    stop = kwargs.get("stop")
    if stop:
        request["stop"] = [stop] if isinstance(stop, str) else list(stop)
    if schema is not None:
        request["grammar"] = grammar_for(schema)
    if kwargs.get("logprobs"):
        # llama.cpp reports each generated token's probability and the top alternatives at its
        # position from the model's own distribution, before the grammar and the sampler act
        request["logprobs"] = True
        request["top_logprobs"] = int(kwargs.get("top_logprobs") or 1)
    return request, tool_name


def completion_of(result: Mapping[str, Any], *, tool_name: str | None, model: str,
                  logprobs: bool) -> dict[str, Any]:
    """OpenAI's ``chat.completion`` object (a dict) for the llama.cpp answer `result`: the text as
    content, or as the arguments of one call of `tool_name`; finish reason ``stop``, ``length``
    or ``tool_calls``; usage in tokens; with `logprobs`, the tokens' probabilities."""
    choice = (result.get("choices") or [{}])[0]
    text = text_of((choice.get("message") or {}).get("content"))
    finish = choice.get("finish_reason") or "stop"
    finish = finish if finish in ("stop", "length") else "stop"
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_name is not None:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {"name": tool_name, "arguments": text},
                }
            ],
        }
        if finish == "stop":
            finish = "tool_calls"
    usage = result.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    return {
        "id": f"chatcmpl-local-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message,
                     "logprobs": logprobs_of(choice) if logprobs else None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }

"""Embedded local judge backend: a GGUF chat model run in-process, its output
constrained by a grammar built from the answer's JSON Schema.

Models: ``local``, ``local-tiny`` and ``llamacpp/PATH.gguf``; their files are found (and
joined) by `engine.embedded.files`, their headers read by `engine.embedded.gguf`; the names users and tests
import from here are re-exported. Typical use::

    model = get_model("local")                       # LocalChatModel, cached per file
    client = instructor_client(model)                # instructor, Mode.JSON_SCHEMA
    verdict = client.create(response_model=Verdict, messages=[...])

Binding: ``xllamacpp`` (llama.cpp built into a prebuilt manylinux wheel, 34 MB),
not ``llama-cpp-python``. Measured on the 2-core machine: xllamacpp installs in
about 9 s where llama-cpp-python 0.3.36 has no wheel and compiled for 10-17
minutes; generation speed is the same (same llama.cpp kernels: Qwen ~9.5
tokens/s, SmolLM2 ~50 tokens/s), prompt reading 25-33 vs 36-48 tokens/s for
Qwen; a short JSON verdict takes ~3.5 s with Qwen and ~0.8 s with SmolLM2 on
both; loading takes 3-6 s vs 2-2.5 s for Qwen (0.6 s vs 0.4 s for SmolLM2);
memory is ~1.9 GB for Qwen at 4096 context on both. Its call releases the GIL, and
several threads may call at once: the binding hands each request to llama.cpp's server loop
as its HTTP handlers do, and the loop decodes up to ``n_parallel`` of them together
(continuous batching), one slot each, the others queued (`engine.embedded.settings`).
JSON Schemas become llguidance grammars inside llama.cpp (enums, minItems /
maxItems, $ref, patterns), so even the 135M model answers in the right shape.
What xllamacpp lacks is a tokenize call: :meth:`LocalChatModel.count_tokens`
gets exact counts from the context-overflow refusal instead (see there).
The binding is imported lazily: ``import engine.embedded.llama`` works without it.

instructor: ``INSTRUCTOR_MODE`` is ``Mode.JSON_SCHEMA`` (the schema comes in
``response_format``); ``Mode.TOOLS`` works too (the forced tool's parameters
are enforced and the answer returned as a tool call). ``create`` is a plain
OpenAI-style function, so wrap it with ``instructor.patch(create=...,
mode=...)`` before handing it to ``instructor.Instructor`` (as
:func:`instructor_client` does); ``Instructor(create=model.create)`` alone
would pass ``response_model`` through unpatched.
"""

from __future__ import annotations

import json
import os
import pathlib
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import LocalJudgeError
from .files import LOCAL_MODELS, PIP_HINT, LocalModelInfo, cache_dir, join_parts, resolve_model_path
from .gguf import read_gguf_metadata, special_token_text, trained_context
from .jobs import claim_threads
from .settings import LocalSettings, available_cpus, local_settings, split_options

# LocalJudgeError, LOCAL_MODELS, LocalModelInfo, PIP_HINT, cache_dir, join_parts,
# resolve_model_path and read_gguf_metadata are re-exported: users and tests import them from here.
__all__ = [
    "INSTRUCTOR_MODE",
    "LOCAL_MODELS",
    "PIP_HINT",
    "LocalChatModel",
    "LocalJudgeError",
    "LocalModelInfo",
    "cache_dir",
    "check_binding",
    "get_model",
    "model_plan",
    "instructor_client",
    "join_parts",
    "read_gguf_metadata",
    "resolve_model_path",
]

try:  # instructor is a core dependency of scorespec; keep this module importable without it.
    from instructor import Mode as _Mode

    INSTRUCTOR_MODE: Any = _Mode.JSON_SCHEMA
except ImportError:  # pragma: no cover - exercised only without instructor
    INSTRUCTOR_MODE = "json_schema_mode"

#: Generation bound used when a call gives no max_tokens (tokens).
DEFAULT_MAX_TOKENS = 1024
#: Host memory for the prompt cache (MiB): KV states of recent prompts, reused by prefix.
PROMPT_CACHE_MIB = 256
#: Context used when the caller gives none, unless the model's own is smaller (tokens).
DEFAULT_N_CTX = 4096


# --------------------------------------------------------------------------- binding


def _import_binding() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalJudgeError(
            f"the local judge needs the xllamacpp binding, which is not installed: {PIP_HINT}"
        ) from exc
    return xllamacpp


# OpenAI chat-completions arguments this backend reads, and those it accepts
# and ignores (they mean nothing for an in-process model).
_USED_ARGS = frozenset(
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
_IGNORED_ARGS = frozenset(
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

_SCHEMA_HINT = "Respond only with JSON that conforms to this JSON Schema:\n"


def _text_of(content: Any) -> str:
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


def _normalise_messages(messages: Any) -> list[dict[str, str]]:
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
        text = _text_of(msg.get("content"))
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


def _with_schema_hint(messages: list[dict[str, str]], schema: Mapping[str, Any]) -> list[dict[str, str]]:
    """The messages with the schema appended to the last user message (a new user message if
    there is none). At the end, not in the system message: the schema differs per stage and
    per item, and everything before it stays a prefix the prompt cache can reuse."""
    hint = _SCHEMA_HINT + json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user":
            last = dict(messages[i])
            last["content"] = (_text_of(last["content"]).rstrip() + "\n\n" + hint).lstrip()
            return [*messages[:i], last, *messages[i + 1:]]
    return [*messages, {"role": "user", "content": hint}]


def _pick_schema(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
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


def _grammar_for(schema: Mapping[str, Any]) -> str:
    """llguidance grammar text enforcing ``schema``, with compact JSON (no free
    whitespace: fewer tokens, and no runaway newlines from small models)."""
    constrained = dict(schema)
    options = dict(constrained.get("x-guidance") or {})
    options.setdefault("whitespace_flexible", False)
    options.setdefault("item_separator", ", ")
    options.setdefault("key_separator", ": ")
    constrained["x-guidance"] = options
    return "%llguidance {}\nstart: %json " + json.dumps(constrained, ensure_ascii=False)


def _logprobs_of(choice: Mapping[str, Any]) -> dict[str, Any] | None:
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


class LocalChatModel:
    """One GGUF chat model loaded in this process, called like OpenAI's
    ``client.chat.completions.create``.

    ``path``: GGUF file. ``settings``: how it runs (`engine.embedded.settings.LocalSettings`:
    slots, threads, poll, context per slot; default: the defaults there). ``n_ctx``: context
    per slot in tokens, overriding the settings' (default 4096, or the model's trained context
    if smaller). ``n_threads``: CPU threads, overriding the settings' (default: the CPUs no
    other embedded model has taken, at least 1; the model claims its threads while it lives,
    `engine.embedded.jobs`). ``max_tokens``:
    generation bound (tokens) when a call gives none. ``schema_in_prompt``: also show the
    enforced JSON Schema to the model in the system message (the grammar fixes the shape, the
    text tells it what the fields mean). ``name``: reported as the completion's ``model``.

    Calls may come from several threads at once: llama.cpp decodes up to ``slots`` of them
    together (continuous batching; each slot keeps its own prompt cache, and a host-memory
    prompt cache is shared by all), the others wait for a slot; the binding releases the GIL
    while it computes. One call's failure is that call's alone. Raises LocalJudgeError if the
    binding is missing or the file cannot be loaded.
    """

    def __init__(
        self,
        path: os.PathLike[str] | str,
        *,
        settings: LocalSettings | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        schema_in_prompt: bool = True,
        name: str | None = None,
        seed: int = 0,
    ) -> None:
        self.path = pathlib.Path(path)
        self.name = name or self.path.name
        self.default_max_tokens = int(max_tokens)
        self.schema_in_prompt = schema_in_prompt
        settings = settings or LocalSettings()
        meta = read_gguf_metadata(self.path)
        self._pad_token: str | None = None  # read from the vocabulary on first count_tokens
        self.trained_context_length = trained_context(meta)
        #: Context window of one call, in tokens (prompt + answer must fit): one slot's.
        self.context_length = int(n_ctx or settings.context or _default_context(self.trained_context_length))
        #: Sequences decoded at once.
        self.slots = int(settings.slots)
        #: How long idle worker threads spin before sleeping (0..100).
        self.poll = int(settings.poll)
        self._pad_base: int | None = None
        binding = _import_binding()
        # the threads, claimed before loading (`engine.embedded.jobs`): a model loading beside this one
        # takes the CPUs left
        self._claim = claim_threads(n_threads or settings.threads, cpus=available_cpus())
        self.n_threads = int(self._claim.threads)
        params = binding.CommonParams()
        params.model.path = str(self.path)
        # llama.cpp splits n_ctx evenly among the slots (kv_unified off): each slot gets the
        # whole context one call needs, so its prompt and answer fit as with one slot
        params.n_parallel = self.slots
        params.kv_unified = False
        params.n_ctx = self.context_length * self.slots
        for cpu in (params.cpuparams, params.cpuparams_batch):  # decoding, and reading prompts
            cpu.n_threads = self.n_threads
            cpu.poll = self.poll
        # Host-RAM prompt cache (default 8 GiB): the KV state of recent prompts is kept, and a new
        # prompt sharing a prefix with one of them (a stage's instructions) reads only the rest.
        # Measured: a 260-token prompt whose first 250 tokens were seen two calls earlier is read
        # 10x faster. One Qwen 1.5B token costs ~28 KB, so 256 MiB holds ~9,000 tokens of states.
        # Each slot also keeps its last prompt, and a call goes to the slot sharing most of it.
        params.cache_ram_mib = PROMPT_CACHE_MIB * self.slots
        params.warmup = False
        params.fit_params = False
        params.verbosity = 0
        params.sampling.seed = seed
        #: The binding's parameters the server was built with (``xllamacpp.CommonParams``).
        self.llama_params = params
        started = time.perf_counter()
        try:
            self._server = binding.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            self._claim.release()
            raise LocalJudgeError(f"could not load GGUF model {self.path}: {exc}") from exc
        #: Seconds the binding took to load the model.
        self.load_seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ calls

    def _call(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        server = self._server
        if server is None:
            raise LocalJudgeError(f"the local model {self.name} is closed")
        try:  # no lock: llama.cpp's server takes requests from many threads and queues them for its slots
            result = getattr(server, method)(request)
        except ValueError as exc:  # the binding's way to reject a request
            raise LocalJudgeError(f"local model rejected the request: {exc}") from exc
        if not isinstance(result, dict):
            raise LocalJudgeError(f"local model returned {type(result).__name__}, expected a dict")
        return result

    @staticmethod
    def _raise_error(error: Mapping[str, Any]) -> None:
        if error.get("type") == "exceed_context_size_error":
            raise LocalJudgeError(
                f"prompt of {error.get('n_prompt_tokens')} tokens does not fit the local "
                f"model's context of {error.get('n_ctx')} tokens"
            )
        raise LocalJudgeError(f"local model error: {error.get('message', error)}")

    def create(self, **kwargs: Any) -> Any:
        """Run one chat completion; OpenAI ``chat.completions.create`` keywords.

        Reads: ``messages`` (required); ``max_tokens`` / ``max_completion_tokens``
        (default ``self.default_max_tokens``); ``temperature`` (default 0:
        greedy, reproducible); ``top_p``, ``seed``, ``stop``,
        ``frequency_penalty``, ``presence_penalty``; ``response_format``
        (``{"type": "json_schema", "json_schema": {"name", "schema"}}``, or
        ``{"type": "json_object"[, "schema"]}``) and/or ``tools`` +
        ``tool_choice`` (instructor's Mode.JSON_SCHEMA / Mode.TOOLS shapes). The
        schema is enforced as a grammar during sampling; with tools the answer
        comes back as one tool call. ``model`` and transport options are
        ignored; ``n`` must be 1 and ``stream`` false.

        Returns an ``openai.types.chat.ChatCompletion`` with ``usage`` filled
        (prompt/completion/total tokens). Raises TypeError on unknown keywords
        (e.g. ``response_model``: wrap with ``instructor.patch`` or use
        :func:`instructor_client`), LocalJudgeError on a request it cannot
        serve or a prompt too long for the context. ``logprobs`` / ``top_logprobs``: the
        completion's ``choices[0].logprobs.content`` lists each generated token with its
        probability and the top alternatives at its position, as the model gave them before the
        grammar and sampling constrained the choice (llama.cpp's pre-sampling probabilities).
        """
        from openai.types.chat import ChatCompletion

        unknown = set(kwargs) - _USED_ARGS - _IGNORED_ARGS
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
        messages = _normalise_messages(kwargs.get("messages"))
        schema, tool_name = _pick_schema(kwargs)
        max_tokens = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
        max_tokens = self.default_max_tokens if max_tokens is None else int(max_tokens)
        if max_tokens < 1:
            raise LocalJudgeError("max_tokens must be at least 1")
        temperature = kwargs.get("temperature")
        request: dict[str, Any] = {
            "messages": _with_schema_hint(messages, schema)
            if schema is not None and self.schema_in_prompt
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
            request["grammar"] = _grammar_for(schema)
        if kwargs.get("logprobs"):
            # llama.cpp reports each generated token's probability and the top alternatives at its
            # position from the model's own distribution, before the grammar and the sampler act
            request["logprobs"] = True
            request["top_logprobs"] = int(kwargs.get("top_logprobs") or 1)

        result = self._call("handle_chat_completions", request)
        if "error" in result:
            self._raise_error(result["error"])
        choice = (result.get("choices") or [{}])[0]
        text = _text_of((choice.get("message") or {}).get("content"))
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
        return ChatCompletion.model_validate(
            {
                "id": f"chatcmpl-local-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.name,
                "choices": [{"index": 0, "finish_reason": finish, "message": message,
                             "logprobs": _logprobs_of(choice) if kwargs.get("logprobs") else None}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    __call__ = create

    def count_tokens(self, text: str) -> int:
        """Number of tokens the model's own tokenizer makes of ``text`` (no BOS,
        no chat template; special-token text such as ``<|im_end|>`` counts as
        one token). Costs about 0.1 s whatever the length: no model evaluation.

        The binding has no tokenize call, so this sends ``context_length + 1``
        control tokens followed by ``text`` as a completion prompt: the request
        is refused before evaluation with its exact token count, from which the
        padding's count is subtracted. Raises LocalJudgeError if the model has
        no usable control token.
        """
        if self._pad_token is None:
            meta = read_gguf_metadata(self.path, arrays=("tokenizer.ggml.tokens",))
            self._pad_token = special_token_text(meta, meta.get("tokenizer.ggml.tokens") or [])
            if self._pad_token is None:
                raise LocalJudgeError(f"{self.path.name}: no control token to count tokens with")
        pad = self._pad_token * (self.context_length + 1)
        if self._pad_base is None:
            base = self._prompt_tokens(pad)
            if self._prompt_tokens(pad + self._pad_token) != base + 1:
                raise LocalJudgeError(
                    f"{self.path.name}: token {self._pad_token!r} does not tokenize alone; cannot count tokens"
                )
            self._pad_base = base
        return self._prompt_tokens(pad + text) - self._pad_base

    def _prompt_tokens(self, prompt: str) -> int:
        result = self._call("handle_completions", {"prompt": prompt, "max_tokens": 1})
        error = result.get("error") or {}
        if error.get("type") != "exceed_context_size_error" or "n_prompt_tokens" not in error:
            self._raise_error(error or {"message": "expected a context-size refusal"})
        return int(error["n_prompt_tokens"])

    def close(self) -> None:
        """Free the model once the calls in flight return (the object is unusable afterwards)."""
        self._server = None
        self._claim.release()

    def __repr__(self) -> str:
        return (f"LocalChatModel({str(self.path)!r}, context_length={self.context_length}, slots={self.slots}, "
                f"n_threads={self.n_threads}, poll={self.poll})")


# --------------------------------------------------------------------------- cache

_MODELS: dict[tuple[pathlib.Path, LocalSettings], LocalChatModel] = {}
_MODELS_LOCK = threading.Lock()


def _default_context(trained: int | None) -> int:
    return min(DEFAULT_N_CTX, trained) if trained else DEFAULT_N_CTX


def model_plan(model: str) -> tuple[pathlib.Path, LocalSettings, int]:
    """What `get_model` would load for ``model``, without loading it: the resolved GGUF file,
    the settings, and one call's context window in tokens (the settings' ``context``, else 4096 or
    the model's trained context when smaller, read from the file's header). Joins a shipped
    model's parts on first use. Raises LocalJudgeError like resolve_model_path, for a bad option,
    and for a file that is not GGUF."""
    path, settings = _file_and_settings(model)
    context = settings.context or _default_context(trained_context(read_gguf_metadata(path)))
    return path, settings, int(context)


def _file_and_settings(model: str) -> tuple[pathlib.Path, LocalSettings]:
    base, _ = split_options(model)
    try:
        settings = local_settings(model)
    except ValueError as exc:
        raise LocalJudgeError(str(exc)) from None
    return resolve_model_path(base).resolve(), settings


def check_binding() -> None:
    """Raise LocalJudgeError (with the install hint) when the llama.cpp binding is missing."""
    _import_binding()


def get_model(model: str, **kwargs: Any) -> LocalChatModel:
    """The process-wide :class:`LocalChatModel` for ``model`` (a name that
    :func:`resolve_model_path` takes, with options after ``?``: ``local?slots=2&threads=1``,
    see `engine.embedded.settings`), loaded on first use; one instance per resolved file path and
    settings. ``kwargs`` go to :class:`LocalChatModel` on that first load only. Raises
    LocalJudgeError like resolve_model_path and the loader, and for a bad option."""
    path, settings = _file_and_settings(model)
    with _MODELS_LOCK:
        found = _MODELS.get((path, settings))
        if found is None:
            kwargs.setdefault("name", model)
            found = _MODELS[(path, settings)] = LocalChatModel(path, settings=settings, **kwargs)
        return found


def instructor_client(model: LocalChatModel | str, mode: Any = None) -> Any:
    """An ``instructor.Instructor`` whose ``create(response_model=..., messages=...)``
    runs on the local model (``mode`` defaults to :data:`INSTRUCTOR_MODE`)."""
    import instructor

    chat = get_model(model) if isinstance(model, str) else model
    mode = mode or INSTRUCTOR_MODE
    return instructor.Instructor(client=None, create=instructor.patch(create=chat.create, mode=mode), mode=mode)

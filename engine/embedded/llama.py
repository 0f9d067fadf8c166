"""Embedded local judge backend: a GGUF chat model run in-process, its output
constrained by a grammar built from the answer's JSON Schema.

Models: ``local``, ``local-tiny`` and ``llamacpp/PATH.gguf``; their files are found (and
joined) by `engine.embedded.files`, their headers read by `engine.embedded.gguf`, requests and
answers shaped by `engine.embedded.chat_request`; the names users and tests import from here are
re-exported. Typical use::

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

import os
import pathlib
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..core.errors import LocalJudgeError
from .chat_request import check_arguments, completion_of, llama_request
from .files import LOCAL_MODELS, PIP_HINT, LocalModelInfo, join_parts, resolve_model_path, say
from .gguf import read_gguf_metadata, special_token_text, trained_context
from .jobs import claim_threads
from .settings import LocalSettings, available_cpus, local_settings, split_options

__all__ = ["INSTRUCTOR_MODE", "LocalChatModel", "check_binding", "get_model", "model_plan", "instructor_client"]

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
        say(f"loading the embedded model {self.path.name} ({self.path.stat().st_size / 1e9:.1f} GB) into memory")
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

        check_arguments(kwargs)
        request, tool_name = llama_request(kwargs, default_max_tokens=self.default_max_tokens,
                                           schema_in_prompt=self.schema_in_prompt)
        result = self._call("handle_chat_completions", request)
        if "error" in result:
            self._raise_error(result["error"])
        return ChatCompletion.model_validate(
            completion_of(result, tool_name=tool_name, model=self.name, logprobs=bool(kwargs.get("logprobs"))))

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

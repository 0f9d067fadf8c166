"""The provider layer: one try at a judge call through an instructor client.

`InstructorJudge.ask` checks the prompt against the context window (`engine.judge.window`), sends the
messages through instructor, whose response model has the answer schema as its JSON Schema and
validates each answer with the call's `AnswerContract`, re-asking an invalid answer with the
error up to `call.max_reasks` times. A failure is classified here: `TransportFailure` for a try
that may succeed when repeated (the retry layer, `engine.judge.retries`, repeats it), else
`ScorerRunError` of kind ``auth``, ``prompt_too_long`` (the provider refused the prompt as longer
than its context), ``truncated``, ``content_filter`` (the provider's filter stopped an answer:
the call ends at that answer, parsed or not), ``check`` or ``judge``. API keys are redacted
from every message and raw answer. A call that wants label probabilities (`JudgeCall.probabilities`)
is sent with ``logprobs`` to a provider that reports them, and its answer carries them
(`engine.core.answer_probs`).

The contract reaches pydantic's validators through instructor's validation context (``context=``,
given to ``model_validate``). instructor renders every message as a Jinja template when that
context is non-empty, which would execute user text (case C07), so the context is an *empty*
mapping that carries the contract as an attribute.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..core.answer_probs import probs_from_completion
from ..core.errors import ScorerRunError
from ..core.result import Usage
from .call import JudgeAnswer, JudgeCall, TransportFailure
from .contract import AnswerContract, AnswerInvalid, WrittenAnswer, as_text, no_valid_answer, written_answer
from .model_params import RequestShape
from .model import doctor_command
from .refusals import is_auth, is_prompt_too_long, refuses_logprobs, refuses_mode, server_said
from .usage import add_tokens as _add_tokens
from .usage import reported as _reported
from .openai_path import check_once, mark_checked
from .redaction import kept_secrets, redact, register_secrets
from .window import WindowCheck

# instructor logs every failed attempt at ERROR level; the engine reports failures itself
logging.getLogger("instructor").addHandler(logging.NullHandler())

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}


class _Filtered(BaseException):
    """Raised by the ``completion:response`` hook on an answer the provider's content filter
    stopped, ending the call there (before instructor parses or re-asks it). A `BaseException`:
    instructor swallows a hook's `Exception`s and re-asks anything that fails to parse."""

    def __init__(self, completion: Any, why: str):
        super().__init__(why)
        self.completion = completion
        self.why = why


class ContractContext(Mapping[str, Any]):
    """instructor's validation context for one call: an empty mapping (so instructor renders no
    message as a template) carrying the call's `contract`, and the `completion` being parsed
    (set by the ``completion:response`` hook, `saw`), whose text the answer is read from."""

    def __init__(self, contract: AnswerContract):
        self.contract = contract
        self.completion: Any = None

    def saw(self, completion: Any = None, *args: Any, **kwargs: Any) -> None:
        """The ``completion:response`` hook: `completion` is the one instructor parses next."""
        self.completion = completion

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@lru_cache(maxsize=512)
def response_model(schema_json: str, title: str) -> type:
    """A pydantic model whose JSON Schema is exactly `schema_json` and whose validation is the
    contract found in the validation context (`ContractContext`)."""
    from instructor import OpenAISchema
    from pydantic import model_validator

    schema = json.loads(schema_json)
    schema.setdefault("title", title)
    tool = schema["title"]  # the function a tools-mode answer calls (instructor names it so)

    # Subclassing instructor's schema base lets instructor use the class as is: no wrapper
    # model is created per call, and its tool schema is generated once per answer schema.
    class Answer(OpenAISchema):
        payload: Any = None

        @model_validator(mode="before")
        @classmethod
        def _validate(cls, data: Any, info: Any) -> Any:
            contract = getattr(info.context, "contract", None)
            if contract is None:  # a parse path that lost the context: never accept unchecked
                raise RuntimeError("the answer reached validation without its contract")
            if isinstance(data, WrittenAnswer):  # AnswerInvalid is a ValueError: re-asked
                if data.problem is not None:
                    raise AnswerInvalid(data.problem)
                return {"payload": contract.validate_text(data.text)}
            return {"payload": contract.validate(data)}

        @classmethod
        def model_validate_json(cls, json_data: Any, *, strict: bool | None = None, context: Any = None,
                                **kwargs: Any) -> Any:
            # every mode's answer text comes here (tool-call arguments, content, a fence's inside):
            # it is read by the contract from the completion's own text, in one way for all modes
            written = written_answer(getattr(context, "completion", None), json_data, tool)
            return cls.model_validate(written, strict=strict, context=context)

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return json.loads(json.dumps(schema))

    Answer.__name__ = Answer.__qualname__ = title
    Answer.__doc__ = schema.get("description") or f"The answer to stage {title}."
    check_once()
    return mark_checked(Answer)


@dataclass(frozen=True)
class ProviderTraits:
    """What a provider judge knows of its model, beside its client.

    model_name: the provider's name for the model, sent with each request (None when bound to
    the client). secrets: API keys to redact. window: refuses prompts that cannot fit the model
    (`engine.judge.window`). identity: what the judge-call cache keys this judge's answers by
    (`engine.judge.identity.ProviderIdentity`; None: never cached). sample_seeds: send sample i of
    a sampled question (i > 0) with ``seed=i``, for a model that otherwise samples with one fixed
    seed and so would repeat its first answer (the embedded judges). logprobs: the provider
    reports token probabilities when asked (OpenAI's ``logprobs`` and ``top_logprobs``): a call
    that wants its answer's label probabilities (`JudgeCall.probabilities`) asks for them and gets
    them in `JudgeAnswer.answer_probs` (`engine.core.answer_probs`). parallel_calls: the calls the
    model serves at once, to which a `for_each` stage's elements are asked together
    (`engine.interpret.fan_out`; 1: one after another); lead_alone: ask such a stage's first
    element alone first, so a prompt cache reads the prefix the elements share once. shape: what
    the model accepts in a request (`engine.judge.model_params.RequestShape`; None: a chat
    model's parameters)."""

    model_name: str | None = None
    secrets: tuple[str | None, ...] = ()
    window: WindowCheck | None = None
    identity: Any = None
    sample_seeds: bool = False
    logprobs: bool = False
    parallel_calls: int = 1
    lead_alone: bool = False
    shape: RequestShape | None = None


class InstructorJudge:
    """A judge reached through an instructor `AsyncInstructor` client: one try per `ask`.

    client: the instructor client; client_factory: makes one per event loop instead (an async
    HTTP client's pooled connections belong to the loop that opened them). model: the model
    string reported in results. traits: what the judge knows of its model (`ProviderTraits`).
    probs_client_factory: the client (one per event loop) a call wanting token probabilities goes
    through, when given (a client answering in the message content, json_schema mode: OpenAI
    reports no probabilities for tool-call arguments). Raises `ScorerRunError` from `ask`.
    """

    def __init__(self, client: Any, model: str, traits: ProviderTraits = ProviderTraits(), *,
                 client_factory: Callable[[], Any] | None = None,
                 probs_client_factory: Callable[[], Any] | None = None):
        self.client = client
        self.shape = traits.shape or RequestShape()
        self.parallel_calls = traits.parallel_calls
        self.lead_alone = traits.lead_alone
        self.sample_seeds = traits.sample_seeds
        self.logprobs = traits.logprobs
        self._probs_client_factory = probs_client_factory
        self.cache_identity = traits.identity
        self.window = traits.window
        self._client_factory = client_factory
        self._loop_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._loop_probs_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._loop_closers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.model = model
        self.model_name = traits.model_name
        # API keys: never echoed in error messages, raw answers or logs (a server may quote them)
        self._secrets = kept_secrets(traits.secrets)
        register_secrets(self._secrets)

    def _client(self, probabilities: bool = False) -> Any:
        """The client for the running event loop (`client` without a `client_factory`); with
        `probabilities`, the one for calls that want token probabilities (`probs_client_factory`)."""
        factory, clients = self._client_factory, self._loop_clients
        if probabilities and self._probs_client_factory is not None:
            factory, clients = self._probs_client_factory, self._loop_probs_clients
        if factory is None:
            return self.client
        loop = asyncio.get_running_loop()
        client = clients.get(loop)
        if client is None:
            client = clients[loop] = factory()
            if loop not in self._loop_closers:
                self._loop_closers[loop] = _closed_with_the_loop(self, loop)
        return client

    async def aclose(self) -> None:
        """Close the HTTP clients opened for the running event loop. A loop run by `asyncio.run`
        closes them itself as it ends (through `_closed_with_the_loop`), so a caller of `arun`
        that never calls this leaves no connection open."""
        loop = asyncio.get_running_loop()
        self._loop_closers.pop(loop, None)
        for clients in (self._loop_clients, self._loop_probs_clients):
            http = getattr(clients.pop(loop, None), "client", None)
            if http is not None and hasattr(http, "close"):
                try:
                    await http.close()
                except Exception:  # closing is best effort; the loop is ending anyway
                    pass

    def __repr__(self) -> str:
        return f"InstructorJudge(model={self.model!r}, window={self.window!r})"

    def _redact(self, text: str | None) -> str | None:
        return redact(text, self._secrets)

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        """One try at `call`. A call that wants label probabilities from a model that refuses
        ``logprobs`` (an HTTP 400 naming them) is asked again without, and this judge asks none
        from then on: one refused request per judge, not one per item; the stage then counts the
        hard labels (`JudgeAnswer.answer_probs` None)."""
        try:
            return await self._ask(call)
        except ScorerRunError as exc:
            if not (call.probabilities and self.logprobs and exc.kind == "judge" and refuses_logprobs(exc.message)):
                raise
            self.logprobs = False  # learnt once: every later call of this judge asks for none
            return await self._ask(call)

    async def _ask(self, call: JudgeCall) -> JudgeAnswer:
        from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException
        from instructor.core.hooks import Hooks

        if self.window is not None and self.window.window:
            if self.window.count is not None:  # an exact count runs the model's tokenizer: off the loop
                await asyncio.to_thread(self.window.check, call.stage, call.messages, call.max_tokens)
            else:
                self.window.check(call.stage, call.messages, call.max_tokens)
        calls = [0]
        context = ContractContext(call.contract)
        hooks = Hooks()
        hooks.on("completion:response", lambda *a, **k: calls.__setitem__(0, calls[0] + 1))
        hooks.on("completion:response", _stop_if_filtered)
        hooks.on("completion:response", context.saw)
        probabilities = call.probabilities and self.logprobs and self.shape.gives_probabilities(call)
        sent = self.shape.params(call, probabilities)  # what this model accepts (`engine.judge.model_params`)
        # a chat request's parameters in the order they have always been sent
        params: dict[str, Any] = {k: sent.pop(k) for k in ("temperature", "max_tokens") if k in sent}
        if self.model_name:
            params["model"] = self.model_name
        if self.sample_seeds and call.sample_index:
            params["seed"] = call.sample_index
        params.update(sent)
        usage = Usage()
        compiled = call.contract.compiled  # the stage's schema, compiled once (`engine.core.answer_schema`)
        assert compiled is not None
        started = time.perf_counter()
        try:
            answer, completion = await self._client(probabilities).create_with_completion(
                # the schema's own key order, not sorted: it is the order of the answer's properties the
                # provider is shown and a grammar-constrained judge must write (a verdict before its reason)
                response_model=response_model(compiled.json_text, call.stage),
                messages=[dict(m) for m in call.messages],
                max_retries=call.max_reasks,
                context=context,
                hooks=hooks,
                **params,
            )
        except _Filtered as stopped:
            usage.seconds = time.perf_counter() - started
            _add_tokens(usage, getattr(stopped.completion, "usage", None))
            n = max(calls[0], 1)
            error = ScorerRunError("content_filter", f"the provider's content filter stopped the answer "
                                   f"({stopped.why}); it is not scored", stage=call.stage,
                                   raw_answer=_raw(stopped.completion), attempts=n)
            raise self._failure(error, usage, reasks=n - 1) from None
        except (InstructorRetryException, IncompleteOutputException) as exc:
            usage.seconds = time.perf_counter() - started
            _add_tokens(usage, _reported(getattr(exc, "last_completion", None), getattr(exc, "total_usage", None)),
                        calls=max(calls[0], 1))
            n = max(calls[0], 1)
            error = self._classify_wrapped(exc, call, n)
            raise self._failure(error, usage, reasks=0 if error.kind in ("transport", "auth") else n - 1) from None
        except Exception as exc:  # failures raised before instructor wrapped them
            usage.seconds = time.perf_counter() - started
            raise self._failure(self._classify(exc, call.stage, 1), usage) from None
        usage.seconds = time.perf_counter() - started
        n = max(calls[0], 1)
        usage.calls, usage.reasks = n, n - 1
        _add_tokens(usage, _reported(completion, getattr(answer, "_total_usage", None)), calls=n)
        probs = probs_from_completion(completion, call.schema, fields=compiled.labels) if probabilities else None
        sampled_at = self.shape.sampled_at(call)
        return JudgeAnswer(answer.payload, _raw(completion) or json.dumps(answer.payload), n, usage,
                           answer_probs=probs or None,
                           sampled_at=sampled_at if sampled_at != call.temperature else None)

    def _classify_wrapped(self, exc: BaseException, call: JudgeCall, n: int) -> ScorerRunError:
        """The failure instructor raised after its tries (`n` answers received)."""
        from instructor.core.exceptions import IncompleteOutputException

        cause = exc.__cause__ or exc
        if isinstance(cause, IncompleteOutputException) or isinstance(exc, IncompleteOutputException):
            error = ScorerRunError("truncated", self.shape.cut_off(call, getattr(cause, "last_completion", None)),
                                   stage=call.stage, raw_answer=_raw(getattr(cause, "last_completion", None)),
                                   attempts=n)
        elif _is_transport(cause) or isinstance(getattr(cause, "status_code", None), int):
            error = self._classify(cause, call.stage, n)  # the provider answered with an HTTP error
        else:
            error = no_valid_answer(call.stage, max(getattr(exc, "n_attempts", 1), 1), _short(cause, self._redact),
                                    _last_invalid(exc), raw_answer=_raw(getattr(exc, "last_completion", None)))
            error.attempts = n
        return error

    def _classify(self, exc: BaseException, stage: str, attempts: int) -> ScorerRunError:
        """A provider error: transport (may succeed when repeated), auth, prompt_too_long, unsupported,
        not_found, or judge."""
        if _is_transport(exc):
            return TransportFailure(_describe(exc, self._redact), stage=stage, attempts=attempts,
                                    retry_after=_retry_after(exc))
        described = _describe(exc, self._redact)
        doctor = doctor_command(self.model, getattr(self.cache_identity, "base_url", None))
        if is_auth(exc):
            return ScorerRunError("auth", f"the provider refused the request's credentials "
                                  f"({server_said(exc, 300, self._redact)}): check the API key (api_key=, or the "
                                  "provider's variable such as OPENAI_API_KEY) and the key's access to the model; "
                                  f"{doctor} checks it", stage=stage, attempts=attempts)
        if is_prompt_too_long(exc):
            return ScorerRunError("prompt_too_long", f"the provider refused the prompt of stage '{stage}' as longer "
                                  f"than the model's context window ({described}); shorten the item's text, or "
                                  "use a model with a larger window", stage=stage, attempts=attempts)
        if refuses_mode(exc):
            return ScorerRunError("unsupported", f"the judge's server refused the structured-output mode's "
                                  f"parameters ({described}); {doctor} finds a mode it takes, then set it "
                                  "($SCORESPEC_MODE, or mode= in Python)", stage=stage, attempts=attempts)
        if getattr(exc, "status_code", None) == 404:
            return ScorerRunError("not_found", f"{described} (HTTP 404: the server has no such path or model: check "
                                  "--base-url, which for an OpenAI-compatible server usually ends in /v1, and the "
                                  f"model name; {doctor} checks both)", stage=stage, attempts=attempts)
        return ScorerRunError("judge", described, stage=stage, attempts=attempts)

    def _failure(self, exc: ScorerRunError, usage: Usage, reasks: int = 0) -> ScorerRunError:
        """`exc` with the usage spent on the try attached and any API key redacted."""
        usage.calls, usage.reasks = exc.attempts, reasks
        exc.usage = usage
        exc.message = self._redact(exc.message) or ""
        exc.args = (exc.message,)
        exc.raw_answer = self._redact(exc.raw_answer)
        return exc


def _closed_with_the_loop(judge: InstructorJudge, loop: Any) -> Any:
    """An asynchronous generator, started and left suspended, that closes `judge`'s clients of
    `loop` when the loop finalises it: ``loop.shutdown_asyncgens()``, which `asyncio.run` calls as
    it ends, closes every suspended generator of the loop. Returned to be kept while the loop runs
    (the loop itself only holds it weakly)."""
    async def close() -> Any:
        try:
            yield
        finally:
            if judge._loop_closers.get(loop) is closer:
                await judge.aclose()

    closer = close()
    try:
        closer.asend(None).send(None)  # to its yield: the loop now knows it (no await happens before)
    except StopIteration:
        pass
    return closer


def _last_invalid(exc: BaseException) -> AnswerInvalid | None:
    """The `AnswerInvalid` of the last answer the contract refused during the call, if any."""
    for attempt in reversed(getattr(exc, "failed_attempts", None) or []):
        found = _invalid_in(getattr(attempt, "exception", None))
        if found is not None:
            return found
    return _invalid_in(exc.__cause__)


def _invalid_in(error: BaseException | None) -> AnswerInvalid | None:
    if isinstance(error, AnswerInvalid):
        return error
    errors = getattr(error, "errors", None)  # a pydantic ValidationError keeps the raised error in ctx
    if callable(errors):
        try:
            details = errors()
        except Exception:
            return None
        for detail in details:
            raised = (detail.get("ctx") or {}).get("error")
            if isinstance(raised, AnswerInvalid):
                return raised
    return None


def _is_transport(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS
    name = type(exc).__name__
    return name in {"APIConnectionError", "APITimeoutError", "APIResponseValidationError"} or isinstance(
        exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)
    )


def _filtered_by(completion: Any) -> str | None:
    """Why the provider's content filter stopped `completion` (``finish_reason content_filter``;
    Anthropic: ``stop_reason refusal``), or None when it did not."""
    try:
        reason = completion.choices[0].finish_reason
    except (AttributeError, IndexError, TypeError):
        stop = getattr(completion, "stop_reason", None)
        return "stop_reason refusal" if stop == "refusal" else None
    return "finish_reason content_filter" if reason == "content_filter" else None


def _stop_if_filtered(completion: Any = None, *args: Any, **kwargs: Any) -> None:
    """The ``completion:response`` hook: raise `_Filtered` for an answer a content filter stopped."""
    why = _filtered_by(completion)
    if why is not None:
        raise _Filtered(completion, why)


def _retry_after(exc: BaseException) -> float | None:
    """The response's ``Retry-After`` in seconds (a number or an HTTP date), or None."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value) if value else None
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _describe(exc: BaseException, redact_text: Callable[[str], str | None]) -> str:
    """The exception in one line of at most 300 characters of its text (a connection error's with
    its cause: refused, not resolved, reset), redacted first (so truncation cannot leave half an
    API key behind)."""
    status = getattr(exc, "status_code", None)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
    said = str(exc)
    cause = exc.__cause__
    if type(exc).__name__ in ("APIConnectionError", "APITimeoutError") and cause is not None and str(cause):
        said += f" ({type(cause).__name__}: {cause})"  # the client says only "Connection error.": why
    return f"{text}: {(redact_text(said) or '')[:300]}"


def _raw(completion: Any) -> str | None:
    """The text a chat completion carried (tool-call arguments or content)."""
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        content = getattr(completion, "content", None)  # anthropic: thinking blocks come before the answer
        if isinstance(content, list) and content:
            blocks = [b for b in content if getattr(b, "type", None) not in ("thinking", "redacted_thinking")]
            block = blocks[0] if blocks else content[0]
            if hasattr(block, "input"):
                return json.dumps(getattr(block, "input", None))
            return getattr(block, "text", None)
        return None
    if getattr(message, "tool_calls", None):
        return as_text(message.tool_calls[0].function.arguments)
    return as_text(message.content)


_WRAPPER = re.compile(r"^\d+ validation errors? for \w+$")


def _short(exc: BaseException, redact_text: Callable[[str], str | None]) -> str:
    """A validation failure in one line, without pydantic's wrapper text around our message."""
    text = (redact_text(str(exc)) or "").strip().splitlines()
    kept = [line for line in text if "errors.pydantic.dev" not in line and not _WRAPPER.match(line)]
    joined = " ".join(s.strip() for s in kept)
    joined = re.sub(r"^Value error, ", "", joined)
    return re.sub(r" \[type=[a-z_]+, input_value=.*$", "", joined)[:500]


__all__ = ["InstructorJudge", "ProviderTraits", "ContractContext", "response_model", "RETRYABLE_STATUS"]

"""The judge's interface: a call, its answer, and the one method every judge and layer has.

A judge answers a `JudgeCall` with a `JudgeAnswer` through ``async ask(call)``, or raises
`ScorerRunError`. The judge `engine.bind.stack.make_judge` builds is a provider judge under layers
with that same interface, each wrapping the next (`JudgeLayer`), in the order
`engine.judge.stack.LAYERS` declares. A provider judge that cannot even be set up (no API key)
raises `MissingCredentials`; one that is set up raises `TransportFailure` for a try that may
succeed when repeated (429, 5xx, timeouts, resets); the retry layer repeats it and counts the
retries.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import ScorerRunError
from ..core.result import Usage
from .contract import AnswerContract


@dataclass(frozen=True)
class JudgeCall:
    """One stage's request. `messages` are chat messages (``{"role", "content"}``), rendered;
    `contract` is what an answer must satisfy (schema, normalisation, checks) and carries the
    schema's compiled parts (`AnswerContract.compiled`: validator, label fields, the schema as
    sent), a stage plan's own for a schema known at load; `max_reasks` how
    often an invalid answer is asked again; `max_tokens` the room for the answer, in tokens;
    `sample_index` which sample of a sampled stage's question this is (0 for the first, and for
    a stage asked once): the judge-call cache keys each sample apart; `probabilities`: also
    report the answer's label probabilities (`JudgeAnswer.answer_probs`), when the judge can;
    `reasoning_effort` (``minimal``/``low``/``medium``/``high``, or None), `reasoning_tokens` (the
    reasoning budget added to `max_tokens` for a reasoning model, None: the judge's default) and
    `family` (the spec's declared model family, None: the table's): how a reasoning model is asked
    (`engine.judge.model_params`). `order`: for a pairwise stage, the order the pair's responses
    are shown in (``AB``: output_a first, ``BA``: output_b first), part of the cache key; None for
    any other stage. `model`: the juror asked, for a stage a jury answers (`engine.judge.jury`),
    None: the scorer's judge."""

    stage: str
    messages: list[dict[str, str]]
    contract: AnswerContract
    max_reasks: int = 2
    temperature: float = 0.0
    max_tokens: int = 1024
    sample_index: int = 0
    probabilities: bool = False
    reasoning_effort: str | None = None
    reasoning_tokens: int | None = None
    family: str | None = None
    order: str | None = None
    model: str | None = None

    @property
    def schema(self) -> dict[str, Any]:
        """The per-item JSON Schema (type object) of the answer."""
        return self.contract.schema  # type: ignore[return-value]

    def validate(self, data: Any) -> Any:
        """`data` normalised and validated against the contract; raises `AnswerInvalid`."""
        return self.contract.validate(data)

    def with_messages(self, messages: list[dict[str, str]]) -> "JudgeCall":
        """The same call with other messages (a re-ask adds the judge's answer and the error)."""
        return dataclasses.replace(self, messages=messages)


@dataclass
class JudgeAnswer:
    """A validated answer: `data` (normalised JSON value; a list the call's contract keeps the
    first items of, `AnswerContract.keep_first`, as long as the judge wrote it), `raw` (the text
    the model sent), `attempts` (calls made for it) and `usage`. `answer_probs`: for a call that asked for
    probabilities, each label field the judge reported them for → {value: probability}
    (`engine.core.answer_probs`); None when it reported none (or was not asked). `sampled_at`: the
    temperature the model sampled at when it takes only its own (a reasoning model: 1) and the
    call asked for another; None otherwise."""

    data: Any
    raw: str
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)
    answer_probs: dict[str, dict[str, float]] | None = None
    sampled_at: float | None = None


class Judge(Protocol):
    """Anything with a `model` string and ``async ask(call) -> JudgeAnswer``. `ask` raises
    `ScorerRunError` (kinds ``judge``, ``check``, ``truncated``, ``content_filter``, ``transport``,
    ``auth``, ``prompt_too_long``) with the usage spent attached. A judge may have ``async aclose()``,
    releasing what it holds for the running event loop."""

    model: str

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        ...


class TransportFailure(ScorerRunError):
    """One try could not reach the judge (HTTP 408/409/425/429/5xx, a timeout, a reset, an
    unreadable body) and may succeed when repeated. `message` describes the cause (API keys
    redacted); `retry_after` is the server's ``Retry-After`` in seconds, when it gave one."""

    def __init__(self, message: str, *, stage: str | None = None, attempts: int = 1, usage: Any = None,
                 retry_after: float | None = None):
        super().__init__("transport", message, stage=stage, attempts=attempts, usage=usage)
        self.retry_after = retry_after


class MissingCredentials(Exception):
    """A provider judge cannot be set up: its provider's client was given no credentials (no
    API key, and none in the provider's environment variable, e.g. ``OPENAI_API_KEY``) or no
    endpoint it needs. Raised when the judge is built, from the provider client's own error type
    (`engine.judge.clients.hosted_judge`); every item that needs the judge fails with kind
    ``auth``."""


class JudgeLayer:
    """A judge wrapping another (`inner`) with the same interface; subclasses override `ask`.
    `model` is the inner judge's; `aclose` closes the inner judge (``async with judge:`` does it
    on leaving the block); `provider` is the innermost judge of the stack (the one that calls a model)."""

    def __init__(self, inner: Judge):
        self.inner = inner
        self.model = getattr(inner, "model", "")

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        return await self.inner.ask(call)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> JudgeLayer:
        return self

    async def __aexit__(self, *exc: object) -> None:  # ``async with judge:`` closes its connections
        await self.aclose()

    @property
    def provider(self) -> Any:
        judge: Any = self.inner
        while isinstance(judge, JudgeLayer):
            judge = judge.inner
        return judge

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


__all__ = ["JudgeCall", "JudgeAnswer", "Judge", "JudgeLayer", "MissingCredentials", "TransportFailure"]

"""What each model family accepts in a request, in one table, and the request built from it.

A judge call (`engine.judge.call.JudgeCall`) says what the stage wants: a temperature, the room
for the answer (``max_tokens``), label probabilities, a reasoning effort. What is *sent* depends
on the model's family (`Family`), because the families refuse each other's parameters:

- ``chat`` (every model the table does not name, and every OpenAI-compatible or embedded server):
  ``temperature``, ``max_tokens``, ``logprobs`` when probabilities are wanted — the request as it
  has always been sent, byte for byte;
- ``reasoning`` (OpenAI's reasoning models: ``gpt-5*``, ``o1*``, ``o3*``, ``o4*``): the limit is
  ``max_completion_tokens`` and holds the hidden reasoning too (the answer's room plus the
  reasoning budget, `DEFAULT_REASONING_TOKENS`); no ``temperature`` or ``top_p`` (only their
  default, 1, is accepted: nothing is sent and the model samples at 1); no ``logprobs``;
  ``reasoning_effort`` when the spec gives one. Source: OpenAI's reasoning-models guide
  ("Reasoning models", platform docs: reasoning tokens, ``max_completion_tokens``, unsupported
  parameters) and its chat-completions reference;
- ``thinking`` (Anthropic's models with extended thinking, when the spec asks for reasoning with a
  ``reasoning_effort``): ``thinking: {type: enabled, budget_tokens: B}``, ``max_tokens`` the
  answer's room plus B (it must exceed the budget), no ``temperature`` (thinking runs at 1 only),
  and no forced tool choice (the client answers in JSON mode). Source: Anthropic's "Building with
  extended thinking" docs. Without an effort these models are asked as ``chat``.

The table (`KNOWN`) maps a provider and a model-name pattern to a family; a model it does not
know is ``chat``. A user extends it for such a model with the spec's ``judge.family``, the
settings' ``family`` (`engine.judge.settings.JudgeSettings`) or ``$SCORESPEC_MODEL_FAMILY``
(precedence: settings > spec > environment > table). The cache key is computed from the request
this module builds (`RequestShape.identity_fields`), so what is keyed is what is sent.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from ..core import environment
from .call import JudgeCall

__all__ = ["DEFAULT_REASONING_TOKENS", "EFFORTS", "FAMILIES", "FAMILY_ENV", "KNOWN", "Family", "RequestShape",
           "check_effort", "check_family", "family_of", "shape_for"]

#: The reasoning budget, in tokens, added to a stage's answer room for a reasoning model: enough
#: for a claim check at ``medium`` effort (a few hundred to two thousand reasoning tokens) with
#: room to spare. Anthropic requires a thinking budget of at least 1,024 tokens.
DEFAULT_REASONING_TOKENS = 4096
#: The reasoning efforts a spec may give (OpenAI's ``reasoning_effort`` values).
EFFORTS = ("minimal", "low", "medium", "high")
#: The environment variable naming the family of a model the table does not know.
FAMILY_ENV = "SCORESPEC_MODEL_FAMILY"
#: The temperature a reasoning or thinking model samples at (the only one it accepts).
FIXED_TEMPERATURE = 1.0


@dataclass(frozen=True)
class Family:
    """What one family of models accepts.

    name: ``chat``, ``reasoning`` or ``thinking``. limit: the name of the token limit sent
    (``max_tokens`` or ``max_completion_tokens``). temperature: whether a temperature is sent (False:
    the model takes only its default, `FIXED_TEMPERATURE`). logprobs: whether token probabilities
    can be asked for. effort: whether ``reasoning_effort`` is sent. reasoning: whether the limit
    holds a reasoning budget on top of the answer's room. thinking: Anthropic's ``thinking`` block."""

    name: str
    limit: str = "max_tokens"
    temperature: bool = True
    logprobs: bool = True
    effort: bool = False
    reasoning: bool = False
    thinking: bool = False


FAMILIES: dict[str, Family] = {
    "chat": Family("chat"),
    "reasoning": Family("reasoning", limit="max_completion_tokens", temperature=False, logprobs=False, effort=True,
                        reasoning=True),
    "thinking": Family("thinking", temperature=False, logprobs=False, reasoning=True, thinking=True),
}

#: (provider, model-name pattern, family), first match wins; fnmatch patterns, any case.
KNOWN: tuple[tuple[str, str, str], ...] = (
    ("openai", "gpt-5*chat*", "chat"),  # gpt-5-chat-latest: the chat model behind ChatGPT, no reasoning
    ("openai", "gpt-5*", "reasoning"),
    ("openai", "o1*", "reasoning"),
    ("openai", "o3*", "reasoning"),
    ("openai", "o4*", "reasoning"),
    ("anthropic", "claude-3-7-sonnet*", "thinking"),
    ("anthropic", "claude-sonnet-4*", "thinking"),
    ("anthropic", "claude-opus-4*", "thinking"),
    ("anthropic", "claude-haiku-4-5*", "thinking"),
)


def check_family(name: Any, where: str = "family") -> str:
    """`name` when it names a family of `FAMILIES`; else `ValueError` naming `where` and the choices."""
    if name in FAMILIES:
        return name
    raise ValueError(f"{where}: unknown model family {name!r} (one of {', '.join(FAMILIES)})")


def check_effort(effort: Any, where: str = "reasoning_effort") -> str | None:
    """`effort` when it is None or one of `EFFORTS`; else `ValueError` naming `where`."""
    if effort is None or effort in EFFORTS:
        return effort
    raise ValueError(f"{where}: {effort!r} is not a reasoning effort (one of {', '.join(EFFORTS)})")


def family_of(model: str, declared: str | None = None) -> str:
    """The family of `model` (``provider/name``): `declared` when given, else ``$SCORESPEC_MODEL_FAMILY``,
    else the first `KNOWN` entry matching its provider and name, else ``chat``. Raises `ValueError`
    for a declared or environment family that is not one of `FAMILIES`."""
    if declared is not None:
        return check_family(declared)
    env = environment.value(FAMILY_ENV)
    if env:
        return check_family(env.strip(), f"${FAMILY_ENV}")
    provider, _, name = model.partition("/")
    for known_provider, pattern, family in KNOWN:
        if provider == known_provider and fnmatch.fnmatch(name.lower(), pattern):
            return family
    return "chat"


@dataclass(frozen=True)
class RequestShape:
    """How a judge's calls become request parameters: the model's family from the table
    (`table_family`) unless the judge's settings name one (`family`, which wins over a spec's),
    and the reasoning budget (`reasoning_tokens`, tokens > 0; None: a call's own, else
    `DEFAULT_REASONING_TOKENS`). `temperature_taken`: False for a client that takes no
    ``temperature`` at all (the anthropic SDK from 1.x): none is sent and the model samples at its
    default, 1."""

    table_family: str = "chat"
    family: str | None = None
    reasoning_tokens: int | None = None
    temperature_taken: bool = True

    def family_for(self, call: JudgeCall) -> Family:
        """The family a call is sent as: the settings' family, else the call's (its spec's
        ``judge.family``), else the table's; ``thinking`` only when the call gives an effort."""
        name = self.family or getattr(call, "family", None) or self.table_family
        family = FAMILIES[check_family(name)]
        if family.thinking and getattr(call, "reasoning_effort", None) is None:
            return FAMILIES["chat"]  # extended thinking is asked for, never on by itself
        return family

    def budget(self, call: JudgeCall) -> int:
        """The reasoning budget of `call`, tokens: the call's, else these settings', else the default."""
        return getattr(call, "reasoning_tokens", None) or self.reasoning_tokens or DEFAULT_REASONING_TOKENS

    def params(self, call: JudgeCall, probabilities: bool) -> dict[str, Any]:
        """The sampling parameters sent for `call`, in the order they are sent: for ``chat``
        exactly ``temperature``, ``max_tokens`` (and ``logprobs``, ``top_logprobs`` when
        `probabilities`); for the others see the module docstring."""
        from ..core.answer_probs import TOP_ALTERNATIVES

        family = self.family_for(call)
        sent: dict[str, Any] = {}
        if family.temperature and self.temperature_taken:
            sent["temperature"] = call.temperature
        limit = call.max_tokens + (self.budget(call) if family.reasoning else 0)
        sent[family.limit] = limit
        effort = getattr(call, "reasoning_effort", None)
        if family.effort and effort is not None:
            sent["reasoning_effort"] = effort
        if family.thinking:
            sent["thinking"] = {"type": "enabled", "budget_tokens": self.budget(call)}
        if probabilities and family.logprobs:
            sent.update(logprobs=True, top_logprobs=TOP_ALTERNATIVES)
        return sent

    def gives_probabilities(self, call: JudgeCall) -> bool:
        """Whether `call`'s family can report token probabilities."""
        return self.family_for(call).logprobs

    def identity_fields(self, call: JudgeCall, probabilities: bool) -> dict[str, Any]:
        """The cache identity's request fields for `call` as sent: ``temperature``, ``max_tokens``
        (the limit sent), ``probabilities`` (asked and sent), and ``request`` — the parameters a
        ``chat`` request does not have (None for ``chat``, so its keys are those of every earlier
        version)."""
        family = self.family_for(call)
        sent = self.params(call, probabilities)
        if family.name == "chat":  # also a client that takes no temperature: the keys of before
            return {"temperature": call.temperature, "max_tokens": call.max_tokens,
                    "probabilities": probabilities, "request": None}
        extra = {k: v for k, v in sent.items() if k not in ("temperature", "logprobs", "top_logprobs")}
        return {"temperature": sent.get("temperature", FIXED_TEMPERATURE), "max_tokens": sent[family.limit],
                "probabilities": probabilities and family.logprobs, "request": {"family": family.name, **extra}}

    def cut_off(self, call: JudgeCall, completion: Any = None) -> str:
        """Why an answer stopped at its limit (``finish_reason: length``), with what to raise: the
        answer's room for a chat model; for a reasoning model the limit sent, the reasoning tokens
        spent (from `completion`'s usage, when reported) and the reasoning budget."""
        family = self.family_for(call)
        if not family.reasoning:
            return (f"the answer was cut off at max_tokens={call.max_tokens} (finish_reason length); not parsed "
                    "(raise judge.max_tokens or the stage's max_tokens)")
        details = getattr(getattr(completion, "usage", None), "completion_tokens_details", None)
        spent = getattr(details, "reasoning_tokens", None)
        spent_text = f", {spent} of them spent reasoning" if isinstance(spent, int) else ""
        budget = self.budget(call)
        return (f"the answer was cut off at {family.limit}={call.max_tokens + budget} (finish_reason length"
                f"{spent_text}): the stage's max_tokens={call.max_tokens} for the answer plus a reasoning budget "
                f"of judge.reasoning_tokens={budget}; not parsed (raise judge.reasoning_tokens, or lower "
                "judge.reasoning_effort)")

    def sampled_at(self, call: JudgeCall) -> float:
        """The temperature the model samples `call` at: the call's, or `FIXED_TEMPERATURE` for a
        family that takes no temperature."""
        taken = self.family_for(call).temperature and self.temperature_taken
        return call.temperature if taken else FIXED_TEMPERATURE


def shape_for(model: str, family: str | None = None, reasoning_tokens: int | None = None) -> RequestShape:
    """The `RequestShape` of a judge for `model` (``provider/name``): the table's family (or
    ``$SCORESPEC_MODEL_FAMILY``), overridden by `family` (a judge setting). Raises `ValueError`
    for an unknown family or a budget that is not a whole number > 0."""
    if family is not None:
        check_family(family)
    if reasoning_tokens is not None and (isinstance(reasoning_tokens, bool) or not isinstance(reasoning_tokens, int)
                                         or reasoning_tokens < 1):
        raise ValueError(f"reasoning_tokens: a whole number of tokens > 0 is needed, not {reasoning_tokens!r}")
    return RequestShape(family_of(model), family, reasoning_tokens)

"""Who answers a judge call, as the judge-call cache keys it: a provider judge's `ProviderIdentity`.

The factories that build provider judges (`engine.judge.clients.hosted_judge`,
`engine.embedded.judge.make_local_judge`) give each one its identity: the provider, the model (the
provider's model name, or for an embedded model the file whose SHA-256 stands for it), the base
URL, the structured-output mode and the seed sent. With a call's messages, schema, temperature
and max tokens it makes the call's `engine.judge.cache.base.CallIdentity`. API keys are no part of it.
A judge without an identity (a test double, a user's own judge) is never cached.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache.base import CallIdentity
from .call import JudgeCall

__all__ = ["ProviderIdentity", "provider_identity", "schema_as_sent"]


@dataclass(frozen=True)
class ProviderIdentity:
    """The answer-changing settings of one provider judge.

    provider: ``openai``, ``anthropic``, ``ollama``… as in the model string; ``local`` for every
    embedded model. model: the provider's model name (``gpt-4o-mini``); None for an embedded
    model, whose `weights` file is hashed instead. base_url: the endpoint requests go to (None:
    the provider's default). structured_mode: instructor's mode value (``tool_call``,
    ``json_schema_mode``…). seed: the sampling seed sent, or None when none is. shape: how a call
    becomes request parameters (`engine.judge.model_params.RequestShape`; None: a chat request), so
    the key holds the temperature, limit and reasoning parameters as sent.
    """

    provider: str
    model: str | None
    base_url: str | None
    structured_mode: str
    seed: int | None = None
    weights: Path | None = None
    shape: Any = field(default=None, compare=False)
    _weights_sha256: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def needs_hash(self) -> bool:
        """True while the weights' SHA-256 is still to be computed (a slow first call)."""
        return self.weights is not None and not self._weights_sha256

    def model_identity(self) -> str:
        """The model's identity in a key: the name, or the weights' SHA-256 (computed once,
        `engine.judge.weights`). Raises OSError when the weights cannot be read."""
        if self.weights is None:
            return self.model or ""
        if not self._weights_sha256:
            from .weights import weights_sha256

            self._weights_sha256.append(weights_sha256(self.weights))
        return self._weights_sha256[0]

    def call_identity(self, call: JudgeCall, sample_index: int | None = None) -> CallIdentity:
        """The cache identity of `call` sent by this judge (as sample `sample_index`, default the
        call's own `JudgeCall.sample_index`). Raises ValueError for material that cannot be keyed,
        OSError for unreadable weights."""
        if sample_index is None:
            sample_index = call.sample_index
        sent: dict[str, Any] = {"temperature": call.temperature, "max_tokens": call.max_tokens,
                                "probabilities": call.probabilities}
        if self.shape is not None:
            sent = self.shape.identity_fields(call, call.probabilities)
        return CallIdentity(provider=self.provider, model=self.model_identity(), base_url=self.base_url,
                            structured_mode=self.structured_mode, messages=call.messages,
                            schema=schema_as_sent(call), seed=self.seed, sample_index=sample_index,
                            order=getattr(call, "order", None), **sent)


def schema_as_sent(call: JudgeCall) -> Any:
    """The answer schema the provider judge sends for `call`: the call's schema titled with the
    stage id unless it has a title (`engine.judge.provider.response_model`; instructor names the
    tool, and the description it derives, after the title). Read from the call's compiled schema
    (`engine.core.answer_schema.AnswerSchema.as_sent`): the same object for every call of a stage
    whose schema is known at load (never mutate it)."""
    compiled = call.contract.compiled
    assert compiled is not None
    return compiled.as_sent(call.stage)


def provider_identity(model: str, *, base_url: str | None = None, mode: Any = None,
                      weights: str | os.PathLike[str] | None = None, seed: int | None = None,
                      shape: Any = None) -> ProviderIdentity:
    """The identity of the judge for model string `model` (``provider/name``, or an embedded
    model with its `weights` file). `mode`: instructor's `Mode` (or its value) the judge uses,
    None for the provider's own default."""
    mode_value = "provider-default" if mode is None else str(getattr(mode, "value", mode))
    if weights is not None:
        return ProviderIdentity("local", None, None, mode_value, seed, Path(weights))
    provider, _, name = model.partition("/")
    return ProviderIdentity(provider, name, base_url.rstrip("/") if base_url else None, mode_value, seed,
                            shape=shape)

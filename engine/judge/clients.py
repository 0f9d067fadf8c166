"""Provider clients: the instructor client behind a hosted model string, as a provider judge.

`openai/…` (also any OpenAI-compatible server, through `base_url`), `ollama/…` and
`anthropic/…` get a provider client whose own silent retries are off (the retry layer retries and
counts every one); other providers go through `instructor.from_provider`. The endpoint and mode
come as the judge's settings resolved them (`engine.judge.settings.JudgeSettings.resolved`: the
environment's ``OPENAI_BASE_URL``, ``SCORESPEC_MODE``… already applied); only the API key is read
here when none is given, from the provider's key variable (`engine.core.environment`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core import environment
from .call import MissingCredentials
from .identity import provider_identity
from .model_params import shape_for
from .openai_path import direct_create, http_client
from .provider import InstructorJudge, ProviderTraits
from .settings import OLLAMA_DEFAULT_URL
from .window import WindowCheck, resolve_window


def parse_mode(mode: str) -> Any:
    """instructor's `Mode` from its name or value, any case (``tools``, ``json_schema``,
    ``JSON``, ``md_json``, ``tool_call``). Raises `ValueError` listing the valid names."""
    import instructor

    for member in instructor.Mode:
        if mode.lower() in (member.name.lower(), str(member.value).lower()):
            return member
    from ..core.errors import did_you_mean

    names = [m.name.lower() for m in instructor.Mode]
    hint = did_you_mean(mode.lower(), names) or "e.g. tools, json_schema, json, md_json"
    raise ValueError(f"unknown structured-output mode {mode!r} ({hint})")


def hosted_judge(model: str, *, base_url: str | None = None, api_key: str | None = None, mode: str | None = None,
                 timeout_s: float = 120.0, context_window: int | None = None, family: str | None = None,
                 reasoning_tokens: int | None = None) -> InstructorJudge:
    """The provider judge for a ``provider/model`` string (one try per call; no retries).

    base_url: the endpoint (None: the provider's own API). mode: instructor's structured-output
    mode (None: per provider; `engine.bind.stack.make_judge` gives the resolved one), default per provider
    (a call that wants label probabilities goes to ``openai``/``ollama`` in json_schema mode,
    with ``logprobs``; other providers report none).
    timeout_s: per-request timeout in seconds. context_window: see `engine.judge.window`. family,
    reasoning_tokens: what the model accepts and its reasoning budget (`engine.judge.model_params`:
    the table's family unless `family` names one). The judge makes one client per event loop.
    Raises `ValueError` for a bad mode, window, family or budget, ImportError
    when the provider's package is missing, `engine.judge.call.MissingCredentials` when the
    provider's client refuses to be built without an API key (or endpoint).
    """
    import instructor

    window = WindowCheck(resolve_window(model, context_window), model)
    shape = shape_for(model, family, reasoning_tokens)
    provider, name = model.split("/", 1)
    inst_mode = parse_mode(mode) if mode else None
    if provider in ("openai", "ollama"):
        import openai

        if provider == "ollama":
            base_url = base_url or OLLAMA_DEFAULT_URL
            api_key = api_key or "ollama"
        identity = provider_identity(model, base_url=base_url, mode=inst_mode or instructor.Mode.TOOLS, shape=shape)
        key = api_key or environment.value("OPENAI_API_KEY") or ("not-needed" if base_url else None)

        def build(answer_mode: Any = inst_mode or instructor.Mode.TOOLS) -> Any:
            client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                        http_client=http_client(timeout_s))
            direct_create(client.chat.completions)  # the parameters as given: see engine.judge.openai_path
            return instructor.from_openai(client, mode=answer_mode)

        # token probabilities come only with an answer in the message content, never with tool-call
        # arguments: a call that wants them is sent in json_schema mode unless the mode is one of those
        in_content = {instructor.Mode.JSON_SCHEMA, instructor.Mode.JSON, instructor.Mode.MD_JSON}
        probs_build = None if inst_mode in in_content else (lambda: build(instructor.Mode.JSON_SCHEMA))
        traits = ProviderTraits(name, (key, *environment.api_key_values()), window, identity, logprobs=True,
                                shape=shape)
        return InstructorJudge(_set_up(build), model, traits, client_factory=build, probs_client_factory=probs_build)
    elif provider == "anthropic":
        import anthropic

        key = api_key or environment.value("ANTHROPIC_API_KEY")
        if not _takes_temperature(anthropic):  # the SDK from 1.x has no such parameter
            shape = dataclasses.replace(shape, temperature_taken=False)
        identity = provider_identity(model, base_url=base_url, mode=inst_mode or instructor.Mode.TOOLS, shape=shape)

        def build() -> Any:
            client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)
            return instructor.from_anthropic(client, mode=inst_mode or instructor.Mode.TOOLS)
    else:
        extra: dict[str, Any] = {"async_client": True}
        if base_url:
            extra["base_url"] = base_url
        if api_key:
            extra["api_key"] = api_key

        def build() -> Any:
            return instructor.from_provider(model, mode=inst_mode, **extra)

        # the model name is bound to the client by from_provider
        traits = ProviderTraits(None, (api_key, *environment.api_key_values()), window,
                                provider_identity(model, base_url=base_url, mode=inst_mode))
        return InstructorJudge(_set_up(build), model, traits, client_factory=build)
    traits = ProviderTraits(name, (key, *environment.api_key_values()), window, identity, shape=shape)
    return InstructorJudge(_set_up(build), model, traits, client_factory=build)


def _takes_temperature(anthropic: Any) -> bool:
    """Whether the installed anthropic SDK's ``messages.create`` takes a ``temperature``."""
    import inspect

    try:
        return "temperature" in inspect.signature(anthropic.resources.messages.AsyncMessages.create).parameters
    except (AttributeError, TypeError, ValueError):
        return True


def _set_up(build: Any) -> Any:
    """``build()``, the provider's client; raises `MissingCredentials` when the client refuses
    to be set up without credentials or an endpoint (`_is_missing_credentials`)."""
    try:
        return build()
    except Exception as exc:
        if _is_missing_credentials(exc):
            raise MissingCredentials(f"{type(exc).__name__}: {exc}") from exc
        raise


def _is_missing_credentials(exc: BaseException) -> bool:
    """True for the error a provider's client raises when it is built without what it needs to
    reach the provider: openai's own base `OpenAIError` (raised as itself, never a subclass, only
    for a client without an API key; its subclasses are request failures), and instructor's
    `ConfigurationError` (``from_provider``: an API key or endpoint variable not set)."""
    import sys

    openai = sys.modules.get("openai")
    if openai is not None and type(exc) is openai.OpenAIError:
        return True
    try:
        from instructor.core.exceptions import ConfigurationError
    except ImportError:  # an instructor without it
        return False
    return isinstance(exc, ConfigurationError)


__all__ = ["hosted_judge", "parse_mode"]

"""The OpenAI client as the judge uses it: the fewest CPU cycles per call for the same request.

A judge call's client CPU went mostly to work that gives the same bytes on the wire every time. Measured with cProfile over the throughput benchmark
(faithfulness, 3 calls an item, concurrency 32), the parts this module removes:

- the SDK's request-parameter transform (``async_maybe_transform`` over the ``TypedDict`` of
  ``chat.completions.create``): it walks every message and tool through ``typing`` introspection
  to rename aliased keys and encode files and dates. A judge request has none of those (plain
  strings and JSON Schema dicts), so its body is the parameters as given. `direct_create` posts
  them with the client's documented ``post`` (the SDK's way to call an endpoint by path), keeping
  the client's auth, headers, timeout, error classes and response model (`ChatCompletion`);
- the HTTP stack: when ``aiohttp`` is installed (the ``openai[aiohttp]`` extra, a base dependency
  here), the client sends through the SDK's own aiohttp transport (`http_client`), which costs
  less per request than the default one at any concurrency;
- instructor's check that a response model declares no asynchronous validator, which it repeats
  about seven times a call by walking the class and every base's attributes: for the judge's own
  answer models (`mark_checked`), which are built once per schema and never change, it runs once
  (`check_once`); any other class is checked on every call as before.

Nothing here changes what is sent, what is validated or how failures are classified:
tests compare the bytes a server receives through this path and through ``create``.
"""

from __future__ import annotations

import json
from typing import Any

_CHECKED = "__scorespec_async_checked__"


class UnreadableResponse(ConnectionError):
    """The provider answered with a body that is not valid JSON (a transport failure)."""


# Options of the SDK's create that are request options, not body keys.
_OPTION_KEYS = {"extra_headers": "headers", "extra_query": "params", "extra_body": "extra_json", "timeout": "timeout"}


def direct_create(completions: Any) -> None:
    """Replace ``completions.create`` (an `AsyncCompletions` of an `openai.AsyncOpenAI`) by one that
    posts the parameters as given to ``/chat/completions`` and returns the SDK's `ChatCompletion`.

    Streaming is not used by the judge and goes through the SDK's own create. An unreadable
    response body (`json.JSONDecodeError`, which instructor would re-ask silently) raises
    `UnreadableResponse`, retried and counted by the retry layer."""
    from openai import NOT_GIVEN
    from openai._types import RequestOptions
    from openai.types.chat import ChatCompletion

    client = completions._client
    sdk_create = completions.create
    # the SDK's create asks for the bearer token through ``security`` where its request options
    # have that key (openai 3.x); older clients send it with every request
    auth = {"security": {"bearer_auth": True}} if "security" in RequestOptions.__annotations__ else {}

    async def create(**params: Any) -> Any:
        try:
            if params.get("stream"):
                return await sdk_create(**params)
            options: dict[str, Any] = dict(auth)
            for key, option in _OPTION_KEYS.items():
                value = params.pop(key, NOT_GIVEN)
                if value is not NOT_GIVEN and (value is not None or key == "timeout"):  # as the SDK does
                    options[option] = value
            body = {key: value for key, value in params.items() if value is not NOT_GIVEN}
            return await client.post("/chat/completions", body=body, cast_to=ChatCompletion, options=options)
        except json.JSONDecodeError as exc:
            raise UnreadableResponse(f"the provider's response is not valid JSON: {exc}") from None

    completions.create = create


def http_client(timeout_s: float) -> Any:
    """The SDK's aiohttp-based async HTTP client with its default limits, or None (the SDK's
    default client) when ``aiohttp`` is not installed."""
    try:
        import aiohttp  # noqa: F401  (the SDK's transport needs it)
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient(timeout=timeout_s)
    except (ImportError, RuntimeError):
        return None


def mark_checked(model: type) -> type:
    """Check `model` (a judge answer model) once with instructor's async-validator check, and mark
    it so `check_once` skips the check on later calls."""
    from instructor.v2.validation import async_validators

    async_validators.reject_async_validators(model)
    setattr(model, _CHECKED, True)
    return model


def check_once() -> None:
    """Make instructor's async-validator check skip the classes `mark_checked` marked (idempotent).
    instructor 1.x imports the check into its patch module too; both names are replaced."""
    from instructor.v2.core import patch
    from instructor.v2.validation import async_validators

    original = async_validators.reject_async_validators
    if getattr(original, _CHECKED, False):
        return

    def reject_async_validators(response_model: Any) -> None:
        if not (isinstance(response_model, type) and response_model.__dict__.get(_CHECKED)):
            original(response_model)

    setattr(reject_async_validators, _CHECKED, True)
    async_validators.reject_async_validators = reject_async_validators
    if getattr(patch, "reject_async_validators", None) is original:
        patch.reject_async_validators = reject_async_validators


__all__ = ["UnreadableResponse", "direct_create", "http_client", "mark_checked", "check_once"]

"""The OpenAI client as the judge uses it: the fewest CPU cycles per call for the same request.

A judge call's client CPU went mostly to work that gives the same request every time.
Measured with cProfile over the throughput benchmark (faithfulness, 3 calls an item, concurrency
32), the parts this module removes:

- the SDK's request-parameter transform (``async_maybe_transform`` over the ``TypedDict`` of
  ``chat.completions.create``): it walks every message and tool through ``typing`` introspection
  to rename aliased keys and encode files and dates. A judge request has none of those (plain
  strings and JSON Schema dicts), so its body is the parameters as given (`direct_create`);
- the SDK's request and response objects around those bytes: options models, URL and header
  merging, an httpx request and response over aiohttp, and a response parser walking the
  model's type hints. When the client sends through the SDK's own aiohttp transport
  (`http_client`; ``aiohttp`` comes with the ``openai[aiohttp]`` extra, a base dependency here),
  `WirePost` sends the request through that transport's aiohttp session with the URL, headers
  and timeouts the client itself builds (once per client), and reads the answer into the
  client's own `ChatCompletion` and errors; any other client goes through its documented ``post``;
- instructor's check that a response model declares no asynchronous validator, which it repeats
  about seven times a call by walking the class and every base's attributes: for the judge's own
  answer models (`mark_checked`), which are built once per schema and never change, it runs once
  (`check_once`); any other class is checked on every call as before.

Nothing here changes what is sent, what is validated or how failures are classified: tests
compare the request a server receives through this path and through ``create``, and the errors an
HTTP status, a timeout and a refused connection raise.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

_CHECKED = "__scorespec_async_checked__"


class UnreadableResponse(ConnectionError):
    """The provider answered with a body that is not valid JSON (a transport failure)."""


# Options of the SDK's create that are request options, not body keys.
_OPTION_KEYS = {"extra_headers": "headers", "extra_query": "params", "extra_body": "extra_json", "timeout": "timeout"}


def direct_create(completions: Any) -> None:
    """Replace ``completions.create`` (an `AsyncCompletions` of an `openai.AsyncOpenAI`) by one that
    posts the parameters as given to ``/chat/completions`` and returns the SDK's `ChatCompletion`.

    When the client sends through the SDK's aiohttp transport (`http_client`) and the call has no
    per-request options, the request goes out through `WirePost`; otherwise through the client's
    ``post``. Streaming is not used by the judge and goes through the SDK's own create. A response
    body that is not JSON (broken, or a page such as a proxy's HTML, which instructor would re-ask
    as if the judge had written it) raises `UnreadableResponse`, retried and counted by the retry
    layer, on either path."""
    from openai import NOT_GIVEN
    from openai._types import RequestOptions
    from openai.types.chat import ChatCompletion

    client = completions._client
    sdk_create = completions.create
    # the SDK's create asks for the bearer token through ``security`` where its request options
    # have that key (openai 3.x); older clients send it with every request
    auth = {"security": {"bearer_auth": True}} if "security" in RequestOptions.__annotations__ else {}
    wire = WirePost.for_client(client, auth)

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
            if wire is not None and len(options) == len(auth):
                return checked_completion(await wire.post(body))
            completion = await client.post("/chat/completions", body=body, cast_to=ChatCompletion, options=options)
            if isinstance(completion, str):  # the SDK hands back the text of a body that is not JSON
                raise json.JSONDecodeError("not a JSON document", completion[:200], 0)
            return checked_completion(completion)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UnreadableResponse(f"the provider's response is not valid JSON: {exc}") from None

    completions.create = create


def checked_completion(completion: Any) -> Any:
    """`completion` (the SDK's `ChatCompletion` of an HTTP 200 answer) when it is one: a first
    choice with a message. Else `UnreadableResponse` (a transport failure: retried, counted) whose
    message keeps what the body said (an ``error`` object's message, or the body's start): empty or
    null ``choices``, a choice without a message, an error sent with status 200."""
    choices = getattr(completion, "choices", None)
    first = choices[0] if isinstance(choices, list) and choices else None
    if first is not None and getattr(first, "message", None) is not None:
        return completion
    why = "no choices" if first is None else "a choice without a message"
    try:
        data = completion.model_dump(mode="json", exclude_unset=True, warnings=False)
    except Exception:
        data = {"choices": choices}
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        why = f"an error object: {error.get('message') or error}"
    said = json.dumps(data, ensure_ascii=False, default=str)[:300]
    raise UnreadableResponse(f"the provider answered HTTP 200 with a body that is not a chat completion ({why}); "
                             f"body: {said}")


class WirePost:
    """``POST /chat/completions`` through the aiohttp session of the SDK's aiohttp transport, with
    the URL, headers and timeouts the client itself builds for that request (computed once, by the
    client's own request builder), the body serialised by the SDK's own JSON encoder, and the
    response read into the SDK's `ChatCompletion`, validated by pydantic (the SDK's lenient
    construction for a response the model does not describe). A compressed body is decoded by the
    SDK's own HTTP response (its decoders, its reading of ``Content-Encoding``), so the encodings
    asked for and understood are the client's. The SDK's errors are kept: a status
    outside 2xx raises the client's own `APIStatusError` subclass for it (made by the client from
    the response), a timeout `openai.APITimeoutError`, any other failure to connect or read
    `openai.APIConnectionError`.

    What this skips, per call, is the SDK's request machinery around that same request (options
    models, URL merging, header merging, the httpx request and response objects over aiohttp,
    and its response parser walking the model's type hints)."""

    def __init__(self, client: Any, template: Any, session_owner: Any):
        from openai.types.chat import ChatCompletion

        self._client = client
        self._template = template  # the client's own request for this endpoint (an httpx Request)
        self._owner = session_owner  # the SDK's aiohttp transport, which owns and closes the session
        self.url = str(template.url)
        self.headers = {k: v for k, v in template.headers.items() if k.lower() != "content-length"}
        self._completion = ChatCompletion
        self._timeout: Any = None

    @classmethod
    def for_client(cls, client: Any, auth: dict[str, Any]) -> WirePost | None:
        """The short path for `client` (an `openai.AsyncOpenAI`), or None when it does not send
        through the SDK's aiohttp transport for this endpoint (another HTTP client, a proxy from
        the environment), or builds headers that change per request (an API key provider, an
        idempotency key)."""
        try:
            from openai._models import FinalRequestOptions
            from openai._vendor.httpx_aiohttp.transport import AiohttpTransport
        except ImportError:
            return None
        if getattr(client, "_api_key_provider", None) is not None or getattr(client, "_idempotency_header", None):
            return None  # a key or an idempotency key that changes per request: the client builds each one
        options = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data={}, **auth)
        try:
            template = client._build_request(options)
        except Exception:  # a key or header the client cannot send: its own path says so on each call
            return None
        http = client._client
        transport_for = getattr(http, "_transport_for_url", None)
        transport = transport_for(template.url) if transport_for else None
        if not isinstance(transport, AiohttpTransport) or transport.proxy is not None:
            return None  # another transport, or a proxy (the SDK's transport sends through it)
        return cls(client, template, transport)

    def _session(self) -> Any:
        import aiohttp

        owner = self._owner
        if not isinstance(owner.client, aiohttp.ClientSession):
            owner.client = owner.get_client()
        if self._timeout is None:
            limits = self._template.extensions.get("timeout", {})
            # total: a deadline on the whole request, so a server sending a byte at a time cannot
            # hold a call past the timeout (sock_read bounds only each read)
            self._timeout = aiohttp.ClientTimeout(sock_connect=limits.get("connect"), sock_read=limits.get("read"),
                                                  connect=limits.get("pool"), total=limits.get("read"))
        return owner.client

    async def post(self, body: dict[str, Any]) -> Any:
        """The `ChatCompletion` the server answered `body` with; raises the SDK's errors as above,
        `json.JSONDecodeError` for a body that is not JSON."""
        import aiohttp
        import openai
        from openai._utils._json import openapi_dumps

        session = self._session()
        try:
            # the body as sent: the client's own decoder reads a compressed one below, as it would
            async with session.post(self.url, data=openapi_dumps(body), headers=self.headers, timeout=self._timeout,
                                    auto_decompress=False) as response:
                content = await response.read()
                status, raw_headers = response.status, response.raw_headers
                encoded = response.headers.get("Content-Encoding", "identity").strip().lower() != "identity"
        except asyncio.TimeoutError:
            raise openai.APITimeoutError(request=self._template) from None
        except Exception as exc:  # as the SDK: any other failure to send or to read is a connection error
            raise openai.APIConnectionError(request=self._template) from exc
        if encoded or not 200 <= status < 300:
            try:
                response = self._response(status, raw_headers, content)  # decodes the body as the SDK's client
            except Exception as exc:  # a body that does not decode as its Content-Encoding says
                raise openai.APIConnectionError(request=self._template) from exc
            if not 200 <= status < 300:
                raise self._client._make_status_error_from_response(response)
            content = response.content
        return self._parse(json.loads(content))

    def _parse(self, data: Any) -> Any:
        from pydantic import ValidationError

        try:
            return self._completion.model_validate(data)
        except ValidationError:  # a field the model does not allow: the SDK's own lenient reading
            from openai._models import construct_type

            return construct_type(type_=self._completion, value=data)

    def _response(self, status: int, raw_headers: Any, content: bytes) -> Any:
        """The SDK's httpx response for a status, headers and body as received (read, so decoded as
        its ``Content-Encoding`` says, by the decoders the SDK's client itself uses)."""
        models = sys.modules[type(self._template).__module__]  # the SDK's httpx: Request, Response
        return models.Response(status, headers=list(raw_headers), content=content, request=self._template)


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


__all__ = ["UnreadableResponse", "WirePost", "checked_completion", "direct_create", "http_client", "mark_checked", "check_once"]

"""Seeded fault injection for `FakeOpenAIServer`: a reply callable that answers most requests
from a function and replaces a share of them with faults, by kind, at given rates.

    injector = FaultInjector(answer, {"rate_limit": 0.04, "server_error_500": 0.015}, seed=7)
    with FakeOpenAIServer(injector) as server:
        ...
    injector.injected            # Counter: kind -> faults sent

The draw for a request depends only on the seed, the request's content (model, messages
without the server's tool-call ids, tools) and how many times that same content was sent before, never on arrival order, so a
concurrent run is reproducible: the same seed injects the same faults into the same calls.
A retry of a faulted call (same content) gets a fresh draw.

Fault kinds (`KINDS`), as a provider would misbehave:

- ``rate_limit``: HTTP 429 with ``Retry-After`` (`retry_after_s`); ``rate_limit_no_retry_after``:
  429 without it.
- ``server_error_500``, ``bad_gateway_502``, ``unavailable_503``: HTTP 5xx.
- ``reset``: the connection closed without a response.
- ``timeout``: the answer comes `timeout_delay_s` late (set it above the client's timeout).
- ``unreadable_body``: HTTP 200 whose body is not JSON.
- ``malformed_json``: the answer's JSON text is broken off halfway, yet ``finish_reason`` is
  stop (a model's own malformed output, not a token limit).
- ``wrong_shape``: valid JSON that does not fit the stage's schema.
- ``truncated``: the answer cut off by the token limit (``finish_reason`` length).
- ``refusal``: a plain-text refusal instead of the structured answer.
"""

from __future__ import annotations

import collections
import hashlib
import json
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .fake_replies import Fault

__all__ = ["FaultInjector", "KINDS"]

KINDS = (
    "rate_limit", "rate_limit_no_retry_after", "server_error_500", "bad_gateway_502", "unavailable_503",
    "reset", "timeout", "unreadable_body", "malformed_json", "wrong_shape", "truncated", "refusal",
)

REFUSAL = "I'm sorry, but I can't help with that request."


def _messages(messages: Any) -> Any:
    """The messages without the ids the server made up (tool-call ids, which a re-ask echoes
    and which follow arrival order): what the judge was asked, nothing else."""
    if not isinstance(messages, list):
        return messages
    kept = []
    for m in messages:
        if not isinstance(m, dict):
            kept.append(m)
            continue
        calls = [c.get("function") if isinstance(c, dict) else c for c in m.get("tool_calls") or ()]
        kept.append([m.get("role"), m.get("content"), calls])
    return kept


class FaultInjector:
    """A thread-safe ``reply(request) -> reply`` for `FakeOpenAIServer`.

    answer: ``request -> reply`` giving the healthy answer (a JSON value). rates: kind → share
    of requests in [0, 1] (their sum ≤ 1); unknown kinds raise `ValueError`. seed: any int.
    retry_after_s: the ``Retry-After`` of ``rate_limit`` (seconds). timeout_delay_s: how late a
    ``timeout`` answer comes. `enabled` may be switched off to let every request through.

    Attributes: ``injected`` (Counter kind → faults sent), ``requests`` (requests seen).
    """

    def __init__(self, answer: Callable[[dict], Any], rates: Mapping[str, float], *, seed: int = 0,
                 retry_after_s: float = 0.05, timeout_delay_s: float = 2.0):
        unknown = sorted(set(rates) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; expected some of: {', '.join(KINDS)}")
        if any(not 0 <= r <= 1 for r in rates.values()) or sum(rates.values()) > 1:
            raise ValueError("fault rates must lie in [0, 1] and sum to at most 1")
        self.answer = answer
        self.rates = {k: float(rates[k]) for k in KINDS if rates.get(k)}
        self.seed = seed
        self.retry_after_s = retry_after_s
        self.timeout_delay_s = timeout_delay_s
        self.enabled = True
        self.injected: collections.Counter[str] = collections.Counter()
        self.requests = 0
        self._seen: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def draw(self, request: dict) -> str | None:
        """The fault kind for this request (None: answer normally); counts it."""
        content = json.dumps([request.get("model"), _messages(request.get("messages")), request.get("tools")],
                             sort_keys=True)
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
        with self._lock:
            self.requests += 1
            n = self._seen[digest]
            self._seen[digest] += 1
            if not self.enabled:
                return None
            u = random.Random(f"{self.seed}:{digest}:{n}").random()
            for kind, rate in self.rates.items():
                if u < rate:
                    self.injected[kind] += 1
                    return kind
                u -= rate
        return None

    def __call__(self, request: dict) -> Any:
        kind = self.draw(request)
        if kind is None:
            return self.answer(request)
        if kind == "rate_limit":
            return Fault.status(429, retry_after=self.retry_after_s)
        if kind == "rate_limit_no_retry_after":
            return Fault.status(429)
        if kind in ("server_error_500", "bad_gateway_502", "unavailable_503"):
            return Fault.status(int(kind[-3:]))
        if kind == "reset":
            return Fault.reset()
        if kind == "timeout":
            return Fault.delay(self.timeout_delay_s, then=self.answer)
        if kind == "unreadable_body":
            return Fault.malformed_body()
        if kind == "malformed_json":
            text = json.dumps(self.answer(request))
            return Fault.invalid_json(text[: max(1, len(text) // 2)])
        if kind == "wrong_shape":
            return {"result": "done", "items": [1, 2, 3]}
        if kind == "truncated":
            return Fault.truncated(self.answer(request))
        return REFUSAL  # refusal

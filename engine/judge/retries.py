"""The transport-retry layer: a try that could not reach the judge is made again, and counted.

`RetryingJudge` repeats a call whose inner judge raised `TransportFailure` (429, 5xx, timeouts,
resets, unreadable bodies), up to `RetryPolicy.max_retries` times, waiting as the server's
``Retry-After`` says or else with exponential backoff and jitter (tenacity). The answer's usage
sums every try: ``calls`` and tokens of the failed tries too, ``transport_retries`` the repeats,
``reasks`` only the last try's (re-asks of invalid answers happen inside a try, apart).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..core.errors import ScorerRunError
from ..core.result import Usage
from .call import Judge, JudgeAnswer, JudgeCall, JudgeLayer, TransportFailure


@dataclass
class RetryPolicy:
    """Transport retry policy: up to `max_retries` retries after the first try; waits of
    base_s × 2^n seconds (n = 0 for the first retry), jittered to between half and all of it and
    capped at max_wait_s, or the server's Retry-After (capped at max_wait_s). max_total_wait_s:
    the most a call waits between its tries in all (seconds); a call whose next wait would pass it
    gives up then, saying so, instead of waiting out a long Retry-After try after try."""

    max_retries: int = 4
    base_s: float = 0.5
    max_wait_s: float = 30.0
    max_total_wait_s: float = 60.0

    def waited_enough(self, retry_state: RetryCallState) -> bool:
        """Whether the next wait would take the call past `max_total_wait_s` (a tenacity stop)."""
        upcoming = getattr(retry_state, "upcoming_sleep", 0.0) or 0.0
        return retry_state.idle_for + upcoming > self.max_total_wait_s

    def wait(self, retry_state: RetryCallState) -> float:
        """Seconds to wait before the next try (a tenacity wait strategy)."""
        failure = retry_state.outcome.exception() if retry_state.outcome is not None else None
        told = getattr(failure, "retry_after", None)
        if told is not None:
            return min(float(told), self.max_wait_s)
        backoff = wait_exponential(multiplier=self.base_s, max=self.max_wait_s)(retry_state)
        return backoff * random.uniform(0.5, 1.0)


class RetryingJudge(JudgeLayer):
    """Repeats the inner judge's `TransportFailure`s under `policy`. Raises `ScorerRunError` of
    kind ``transport`` ("could not be reached after N tries") when the retries run out; any
    other failure passes through at once, with the usage of every try attached. `sleep` waits
    (asyncio.sleep; a test may record the waits instead). The first try is made directly: the
    retry machinery is set up only once it fails (nearly every call succeeds at once)."""

    def __init__(self, inner: Judge, policy: RetryPolicy | None = None, *,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        super().__init__(inner)
        self.policy = policy or RetryPolicy()
        self._sleep = sleep

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        try:
            return _retried(await self.inner.ask(call), Usage(), 1)
        except TransportFailure as exc:
            first = exc
        except ScorerRunError as exc:
            raise _total(exc, _spent(exc), 1) from None
        return await self._retry(call, first)

    async def _retry(self, call: JudgeCall, first: TransportFailure) -> JudgeAnswer:
        """Tries 2 and on, after the first try failed with `first`."""
        spent = _spent(first)  # the failed tries, summed
        tries = 1
        waits: list[float] = []

        async def sleep(seconds: float) -> None:  # a wait between tries is part of the call's time
            spent.seconds += seconds
            await self._sleep(seconds)

        retrying = AsyncRetrying(stop=stop_after_attempt(self.policy.max_retries + 1) | _recorded(self.policy, waits),
                                 wait=self.policy.wait,
                                 retry=retry_if_exception_type(TransportFailure), sleep=sleep, reraise=True)
        try:
            async for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number == 1:
                        raise first  # the try already made: tenacity waits after it as after any other
                    tries += 1
                    try:
                        answer = await self.inner.ask(call)
                    except ScorerRunError as exc:
                        spent.add(_usage_of(exc))
                        raise
        except TransportFailure as exc:  # the last try failed too
            if waits:  # stopped by the cap on the total wait
                exc.message += (f" (gave up before a wait of {waits[0]:.0f} s: a call waits at most "
                                f"{self.policy.max_total_wait_s:g} s in all between its tries)")
            raise _given_up(exc, call, spent, tries) from None
        except ScorerRunError as exc:
            raise _total(exc, spent, tries) from None
        return _retried(answer, spent, tries)


def _recorded(policy: RetryPolicy, waits: list[float]) -> Any:
    """A tenacity stop: `policy.waited_enough`, the wait it refused recorded in `waits`."""
    from tenacity.stop import stop_base

    class _Cap(stop_base):
        def __call__(self, retry_state: RetryCallState) -> bool:
            if policy.waited_enough(retry_state):
                waits.append(getattr(retry_state, "upcoming_sleep", 0.0) or 0.0)
                return True
            return False

    return _Cap()


def _usage_of(exc: ScorerRunError) -> Usage:
    """The usage of a failed try (its calls at least)."""
    return exc.usage if exc.usage is not None else Usage(calls=exc.attempts)


def _spent(exc: ScorerRunError) -> Usage:
    """A new total holding the usage of a failed try."""
    spent = Usage()
    spent.add(_usage_of(exc))
    return spent


def _given_up(exc: TransportFailure, call: JudgeCall, spent: Usage, tries: int) -> ScorerRunError:
    message = f"the judge could not be reached after {tries} tries: {exc.message}"
    return _total(ScorerRunError("transport", message, stage=exc.stage or call.stage), spent, tries)


def _retried(answer: JudgeAnswer, spent: Usage, tries: int) -> JudgeAnswer:
    """`answer` with the usage of the failed tries before it added."""
    usage = answer.usage
    usage.calls += spent.calls
    usage.tokens_in += spent.tokens_in
    usage.tokens_out += spent.tokens_out
    usage.reasoning_tokens += spent.reasoning_tokens
    usage.unreported += spent.unreported
    usage.seconds += spent.seconds
    usage.transport_retries = tries - 1
    answer.attempts += spent.calls
    return answer


def _total(exc: ScorerRunError, spent: Usage, tries: int) -> ScorerRunError:
    """`exc` with the usage of every try: the calls and tokens summed, the last try's re-asks."""
    last = exc.usage if exc.usage is not None and exc.usage is not spent else None
    usage = Usage(calls=spent.calls, tokens_in=spent.tokens_in, tokens_out=spent.tokens_out, seconds=spent.seconds,
                  reasks=last.reasks if last is not None else 0, transport_retries=tries - 1,
                  reasoning_tokens=spent.reasoning_tokens, unreported=spent.unreported)
    exc.usage = usage
    exc.attempts = spent.calls
    return exc


__all__ = ["RetryPolicy", "RetryingJudge"]

"""The rate-limit layer: judge calls start at most `rate` per second, whoever makes them.

`RateLimitedJudge` takes a token from a `RateLimiter` before each call it passes on. One limiter
may be shared by several judges (a batch run shares one across its scorers). A call's re-asks and
transport retries happen below this layer and take no token of their own.
"""

from __future__ import annotations

import asyncio
import time

from .call import Judge, JudgeAnswer, JudgeCall, JudgeLayer


class RateLimiter:
    """An async token bucket: `acquire()` returns when a request may start, at most `rate`
    per second on average, bursts up to `burst` (default: max(1, rate)). Raises `ValueError`
    for a rate that is not > 0."""

    def __init__(self, rate: float, burst: float | None = None):
        if not rate > 0:
            raise ValueError(f"rate limit must be > 0 requests/s, not {rate!r}")
        self.rate = float(rate)
        self.capacity = float(burst) if burst else max(1.0, self.rate)
        self._tokens = self.capacity
        self._updated = time.monotonic()
        self._lock: asyncio.Lock | None = None

    async def acquire(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            while True:
                now = time.monotonic()
                self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
                self._updated = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return
                await asyncio.sleep((1.0 - self._tokens) / self.rate)

    def __repr__(self) -> str:
        return f"RateLimiter(rate={self.rate:g}, burst={self.capacity:g})"


class RateLimitedJudge(JudgeLayer):
    """A judge whose every `ask` first takes a token from `limiter`."""

    def __init__(self, inner: Judge, limiter: RateLimiter):
        super().__init__(inner)
        self.limiter = limiter

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        await self.limiter.acquire()
        return await self.inner.ask(call)


__all__ = ["RateLimiter", "RateLimitedJudge"]

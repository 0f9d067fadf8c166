"""Calls in flight across machines: with a shared cache, one process asks a call, the rest wait.

The cache layer makes identical calls in flight at once in one event loop once
(`engine.judge.cache.layer`). Between processes — the actors of a Ray run, several CI runners —
a cache shared by all of them (Redis) does the same with a *lease* per call: `claim_or_wait`
takes the call's lease, or, while another process holds it, waits (polling with growing pauses)
until that process's answer is stored (a hit) or the lease is gone (that process failed or died:
this one claims the call and asks). An answer stored by the time the lease is taken is a hit too
(its holder may have finished between this process's last look and its claim). A holder renews its lease while the call goes on and releases
it once the answer is stored (`Lease`), so a lease outlives no process by more than `LEASE_S`.

A cache takes part when it has ``claim(key, seconds) -> bool``, ``renew(key, seconds)`` and
``release(key)`` (`engine.judge.cache.redis_backend.RedisJudgeCache` has them; the SQLite file, one
machine's, does not need them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from ..call import JudgeAnswer

__all__ = ["LEASE_S", "Lease", "claim_or_wait", "takes_leases"]

#: Seconds a lease lasts unless renewed (renewed every third of it while its call goes on).
LEASE_S = 30.0
#: The first and the longest pause between two looks at a call another process is asking.
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.01, 0.25


def takes_leases(cache: Any) -> bool:
    """Whether `cache` coordinates calls in flight between processes (see the module docstring)."""
    return all(callable(getattr(cache, name, None)) for name in ("claim", "renew", "release"))


class Lease:
    """The lease this process holds on a call's key: renewed in the background until `end`."""

    def __init__(self, cache: Any, key: str):
        self.cache = cache
        self.key = key
        self._renewing = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(LEASE_S / 3)
            await asyncio.to_thread(self.cache.renew, self.key, LEASE_S)

    async def end(self) -> None:
        """Stop renewing and release the lease (the call's answer, if any, is stored by now)."""
        self._renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._renewing
        with contextlib.suppress(Exception):  # a cache never fails a call: a lease left behind expires
            await asyncio.to_thread(self.cache.release, self.key)


async def claim_or_wait(cache: Any, key: str,
                        stored: Callable[[], JudgeAnswer | None]) -> tuple[JudgeAnswer | None, Lease | None]:
    """(a stored answer, None) once another process's answer to `key` is stored and serves this
    call (`stored()` gives it, or None), or (None, a `Lease`) when this process is to ask: it
    holds the lease (end it after storing the answer), or the cache cannot coordinate."""
    pause = FIRST_PAUSE_S
    while True:
        try:
            held = await asyncio.to_thread(cache.claim, key, LEASE_S)
        except Exception:  # a cache never fails a call: ask, uncoordinated
            return None, None
        if held:
            answer = stored()  # stored by a holder that finished after this process last looked?
            if answer is None:
                return None, Lease(cache, key)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(cache.release, key)
            return answer, None
        await asyncio.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE_S)
        answer = stored()
        if answer is not None:
            return answer, None

"""The cache layer: a judge call already answered is served from the judge-call cache.

`CachedJudge` sits above the rate limit (the order is `engine.judge.stack.LAYERS`),
so a hit takes no token and makes no request. For each call it computes the key from the
provider judge's `engine.judge.identity.ProviderIdentity` and the call (`CallIdentity`: provider,
model or weights' SHA-256, base URL, structured-output mode, messages, schema as sent,
temperature, max tokens, seed, the call's sample index), then:

- **hit**: the stored answer is validated again with the call's contract (its *current* schema
  and checks). If it passes it is the answer: ``attempts`` 0, usage ``cache_hits`` 1, no calls,
  no tokens. If it no longer passes, the call is a miss. A call that asks for label
  probabilities (a key of its own) is served only an entry that holds them, with them; an entry
  without them is a miss.
- **miss**: the judge below is asked; its answer (only a validated answer is ever returned, so
  failures, refusals and cut-off answers are never stored) is stored under the key, replacing
  any earlier one; usage ``cache_misses`` 1. With `refresh`, an answer stored before the layer
  was made is never served: every call is asked again once and its entry overwritten (answers
  given since, e.g. to an identical call of another item, are served).
- **single flight**: identical calls (one key, one cache) in flight at once in one event loop are
  made once; the others wait and take its answer (validated with their own contract: a hit), or
  ask again if it failed. With a cache shared between machines (Redis), the same holds between
  processes: one holds the call's lease and asks, the others wait for its stored answer
  (`engine.judge.cache.lease`).

A cache problem never fails an item: the store reports its own failures once and then acts empty
(`engine.judge.cache.sqlite_backend`, `engine.judge.cache.redis_backend`); anything else that goes wrong here (a key that cannot be
computed, weights that cannot be read, a cache object that raises) is reported once as a
`JudgeCacheWarning`, and the layer then passes every call through uncached. A judge without a
provider identity (a test double, a user's own judge) passes through uncached.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import time
import warnings
import weakref

from ...core import environment
from ...core.errors import ScorerRunError
from ...core.result import Usage
from ..call import Judge, JudgeAnswer, JudgeCall, JudgeLayer
from .base import CachedAnswer, JudgeCache, JudgeCacheWarning
from .lease import claim_or_wait, takes_leases

__all__ = ["CACHE_URL_VARIABLE", "CacheSetting", "CachedJudge", "open_cache"]

#: What the ``cache=`` arguments accept: True (the default cache, see `open_cache`), a file path,
#: a Redis URL, a `JudgeCache` object, or False / None (no cache).
CacheSetting = bool | str | os.PathLike | JudgeCache | None

#: The environment variable naming a shared (Redis) cache: ``cache=True`` and the CLI use it
#: before the default SQLite file.
CACHE_URL_VARIABLE = "SCORESPEC_CACHE_URL"

# calls in flight, per event loop: (id of the cache, key) → the future the waiting calls share
_FLIGHTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Future]] = \
    weakref.WeakKeyDictionary()

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def open_cache(setting: CacheSetting) -> JudgeCache | None:
    """The cache a ``cache=`` argument names (nothing is opened or reached yet: that happens on
    first use):

    - False or None: no cache;
    - True: the default cache, ``$SCORESPEC_CACHE_URL`` (a Redis URL) when set, else the SQLite
      file `engine.judge.cache.base.default_cache_path()` (``$SCORESPEC_CACHE_DB``, …);
    - a ``redis://`` or ``rediss://`` URL (``redis://host:6379/0?ttl=30d``): the Redis cache
      (`engine.judge.cache.redis_backend.RedisJudgeCache`);
    - any other text or path: the SQLite cache in that file;
    - a `JudgeCache` object: itself.

    Raises TypeError for anything else; ValueError for a URL of another scheme or a bad Redis URL
    (naming ``$SCORESPEC_CACHE_URL`` when it came from there); ImportError for a Redis URL when
    the redis client is not installed."""
    if setting is None or setting is False:
        return None
    if setting is True:
        url = environment.value(CACHE_URL_VARIABLE)
        if url:
            try:
                return _open_url(url)
            except ValueError as exc:
                raise ValueError(f"${CACHE_URL_VARIABLE}: {exc}") from None
        from .base import default_cache_path

        setting = default_cache_path()
    if isinstance(setting, str) and _URL.match(setting):
        return _open_url(setting)
    if isinstance(setting, (str, os.PathLike)):
        from .sqlite_backend import SQLiteJudgeCache

        return SQLiteJudgeCache(setting)
    if isinstance(setting, JudgeCache):
        return setting
    raise TypeError(f"cache: expected True, False, a file path, a Redis URL or a JudgeCache, "
                    f"not {type(setting).__name__}")


def _open_url(url: str) -> JudgeCache:
    from .redis_backend import URL_SCHEMES, RedisJudgeCache, masked_url

    scheme = url.split("://", 1)[0].lower() if _URL.match(url) else ""
    if scheme not in URL_SCHEMES:
        raise ValueError(f"cache {masked_url(url)}: a cache URL starts with redis:// or rediss:// "
                         "(a SQLite cache is a file path)")
    return RedisJudgeCache(url)


class _Switch:
    """Whether a layer (and its copies) still uses the cache; set off once, with one warning."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.made = time.time()


class CachedJudge(JudgeLayer):
    """`inner` whose answers are kept in `cache` (see the module docstring). `refresh`: serve no
    answer stored before this layer was made; ask again and overwrite. Raises what `inner`
    raises; never raises for a cache problem."""

    def __init__(self, inner: Judge, cache: JudgeCache, *, refresh: bool = False, _switch: _Switch | None = None):
        super().__init__(inner)
        self.cache = cache
        self.refresh = refresh
        self.identity = getattr(self.provider, "cache_identity", None)
        self._switch = _switch or _Switch()
        # answers older than this are not served (epoch seconds): with refresh, those from before
        self._served_since = self._switch.made if refresh else float("-inf")

    def __repr__(self) -> str:
        return f"CachedJudge({self.inner!r}, cache={self.cache!r}{', refresh=True' if self.refresh else ''})"

    @property
    def active(self) -> bool:
        """True when calls are looked up and stored (a provider identity, the cache usable)."""
        return self.identity is not None and self._switch.reason is None \
            and getattr(self.cache, "disabled_reason", None) is None

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        if not self.active:
            return await self.inner.ask(call)
        try:
            if self.identity.needs_hash:  # the weights' first hash reads the file: off the loop
                await asyncio.to_thread(self.identity.model_identity)
            key = self.identity.call_identity(call).key()
        except Exception as exc:
            self._turn_off(f"cannot compute a call's key ({type(exc).__name__}: {exc})")
            return await self.inner.ask(call)
        hit = self._fresh(call, key)
        if hit is not None:
            return hit
        return await self._ask_once(call, key)

    async def _ask_once(self, call: JudgeCall, key: str) -> JudgeAnswer:
        """Ask `inner`, unless an identical call is in flight: then take its answer."""
        flights = _FLIGHTS.setdefault(asyncio.get_running_loop(), {})
        slot = (id(self.cache), key)
        lead = True
        while (pending := flights.get(slot)) is not None:
            shared = await asyncio.shield(pending)
            if shared is None:
                continue  # it failed: this call asks, unless another waiter already does
            hit = _served(call, CachedAnswer(copy.deepcopy(shared.data), shared.raw,
                                             answer_probs=copy.deepcopy(shared.answer_probs)))
            if hit is not None:
                return hit
            lead = False  # its answer fails this call's checks: ask for this call alone
            break
        future: asyncio.Future | None = None
        if lead:
            future = flights[slot] = asyncio.get_running_loop().create_future()
        answer: JudgeAnswer | None = None
        try:
            answer = await (self._ask_leased(call, key) if lead else self._ask_and_keep(call, key))
            return answer
        finally:
            if future is not None:
                if flights.get(slot) is future:
                    del flights[slot]
                future.set_result(None if answer is None else CachedAnswer(answer.data, answer.raw,
                                                                           answer_probs=answer.answer_probs))

    async def _ask_leased(self, call: JudgeCall, key: str) -> JudgeAnswer:
        """`_ask_and_keep`, unless another process sharing the cache is asking the same call
        (`engine.judge.cache.lease`): then its answer, once stored (a hit)."""
        if not takes_leases(self.cache) or not self.active:
            return await self._ask_and_keep(call, key)
        answer, lease = await claim_or_wait(self.cache, key, lambda: self._fresh(call, key))
        if answer is not None:
            return answer
        try:
            return await self._ask_and_keep(call, key)
        finally:
            if lease is not None:
                await lease.end()

    async def _ask_and_keep(self, call: JudgeCall, key: str) -> JudgeAnswer:
        """Ask `inner` (a miss) and store its answer under `key`."""
        try:
            answer = await self.inner.ask(call)
        except ScorerRunError as exc:
            if exc.usage is None:
                exc.usage = Usage(calls=exc.attempts)
            exc.usage.cache_misses += 1
            raise
        answer.usage.cache_misses += 1
        await self._put(key, answer)
        return answer

    def _fresh(self, call: JudgeCall, key: str) -> JudgeAnswer | None:
        """The stored answer to `call` as a hit, when there is one this layer may serve."""
        entry = self._get(key)
        if entry is None or entry.created_at < self._served_since:
            return None
        return _served(call, entry)

    def _get(self, key: str) -> CachedAnswer | None:
        try:
            return self.cache.get(key)
        except Exception as exc:
            self._turn_off(f"cannot be read ({type(exc).__name__}: {exc})")
            return None

    async def _put(self, key: str, answer: JudgeAnswer) -> None:
        entry = CachedAnswer(answer.data, answer.raw, tokens_in=answer.usage.tokens_in,
                             tokens_out=answer.usage.tokens_out, model=self.model, answer_probs=answer.answer_probs)
        try:  # a write may wait for another process's transaction: off the loop
            await asyncio.to_thread(self.cache.put, key, entry)
        except ValueError:
            pass  # not storable (`encode_entry`): the next run asks again
        except Exception as exc:
            self._turn_off(f"cannot be written ({type(exc).__name__}: {exc})")

    def _turn_off(self, reason: str) -> None:
        if self._switch.reason is None:
            self._switch.reason = reason
            where = getattr(self.cache, "location", None) or getattr(self.cache, "path", self.cache)
            message = f"judge cache {where} {reason}; going on without the cache"
            try:
                warnings.warn(JudgeCacheWarning(message), stacklevel=3)
            except Warning:  # warnings turned into errors: a cache problem still never fails an item
                pass


def _served(call: JudgeCall, entry: CachedAnswer | None) -> JudgeAnswer | None:
    """`entry` as the answer to `call` when it passes the call's contract now (and holds label
    probabilities when the call asks for them), else None."""
    if entry is None or (call.probabilities and entry.answer_probs is None):
        return None
    try:
        data = call.validate(entry.data)
    except Exception:
        return None
    return JudgeAnswer(data, entry.raw, attempts=0, usage=Usage(cache_hits=1),
                       answer_probs=copy.deepcopy(entry.answer_probs) if call.probabilities else None)

"""The judge-call cache on a Redis server (`RedisJudgeCache`): one cache for every machine that
reaches the server — a team's laptops and CI runners, the nodes of a cluster. Needs the `redis`
client (``pip install 'scorespec[redis]'``).

Layout: one hash per answer, every key under a prefix (``scorespec:judge:`` by default), so that
nothing else in the database is ever read, changed or deleted::

    {prefix}{key}   hash: value (`encode_entry`: JSON naming its key), checksum (SHA-256 of
                    value), model (`CachedAnswer.model`), created_at (epoch seconds, text)
    {prefix}lease:{key}  string: the token of the cache object asking that call now (it expires)

Calls in flight: a shared cache lets one machine ask a call while the others wait for its answer
(`engine.judge.cache.lease`): `claim` takes the call's lease (SET NX with an expiry), `renew`
extends it while the call goes on, `release` gives it up (both only when this object holds it).

Writes: a put replaces the whole hash in one MULTI/EXEC transaction (and sets its time to live
when the cache has one), so a reader sees the old entry or the new one, never a mix. Reads:
every value is checked against its checksum; a value that does not match, does not parse,
names another key or is not a hash is a miss, never served, and is deleted unless another writer
replaced it meanwhile (a server-side script compares first). `stats` and `clear` walk the prefix
with SCAN, never KEYS (which blocks a big database); `clear` tests each entry's model and age on
the server, in one script per batch, so a newer answer stored meanwhile is not deleted on the
strength of the old one's age.

Faults: the client connects on first use, with short timeouts (`DEFAULT_CONNECT_TIMEOUT_S`,
`DEFAULT_SOCKET_TIMEOUT_S`) and one immediate retry of a command whose connection broke (an idle
connection the server closed). A server that cannot be reached, stops answering or refuses a
command is reported once (`JudgeCacheWarning`; `disabled_reason` says why) and the cache then
behaves as empty and drops writes for the rest of its life: a dead server costs a run one timeout,
never a failed item. The client's connections are per process (a forked child opens its own).
"""

from __future__ import annotations

import logging
import math
import re
import secrets
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import CachedAnswer, CacheStats, JudgeCacheWarning, decode_entry, encode_entry, parse_duration

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # pragma: no cover - the optional extra is not installed
    redis = None

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_PREFIX", "DEFAULT_SOCKET_TIMEOUT_S", "URL_SCHEMES",
           "RedisJudgeCache", "masked_url"]

#: The URL schemes of a Redis cache (``rediss`` is Redis over TLS).
URL_SCHEMES = ("redis", "rediss")
#: Where entries live in the database unless told otherwise (``?prefix=`` or `prefix=`).
DEFAULT_PREFIX = "scorespec:judge:"
#: Seconds to wait for a connection to the server.
DEFAULT_CONNECT_TIMEOUT_S = 1.0
#: Seconds to wait for the server's reply to a command.
DEFAULT_SOCKET_TIMEOUT_S = 1.0
#: Keys asked of SCAN (and handled by one script or pipeline) at a time in `stats` and `clear`.
BATCH = 500

_log = logging.getLogger(__name__)

# Delete KEYS[1] if it still holds the bad value just read (ARGV[1]; ARGV[2] = '1': it had no
# value field), or if it is not a hash at all. Returns the number of keys deleted.
_DELETE_IF_UNCHANGED = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'hash' then return redis.call('DEL', KEYS[1]) end
local value = redis.call('HGET', KEYS[1], 'value')
if (value == false and ARGV[2] == '1') or value == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# Extend KEYS[1]'s expiry to ARGV[2] ms / delete it, only while it holds this object's token ARGV[1].
_RENEW_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# Delete those of KEYS created before ARGV[2] (when ARGV[1] = '1') and whose model is ARGV[4]
# (when ARGV[3] = '1'); with neither filter, every key. Returns the number of keys deleted.
_CLEAR_BATCH = """
local by_age, cutoff, by_model, model = ARGV[1] == '1', tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4]
local deleted = 0
for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  local drop = false
  if kind == 'hash' then
    local fields = redis.call('HMGET', key, 'model', 'created_at')
    local created = nil
    if fields[2] then created = tonumber(fields[2]) end
    drop = (not by_age or (created ~= nil and created < cutoff)) and (not by_model or fields[1] == model)
  elseif kind ~= 'none' then
    drop = not by_age and not by_model
  end
  if drop then deleted = deleted + redis.call('DEL', key) end
end
return deleted
"""


def masked_url(url: str) -> str:
    """`url` with its password (if any) shown as ``***``: what messages and `stats` show."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    except ValueError:
        return "<an unreadable URL>"


def _glob_escaped(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: a finite number of seconds > 0 is needed, got {value!r}")
    return float(value)


class RedisJudgeCache:
    """The judge-call cache on the Redis server of `url` (``redis://[[user]:password@]host[:port][/db]``
    or ``rediss://…`` for TLS; the server is reached on first use).

    Options, each given as a keyword or in the URL's query (the keyword wins): `ttl_s` (``?ttl=30d``;
    units s, m, h, d, w): an entry expires that long after it was stored (None: never); `prefix`
    (``?prefix=…``): where entries live in the database. Other query arguments go to the redis
    client (``?socket_timeout=5``). `connect_timeout_s`, `socket_timeout_s`: seconds to wait for a
    connection and for a reply before the cache is disabled (a URL's ``socket_timeout`` and
    ``socket_connect_timeout`` override them).

    Implements `engine.judge.cache.base.JudgeCache`; never raises into the caller for a server failure
    (see the module docstring). Raises ValueError for a URL that is not a Redis URL, a bad `ttl`
    or an empty prefix; ImportError when the redis client is not installed. Picklable (a copy
    connects anew, its counters at 0). Use as a context manager or call `close()`.
    """

    def __init__(self, url: str, *, ttl_s: float | None = None, prefix: str | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S):
        if redis is None:
            raise ImportError("the Redis judge cache needs the redis client: pip install 'scorespec[redis]'")
        self.url = url
        #: The URL as messages and `stats` show it (password as ``***``).
        self.location = masked_url(url)
        try:
            parts = urlsplit(url)
            query = parse_qsl(parts.query, keep_blank_values=True)
        except (ValueError, AttributeError, TypeError):
            raise ValueError(f"cache URL {self.location}: not a URL") from None
        if parts.scheme not in URL_SCHEMES or not parts.hostname:
            raise ValueError(f"cache URL {self.location}: expected redis://host[:port][/db] or rediss://…")
        options = {name: value for name, value in query if name in ("ttl", "prefix")}
        if ttl_s is None and "ttl" in options:
            try:
                ttl_s = parse_duration(options["ttl"])
            except ValueError as exc:
                raise ValueError(f"cache URL {self.location}: ttl {exc}") from None
        #: Seconds an entry lives after it was stored, or None (no expiry).
        self.ttl_s = None if ttl_s is None else _seconds(ttl_s, "ttl")
        #: The prefix of every key this cache reads, writes or deletes.
        self.prefix = prefix if prefix is not None else options.get("prefix", DEFAULT_PREFIX)
        if not isinstance(self.prefix, str) or not self.prefix:
            raise ValueError(f"cache URL {self.location}: the key prefix must be a non-empty string")
        self.connect_timeout_s = _seconds(connect_timeout_s, "connect_timeout_s")
        self.socket_timeout_s = _seconds(socket_timeout_s, "socket_timeout_s")
        client_url = urlunsplit(parts._replace(query=urlencode([(n, v) for n, v in query
                                                                if n not in ("ttl", "prefix")])))
        try:
            self._client = redis.Redis.from_url(client_url, socket_connect_timeout=self.connect_timeout_s,
                                                socket_timeout=self.socket_timeout_s, retry=Retry(NoBackoff(), 1))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"cache URL {self.location}: {exc}") from None
        self._delete_if_unchanged = self._client.register_script(_DELETE_IF_UNCHANGED)
        self._clear_batch = self._client.register_script(_CLEAR_BATCH)
        self._renew_if_held = self._client.register_script(_RENEW_IF_HELD)
        self._release_if_held = self._client.register_script(_RELEASE_IF_HELD)
        self._token = secrets.token_hex(8)  # whose lease a call's is (`claim`)
        #: Why the cache is not used (set once, with a `JudgeCacheWarning`), or None.
        self.disabled_reason: str | None = None
        self._lock = threading.Lock()
        self._hits = self._misses = self._writes = self._discarded = self._dropped = 0

    def __repr__(self) -> str:
        state = f", disabled={self.disabled_reason!r}" if self.disabled_reason else ""
        return f"RedisJudgeCache({self.location!r}{state})"

    def __enter__(self) -> RedisJudgeCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "ttl_s": self.ttl_s, "prefix": self.prefix,
                "connect_timeout_s": self.connect_timeout_s, "socket_timeout_s": self.socket_timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        url = state.pop("url")
        self.__init__(url, **state)

    # -- faults -------------------------------------------------------------------------------

    def _disable(self, doing: str, exc: BaseException) -> None:
        """Stop using the server: report why once."""
        with self._lock:
            if self.disabled_reason is not None:
                return
            if isinstance(exc, redis.exceptions.TimeoutError):
                reason = f"did not answer in time ({exc})"
            elif isinstance(exc, (redis.exceptions.ConnectionError, OSError)):
                reason = f"cannot be reached ({exc})"
            else:
                reason = f"cannot be {doing} ({type(exc).__name__}: {exc})"
            self.disabled_reason = reason
        message = f"judge cache {self.location} {reason}; going on without the cache"
        try:
            warnings.warn(JudgeCacheWarning(message), stacklevel=4)
        except Warning:  # warnings turned into errors: still never raise into the judge call
            _log.warning(message)

    def _count(self, **changes: int) -> None:
        with self._lock:
            for name, n in changes.items():
                setattr(self, f"_{name}", getattr(self, f"_{name}") + n)

    # -- JudgeCache ---------------------------------------------------------------------------

    def get(self, key: str) -> CachedAnswer | None:
        """The answer stored under `key`, or None: absent, expired, discarded (checksum mismatch,
        unparsable, another key's, not a hash: deleted then) or the cache disabled."""
        if self.disabled_reason is not None or not isinstance(key, str):
            self._count(misses=1)
            return None
        name = self.prefix + key
        try:
            value, checksum = self._client.hmget(name, "value", "checksum")
        except redis.exceptions.ResponseError as exc:
            if not str(exc).startswith("WRONGTYPE"):
                self._disable("read", exc)
                self._count(misses=1)
                return None
            value, checksum, present = b"", b"", True  # not a hash: not an answer
        except (redis.exceptions.RedisError, OSError) as exc:
            self._disable("read", exc)
            self._count(misses=1)
            return None
        else:
            present = value is not None or checksum is not None
        if not present:
            self._count(misses=1)
            return None
        answer = None
        if value is not None and checksum is not None:
            answer = decode_entry(key, value, checksum.decode("ascii", "replace"))
        if answer is None:
            self._count(discarded=1, misses=1)
            try:
                self._delete_if_unchanged(keys=[name], args=[value or b"", "1" if value is None else "0"])
            except redis.exceptions.ResponseError as exc:  # e.g. scripts not allowed: the entry stays a miss
                _log.debug("judge cache %s: a bad entry was not deleted (%s)", self.location, exc)
            except (redis.exceptions.RedisError, OSError) as exc:
                self._disable("written", exc)
            return None
        self._count(hits=1)
        return answer

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store `answer` under `key` (replacing any earlier entry and its expiry) in one
        transaction, with the cache's time to live. Raises ValueError for an empty key or an
        answer that must not be stored (no data, not JSON); a server failure disables the cache
        instead, and a disabled cache drops the write."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"a cache key is a non-empty string, got {key!r}")
        value, checksum = encode_entry(key, answer)
        if self.disabled_reason is not None:
            self._count(dropped=1)
            return
        name = self.prefix + key
        fields = {"value": value, "checksum": checksum, "model": answer.model.encode("utf-8", "surrogatepass"),
                  "created_at": repr(float(answer.created_at))}
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(name)
                pipe.hset(name, mapping=fields)
                if self.ttl_s is not None:
                    pipe.pexpire(name, max(1, round(self.ttl_s * 1000)))
                pipe.execute()
        except (redis.exceptions.RedisError, OSError) as exc:
            self._disable("written", exc)
            self._count(dropped=1)
            return
        self._count(writes=1)

    # -- calls in flight ------------------------------------------------------------------------

    def claim(self, key: str, seconds: float) -> bool:
        """Take the lease on asking `key`'s call for `seconds` (> 0): True when this object now
        holds it (ask the call, `renew` while asking, `release` after the answer is stored), False
        when another holds it (its answer is coming). True, too, when the cache is disabled or
        the server fails (the caller asks, uncached)."""
        if self.disabled_reason is not None:
            return True
        try:
            return bool(self._client.set(self._lease(key), self._token, nx=True, px=max(1, round(seconds * 1000))))
        except (redis.exceptions.RedisError, OSError) as exc:
            self._disable("written", exc)
            return True

    def renew(self, key: str, seconds: float) -> None:
        """Extend the lease on `key` this object holds to `seconds` from now."""
        self._if_held(self._renew_if_held, key, [self._token, max(1, round(seconds * 1000))])

    def release(self, key: str) -> None:
        """Give up the lease on `key`, if this object holds it."""
        self._if_held(self._release_if_held, key, [self._token])

    def _lease(self, key: str) -> str:
        return f"{self.prefix}lease:{key}"

    def _if_held(self, script: Any, key: str, args: list[Any]) -> None:
        if self.disabled_reason is not None:
            return
        try:
            script(keys=[self._lease(key)], args=args)
        except redis.exceptions.ResponseError as exc:  # scripts not allowed: the lease runs out by itself
            _log.debug("judge cache %s: a lease was left to expire (%s)", self.location, exc)
        except (redis.exceptions.RedisError, OSError) as exc:
            self._disable("written", exc)

    def _batches(self) -> Iterator[list[bytes]]:
        """The keys under the prefix, `BATCH` at a time (SCAN: a key present throughout is given
        once at least; one stored meanwhile may or may not be)."""
        batch: list[bytes] = []
        for name in self._client.scan_iter(match=_glob_escaped(self.prefix) + "*", count=BATCH):
            batch.append(name)
            if len(batch) == BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def stats(self) -> CacheStats:
        """Entries (hashes under the prefix), memory the server uses for them (``MEMORY USAGE``;
        their values' lengths where the server refuses it), entries per model, oldest and newest
        `created_at`, and this object's counters. Entries are read without blocking the server,
        so figures taken while others write are a close estimate."""
        per_model: dict[str, int] = {}
        oldest = newest = None
        size = 0
        if self.disabled_reason is None:
            try:
                for batch in self._batches():
                    pipe = self._client.pipeline(transaction=False)
                    for name in batch:
                        pipe.hmget(name, "model", "created_at")
                        pipe.memory_usage(name, samples=0)
                        pipe.hstrlen(name, "value")
                    replies = pipe.execute(raise_on_error=False)
                    for fields, memory, length in zip(replies[0::3], replies[1::3], replies[2::3]):
                        if not isinstance(fields, list) or fields[0] is None or fields[1] is None:
                            continue  # not an entry, or expired meanwhile
                        try:
                            created = float(fields[1])
                        except ValueError:
                            continue
                        model = fields[0].decode("utf-8", "surrogatepass")
                        per_model[model] = per_model.get(model, 0) + 1
                        oldest = created if oldest is None else min(oldest, created)
                        newest = created if newest is None else max(newest, created)
                        size += memory if isinstance(memory, int) else length if isinstance(length, int) else 0
            except (redis.exceptions.RedisError, OSError) as exc:
                self._disable("read", exc)
                per_model, oldest, newest, size = {}, None, None, 0
        with self._lock:
            return CacheStats(location=self.location, entries=sum(per_model.values()), size_bytes=size,
                              per_model=per_model, oldest=oldest, newest=newest, hits=self._hits,
                              misses=self._misses, writes=self._writes, discarded=self._discarded,
                              dropped_writes=self._dropped, disabled_reason=self.disabled_reason)

    def clear(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """Delete the entries created more than `older_than_s` seconds ago and/or whose model is
        `model` (both: entries matching both; neither: every key under the prefix). Returns how
        many were deleted (0 when the cache is disabled; those deleted before a failure when the
        server is lost meanwhile). Raises ValueError for a negative or non-finite `older_than_s`."""
        if older_than_s is not None and (isinstance(older_than_s, bool) or not isinstance(older_than_s, (int, float))
                                         or not math.isfinite(older_than_s) or older_than_s < 0):
            raise ValueError(f"older_than_s: a finite number of seconds >= 0 is needed, got {older_than_s!r}")
        if self.disabled_reason is not None:
            return 0
        args = ["0", "0", "0", b""]
        if older_than_s is not None:
            args[0:2] = ["1", repr(time.time() - older_than_s)]
        if model is not None:
            args[2:4] = ["1", model.encode("utf-8", "surrogatepass")]
        deleted = 0
        try:
            for batch in self._batches():
                deleted += int(self._clear_batch(keys=batch, args=args))
        except (redis.exceptions.RedisError, OSError) as exc:
            self._disable("written", exc)
        return deleted

    def close(self) -> None:
        """Close this process's connections to the server; a later call connects again."""
        try:
            self._client.close()
        except (redis.exceptions.RedisError, OSError):
            pass

"""The Redis judge-call cache's own behaviour (engine.judge.cache.redis_backend): its URL and options,
the key prefix, expiry, a server that cannot be reached, stops answering or is lost mid-run.
The protocol tests shared with SQLite, a cache that cannot be used included, are in
tests/test_judge_cache.py (its `cache` and `unusable_cache` fixtures run each on both backends).

Against real redis-servers on 127.0.0.1 started by the tests (tests/redis_server.py): the
session's (emptied for each test, `redis_url`) or one of the test's own that it kills
(`own_redis_server`).
"""

from __future__ import annotations

import pickle
import socket
import threading
import time
import warnings

import pytest
from conftest import require_redis
from test_judge_cache import assert_behaves_as_empty, closed_port

from engine.judge.cache.base import CachedAnswer, JudgeCache, JudgeCacheWarning
from engine.judge.cache.layer import open_cache
from engine.judge.cache.redis_backend import DEFAULT_PREFIX, RedisJudgeCache, masked_url


@pytest.fixture(autouse=True)
def _redis_installed() -> None:
    require_redis()


def client(url: str):
    import redis as redis_client

    return redis_client.Redis.from_url(url)


def a(i: int, model: str = "openai/m", created_at: float = 1_700_000_000.0) -> CachedAnswer:
    return CachedAnswer(data={"i": i}, raw=str(i), tokens_in=i, tokens_out=1, model=model, created_at=created_at)


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, JudgeCacheWarning)]


# --------------------------------------------------------------------------- the URL and options


def test_the_url_carries_the_ttl_and_the_prefix_and_keywords_win():
    cache = RedisJudgeCache("redis://127.0.0.1:6390/2?ttl=30d&prefix=team:judge:")
    assert (cache.ttl_s, cache.prefix) == (30 * 86400, "team:judge:")
    assert isinstance(cache, JudgeCache)
    assert cache.location == "redis://127.0.0.1:6390/2?ttl=30d&prefix=team:judge:"
    assert cache._client.connection_pool.connection_kwargs["db"] == 2
    assert "ttl" not in cache._client.connection_pool.connection_kwargs
    keyword = RedisJudgeCache("redis://127.0.0.1:6390/0?ttl=30d", ttl_s=60, prefix="p:")
    assert (keyword.ttl_s, keyword.prefix) == (60, "p:")
    plain = RedisJudgeCache("rediss://cache.example:6380")
    assert (plain.ttl_s, plain.prefix) == (None, DEFAULT_PREFIX)


def test_a_password_never_shows():
    cache = RedisJudgeCache(f"redis://ci:s3cret@127.0.0.1:{closed_port()}/0")
    assert cache.location.startswith("redis://ci:***@127.0.0.1:")
    with pytest.warns(JudgeCacheWarning) as record:
        stats = cache.stats()
    assert "s3cret" not in repr(cache) + stats.location + stats.disabled_reason + str(record[0].message)
    assert masked_url("redis://:s3cret@host/0") == "redis://:***@host/0"
    assert masked_url("redis://host/0") == "redis://host/0"


@pytest.mark.parametrize("url, kwargs, message", [
    ("redis://127.0.0.1/0?ttl=30", {}, "ttl '30': expected a number and a unit"),
    ("redis://127.0.0.1/0", {"ttl_s": 0}, "ttl: a finite number of seconds > 0"),
    ("redis://127.0.0.1/0", {"ttl_s": -5}, "ttl: a finite number of seconds > 0"),
    ("redis://127.0.0.1/0?prefix=", {}, "prefix must be a non-empty string"),
    ("http://127.0.0.1/0", {}, "expected redis://host"),
    ("redis:///0", {}, "expected redis://host"),
    ("redis://127.0.0.1:port/0", {}, "cache URL redis://127.0.0.1:port/0"),
    ("redis://:pw@127.0.0.1/0", {"socket_timeout_s": 0}, "socket_timeout_s"),
])
def test_a_bad_url_or_option_is_an_error_naming_it(url, kwargs, message):
    with pytest.raises(ValueError, match=message) as raised:
        RedisJudgeCache(url, **kwargs)
    assert "pw" not in str(raised.value)


def test_open_cache_chooses_the_backend_by_the_setting(monkeypatch, tmp_path):
    store = open_cache("redis://127.0.0.1:6390/0?ttl=12h")
    assert isinstance(store, RedisJudgeCache) and store.ttl_s == 12 * 3600
    assert type(open_cache(str(tmp_path / "c.sqlite"))).__name__ == "SQLiteJudgeCache"
    assert type(open_cache(True)).__name__ == "SQLiteJudgeCache"
    monkeypatch.setenv("SCORESPEC_CACHE_URL", "redis://127.0.0.1:6391/3")
    default = open_cache(True)
    assert isinstance(default, RedisJudgeCache) and default.location == "redis://127.0.0.1:6391/3"
    assert type(open_cache(str(tmp_path / "c.sqlite"))).__name__ == "SQLiteJudgeCache"  # a path still wins
    with pytest.raises(ValueError, match="a cache URL starts with redis:// or rediss://"):
        open_cache("memcached://127.0.0.1:11211")
    monkeypatch.setenv("SCORESPEC_CACHE_URL", "/tmp/file.sqlite")
    with pytest.raises(ValueError, match=r"^\$SCORESPEC_CACHE_URL: cache /tmp/file.sqlite: a cache URL starts with"):
        open_cache(True)


def test_a_copy_made_by_pickle_shares_the_entries_not_the_counters(redis_url):
    cache = RedisJudgeCache(redis_url + "?ttl=1h", prefix="copy:")
    cache.put("k", a(1))
    copy = pickle.loads(pickle.dumps(cache))
    assert (copy.url, copy.ttl_s, copy.prefix) == (cache.url, 3600, "copy:")
    assert copy.get("k") == a(1)
    assert (copy.stats().hits, copy.stats().writes, cache.stats().writes) == (1, 0, 1)


# --------------------------------------------------------------------------- the prefix and expiry


def test_only_keys_under_the_prefix_are_read_counted_or_deleted(redis_url):
    raw = client(redis_url)
    raw.set("user:1", "someone else's")
    raw.hset("scorespec:judge-notes", mapping={"model": "m", "created_at": "1.0"})  # a near miss of the prefix
    ours, theirs = RedisJudgeCache(redis_url), RedisJudgeCache(redis_url, prefix="other:judge:")
    ours.put("k1", a(1))
    ours.put("k2", a(2, model="local"))
    theirs.put("k1", a(9))
    assert sorted(raw.scan_iter(match="scorespec:judge:*")) == [b"scorespec:judge:k1", b"scorespec:judge:k2"]
    assert (ours.stats().entries, theirs.stats().entries) == (2, 1)
    assert ours.get("k1") == a(1) and theirs.get("k1") == a(9)
    assert ours.clear() == 2
    assert ours.stats().entries == 0
    assert theirs.get("k1") == a(9)
    assert raw.get("user:1") == b"someone else's" and raw.exists("scorespec:judge-notes") == 1


def test_a_prefix_with_glob_characters_matches_only_itself(redis_url):
    star, plain = RedisJudgeCache(redis_url, prefix="t*:"), RedisJudgeCache(redis_url, prefix="tx:")
    star.put("k", a(1))
    plain.put("k", a(2))
    assert (star.stats().entries, star.clear(), plain.get("k")) == (1, 1, a(2))


def test_entries_expire_their_ttl_after_they_are_stored(redis_url):
    raw = client(redis_url)
    with RedisJudgeCache(redis_url + "?ttl=30d") as lasting:
        lasting.put("k", a(1))
        assert 30 * 86400 * 1000 - 60_000 < raw.pttl("scorespec:judge:k") <= 30 * 86400 * 1000
        with RedisJudgeCache(redis_url) as forever:
            forever.put("k", a(2))  # replaces the entry and its expiry
        assert raw.pttl("scorespec:judge:k") == -1
        assert lasting.get("k") == a(2)
    with RedisJudgeCache(redis_url, ttl_s=0.05) as brief:
        brief.put("short", a(3))
        deadline = time.monotonic() + 30
        while brief.get("short") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert brief.get("short") is None
        stats = brief.stats()
        assert (stats.entries, stats.discarded, stats.disabled_reason) == (1, 0, None)  # "k" stays


def test_clear_by_age_and_model_tests_each_entry_on_the_server(redis_url):
    cache = RedisJudgeCache(redis_url)
    now = time.time()
    for i in range(1200):  # more than two SCAN batches
        cache.put(f"k{i}", a(i, model="local" if i % 3 else "openai/m", created_at=now - (7200 if i % 2 else 10)))
    assert cache.stats().per_model == {"local": 800, "openai/m": 400}
    assert cache.clear(older_than_s=3600, model="openai/m") == 200
    assert cache.clear(model="local") == 800
    assert cache.clear(older_than_s=3600) == 0
    assert cache.stats().per_model == {"openai/m": 200}
    assert all(cache.get(f"k{i}") == a(i, model="openai/m", created_at=now - 10) for i in range(0, 1200, 6))


# --------------------------------------------------------------------------- values that are not answers


def test_a_key_of_another_type_or_a_partial_hash_under_the_prefix_is_a_miss_and_removed(redis_url):
    raw = client(redis_url)
    raw.set("scorespec:judge:string", "not a hash")
    raw.hset("scorespec:judge:partial", mapping={"value": b'{"format":1}', "model": "m"})
    with RedisJudgeCache(redis_url) as cache:
        assert cache.get("string") is None and cache.get("partial") is None
        stats = cache.stats()
        assert (stats.discarded, stats.misses, stats.hits, stats.disabled_reason) == (2, 2, 0, None)
    assert raw.exists("scorespec:judge:string", "scorespec:judge:partial") == 0


# --------------------------------------------------------------------------- a server that fails


def test_the_warning_of_an_unreachable_server_hides_its_password():
    url = f"redis://:s3cret@127.0.0.1:{closed_port()}/0"
    with warnings.catch_warnings(record=True) as record, RedisJudgeCache(url) as store:
        warnings.simplefilter("always")
        assert_behaves_as_empty(store, record, "cannot be reached")
    assert "s3cret" not in cache_warnings(record)[0] and ":***@127.0.0.1" in cache_warnings(record)[0]


def test_a_server_that_never_answers_costs_one_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    accepting = threading.Thread(target=lambda: held.append(listener.accept()), daemon=True)
    accepting.start()  # connections are accepted and never answered
    try:
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        with warnings.catch_warnings(record=True) as record, RedisJudgeCache(url, socket_timeout_s=0.2) as store:
            warnings.simplefilter("always")
            assert_behaves_as_empty(store, record, "did not answer in time")
    finally:
        for conn, _ in held:
            conn.close()
        listener.close()


def test_a_server_lost_mid_run_turns_gets_into_misses_and_puts_into_no_ops(own_redis_server):
    with RedisJudgeCache(own_redis_server.url) as store:
        store.put("k1", a(1))
        assert store.get("k1") == a(1)
        own_redis_server.kill()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            assert store.get("k1") is None
            store.put("k2", a(2))
            assert store.get("k2") is None
            assert store.clear() == 0
        messages = cache_warnings(record)
        assert len(messages) == 1 and "cannot be reached" in messages[0]
        stats = store.stats()
        assert (stats.hits, stats.misses, stats.writes, stats.dropped_writes) == (1, 2, 1, 1)
        assert "cannot be reached" in stats.disabled_reason


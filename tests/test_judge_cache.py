"""The judge-call cache's key and its stores (engine.judge.cache.base, engine.judge.cache.sqlite_backend,
engine.judge.cache.redis_backend).

The tests of the `JudgeCache` protocol run against both backends (the `cache` fixture): an SQLite
file under pytest's tmp_path, and a real redis-server the tests start on 127.0.0.1 (emptied for
each test); so do the tests of a cache that cannot be used (the `unusable_cache` fixture: a
file that is not a database, a server that cannot be reached). SQLite's own failures (files,
locks, torn logs, forks) are tested on SQLite alone, the Redis server's (unreachable, lost,
foreign keys, expiry) in tests/test_judge_cache_redis.py.
Processes are real (subprocess, fork) and are synchronised through files or killed at a
deterministic point by the store's write hook.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import multiprocessing
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import require_redis

from engine.judge.cache.base import (
    KEY_FORMAT,
    CachedAnswer,
    CallIdentity,
    JudgeCache,
    JudgeCacheWarning,
    cache_key,
    default_cache_path,
    encode_entry,
)
from engine.judge.cache.layer import open_cache
from engine.judge.cache.sqlite_backend import SQLiteJudgeCache

ROOT = Path(__file__).resolve().parent.parent


def material(**changes):
    """The fields of a typical hosted judge call, with `changes` applied."""
    fields = dict(
        provider="openai",
        model="gpt-4o-mini",
        base_url="http://127.0.0.1:8000/v1",
        structured_mode="tool_call",
        messages=[{"role": "system", "content": "You judge claims."},
                  {"role": "user", "content": "Is the claim supported?"}],
        schema={"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}, "required": ["verdict"]},
        temperature=0.0,
        max_tokens=256,
        seed=None,
        sample_index=0,
    )
    fields.update(changes)
    return fields


def answer(i: int, writer: str = "") -> CachedAnswer:
    """A deterministic answer of a few KB (values span several database pages)."""
    return CachedAnswer(data={"i": i, "writer": writer, "verdicts": ["yés"] * (200 + 37 * i)},
                        raw=f"raw answer {i} of {writer}", tokens_in=100 + i, tokens_out=i, model="openai/m",
                        created_at=1_700_000_000.0 + i)


@pytest.fixture
def cache(cache_location):
    """An empty cache of each backend (`open_cache` picks it from the path or URL)."""
    with open_cache(cache_location) as store:
        yield store


CHILD_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def child_command(source: str, *args: str) -> list[str]:
    """A new interpreter running `source` after the `answer` helper, with `args`."""
    program = "from engine.judge.cache.base import CachedAnswer\n" + textwrap.dedent(inspect.getsource(answer)) + source
    return [sys.executable, "-c", program, *args]


def run_child(source: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(child_command(source, *args), env=CHILD_ENV, capture_output=True, text=True, timeout=120)


def raw_rows(path: Path) -> dict[str, tuple[bytes, str]]:
    """key -> (value, checksum) read with plain sqlite3."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key, value, checksum FROM answers")
        return {key: (value, checksum) for key, value, checksum in rows}
    finally:
        db.close()


def raw_client(cache):
    """A plain redis client on the database of a `RedisJudgeCache`."""
    import redis

    return redis.Redis.from_url(cache.url)


def raw_entries(cache) -> dict[str, tuple[bytes, str]]:
    """key -> (value, checksum) as stored, read around the cache object (sqlite3, a redis client)."""
    if isinstance(cache, SQLiteJudgeCache):
        return raw_rows(cache.path)
    with raw_client(cache) as client:
        names = list(client.scan_iter(match=cache.prefix + "*"))
        return {name.decode()[len(cache.prefix):]: (value, checksum.decode())
                for name in names for value, checksum in [client.hmget(name, "value", "checksum")]}


def write_raw(cache, key: str, value: bytes, checksum: str, model: str = "m", created_at: float = 1.0) -> None:
    """Store `value` and `checksum` under `key` as they are, around the cache object (a damaged
    or misplaced entry)."""
    if isinstance(cache, SQLiteJudgeCache):
        db = sqlite3.connect(cache.path)
        db.execute("INSERT OR REPLACE INTO answers (key, value, checksum, model, created_at) VALUES (?, ?, ?, ?, ?)",
                   (key, value, checksum, model, created_at))
        db.commit()
        db.close()
        return
    with raw_client(cache) as client:
        client.hset(cache.prefix + key, mapping={"value": value, "checksum": checksum, "model": model,
                                                 "created_at": repr(created_at)})


def storage_size(cache) -> int:
    """The bytes the entries take, measured around the cache object: the SQLite file and its log
    on disk; the memory the Redis server reports for each entry."""
    if isinstance(cache, SQLiteJudgeCache):
        return sum(p.stat().st_size for p in (cache.path, Path(f"{cache.path}-wal")) if p.exists())
    with raw_client(cache) as client:
        return sum(client.memory_usage(name, samples=0) for name in client.scan_iter(match=cache.prefix + "*"))


# --------------------------------------------------------------------------- the key


def framed(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def test_key_is_the_sha256_of_the_framed_fields_schema_and_message_text():
    key = cache_key(**material(
        base_url="http://127.0.0.1:8000/v1/",
        messages=[{"content": "Ist der Himmel blau? ☁", "role": "user"},
                  {"role": "assistant", "content": [{"type": "text", "text": "Ja."}]}],
        schema={"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}},
        temperature=0.5, seed=7))
    header = ('{"base_url":"http://127.0.0.1:8000/v1","key_format":%d,"max_tokens":256,"model":"gpt-4o-mini",'
              '"provider":"openai","sample_index":0,"seed":7,"structured_mode":"tool_call","temperature":0.5}'
              % KEY_FORMAT)
    schema = '{"properties":{"verdict":{"enum":["yes","no"]}},"type":"object"}'
    hashed = (framed(header.encode()) + framed(schema.encode())
              + b"L" + (2).to_bytes(8, "big")
              + b"T" + framed(b"user") + framed("Ist der Himmel blau? ☁".encode("utf-8"))  # text as UTF-8, no JSON
              + b"J" + framed(b'{"content":[{"text":"Ja.","type":"text"}],"role":"assistant"}'))
    assert KEY_FORMAT == 2
    assert key == hashlib.sha256(hashed).hexdigest()


@pytest.mark.parametrize("first, second", [
    # the same text split differently between messages, or between role and content
    ([{"role": "user", "content": "ab"}, {"role": "user", "content": "c"}],
     [{"role": "user", "content": "a"}, {"role": "user", "content": "bc"}]),
    ([{"role": "user", "content": "ab"}], [{"role": "userab", "content": ""}]),
    ([{"role": "user", "content": "a"}, {"role": "user", "content": ""}], [{"role": "user", "content": "a"}]),
    ([], [{"role": "", "content": ""}]),
    # a text message and the same text as content parts, or with one more key
    ([{"role": "user", "content": "Is it?"}], [{"role": "user", "content": [{"type": "text", "text": "Is it?"}]}]),
    ([{"role": "user", "content": "Is it?"}], [{"role": "user", "content": "Is it?", "name": "x"}]),
    # a content that ends with the bytes the next message would add
    ([{"role": "user", "content": "aT" + "\0" * 7 + "\x01b" + "\0" * 8}],
     [{"role": "user", "content": "a"}, {"role": "b", "content": ""}]),
    ([{"role": "user", "content": "x"}], {"role": "user", "content": "x"}),
])
def test_different_messages_never_share_a_key(first, second):
    assert cache_key(**material(messages=first)) != cache_key(**material(messages=second))


def test_a_schema_change_changes_the_key_also_for_a_schema_keyed_before():
    schema = material()["schema"]
    edited = {**schema, "properties": {"verdict": {"enum": ["yes", "no", "unsure"]}}}
    keys = [cache_key(**material(schema=s)) for s in (schema, edited, schema, dict(schema))]
    assert keys[0] != keys[1] and keys[0] == keys[2] == keys[3]
    assert cache_key(**material(temperature=-0.0)) == cache_key(**material(temperature=0))


def test_the_identity_has_exactly_the_answer_changing_fields_and_no_api_key():
    names = {f.name for f in dataclasses.fields(CallIdentity) if f.init}
    assert names == {"provider", "model", "base_url", "structured_mode", "messages", "schema", "temperature",
                     "max_tokens", "seed", "sample_index", "probabilities", "request", "order"}
    with pytest.raises(TypeError, match="api_key"):
        cache_key(**material(), api_key="sk-secret")
    incomplete = material()
    del incomplete["seed"]
    with pytest.raises(TypeError, match="seed"):
        CallIdentity(**incomplete)


@pytest.mark.parametrize("field, value", [
    ("provider", "anthropic"),
    ("model", "gpt-4o"),
    ("base_url", None),
    ("base_url", "http://127.0.0.1:8001/v1"),
    ("structured_mode", "json_schema_mode"),
    ("messages", [{"role": "system", "content": "You judge claims."},
                  {"role": "user", "content": "Is the claim supported? "}]),
    ("messages", [{"role": "user", "content": "Is the claim supported?"},
                  {"role": "system", "content": "You judge claims."}]),
    ("schema", {"type": "object", "properties": {"verdict": {"enum": ["yes", "no", "idk"]}},
                "required": ["verdict"]}),
    ("temperature", 0.2),
    ("max_tokens", 512),
    ("seed", 0),
    ("sample_index", 1),
    ("probabilities", True),
    ("request", {"family": "reasoning", "max_completion_tokens": 5120, "reasoning_effort": "low"}),
])
def test_each_field_changes_the_key(field, value):
    assert cache_key(**material(**{field: value})) != cache_key(**material())


def test_what_cannot_change_an_answer_does_not_change_the_key():
    base = CallIdentity(**material())
    reordered = material(
        messages=[{"content": "You judge claims.", "role": "system"},
                  {"content": "Is the claim supported?", "role": "user"}],
        schema={"required": ["verdict"], "properties": {"verdict": {"enum": ["yes", "no"]}}, "type": "object"},
        temperature=0, base_url="http://127.0.0.1:8000/v1/")
    assert cache_key(**reordered) == base.key()
    assert len(base.key()) == 64 and int(base.key(), 16) >= 0


def test_embedded_models_are_keyed_by_their_weights_not_their_name(tmp_path):
    with pytest.raises(ValueError, match="SHA-256"):
        CallIdentity(**material(provider="local", model="local"))
    first, second = tmp_path / "a" / "judge.gguf", tmp_path / "b" / "judge.gguf"
    for path, weights in ((first, b"GGUF weights one"), (second, b"GGUF weights two")):
        path.parent.mkdir()
        path.write_bytes(weights)
    keys = {cache_key(**material(provider="llamacpp", model=hashlib.sha256(p.read_bytes()).hexdigest(), base_url=None))
            for p in (first, second)}
    assert len(keys) == 2


@pytest.mark.parametrize("field, value, message", [
    ("temperature", float("nan"), "temperature"),
    ("temperature", -0.1, "temperature"),
    ("max_tokens", 0, "max_tokens"),
    ("sample_index", -1, "sample_index"),
    ("seed", "7", "seed"),
    ("provider", "", "provider"),
    ("messages", [{"role": "user", "content": {"a", "set"}}], "messages: not JSON data"),
    ("schema", {"type": "number", "maximum": float("inf")}, "schema: not JSON data"),
])
def test_a_value_that_cannot_be_keyed_is_refused_naming_its_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        CallIdentity(**material(**{field: value}))


# --------------------------------------------------------------------------- where it lives


def test_default_cache_path_follows_the_environment(monkeypatch, tmp_path):
    for name in ("SCORESPEC_CACHE_DB", "SCORESPEC_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "scorespec" / "judge-cache.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "scorespec" / "judge-cache.sqlite"
    monkeypatch.setenv("SCORESPEC_CACHE", str(tmp_path / "models"))
    assert default_cache_path() == tmp_path / "models" / "judge-cache.sqlite"
    monkeypatch.setenv("SCORESPEC_CACHE_DB", str(tmp_path / "elsewhere.sqlite"))
    assert default_cache_path() == tmp_path / "elsewhere.sqlite"
    assert not (tmp_path / "home").exists()


# --------------------------------------------------------------------------- storing and reading


def test_an_answer_comes_back_as_it_was_stored(cache):
    assert isinstance(cache, JudgeCache)
    stored = CachedAnswer(data={"verdicts": [{"claim": "Zürich ☁", "verdict": "yes"}], "n": 2.5}, raw='{"v": 1}',
                          tokens_in=812, tokens_out=37, model="local", created_at=1_700_000_123.25)
    cache.put("k1", stored)
    assert cache.get("k1") == stored
    assert cache.get("k2") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.writes, stats.discarded, stats.entries) == (1, 1, 1, 0, 1)


def test_a_put_replaces_the_entry_and_falsy_answers_are_answers(cache):
    cache.put("k", CachedAnswer(data={"score": 1}, raw="first"))
    cache.put("k", CachedAnswer(data=0, raw="second"))
    cache.put("empty", CachedAnswer(data=[], raw="[]"))
    assert cache.get("k").data == 0 and cache.get("k").raw == "second"
    assert cache.get("empty").data == []
    assert cache.stats().entries == 2


def test_put_refuses_an_answer_with_no_data(cache):
    with pytest.raises(ValueError, match="no data"):
        cache.put("k", CachedAnswer(data=None, raw="I cannot answer that."))
    with pytest.raises(ValueError, match="not JSON data"):
        cache.put("k", CachedAnswer(data={"verdict": {"yes"}}, raw=""))
    with pytest.raises(ValueError, match="key"):
        cache.put("", CachedAnswer(data=1, raw=""))
    assert cache.get("k") is None
    assert (cache.stats().writes, cache.stats().entries) == (0, 0)


def test_nothing_is_created_before_the_first_answer(tmp_path):
    path = tmp_path / "sub" / "judge-cache.sqlite"
    store = SQLiteJudgeCache(path)
    assert store.stats().entries == 0
    assert store.clear() == 0
    assert not path.parent.exists()
    store.put("k", CachedAnswer(data=1, raw="1"))
    store.close()
    with SQLiteJudgeCache(path) as reopened:
        assert reopened.get("k").data == 1


def test_stats_count_entries_per_model_and_their_ages(cache):
    for i, model in enumerate(["local", "local", "openai/gpt-4o-mini"]):
        cache.put(f"k{i}", CachedAnswer(data=i, raw=str(i), model=model, created_at=1000.0 + 10 * i))
    stats = cache.stats()
    assert stats.entries == 3
    assert stats.per_model == {"local": 2, "openai/gpt-4o-mini": 1}
    assert (stats.oldest, stats.newest) == (1000.0, 1020.0)
    assert stats.size_bytes == storage_size(cache) and stats.size_bytes > 0
    assert stats.location == cache.location and stats.disabled_reason is None


def test_clear_removes_the_entries_asked_for(cache):
    now = time.time()
    ages = {"old-a": ("a", 7200), "old-b": ("b", 7200), "new-a": ("a", 10), "new-b": ("b", 10)}
    for key, (model, age) in ages.items():
        cache.put(key, CachedAnswer(data=key, raw=key, model=model, created_at=now - age))
    cache.put("older-a", CachedAnswer(data=1, raw="", model="a", created_at=now - 90_000))
    assert cache.clear(older_than_s=86_400) == 1
    assert cache.clear(older_than_s=3600, model="a") == 1
    assert sorted(k for k in ages if cache.get(k)) == ["new-a", "new-b", "old-b"]
    assert cache.clear(model="b") == 2
    assert cache.stats().per_model == {"a": 1}
    assert cache.clear() == 1
    assert cache.stats().entries == 0
    with pytest.raises(ValueError, match="older_than_s"):
        cache.clear(older_than_s=-1)


def test_clear_gives_the_space_back(cache):
    for i in range(300):
        cache.put(f"k{i}", answer(i))
    full = cache.stats().size_bytes
    assert cache.clear() == 300
    assert cache.stats().size_bytes < full / 20


def test_threads_share_one_cache(cache):
    def work(t: int) -> None:
        for i in range(100):
            cache.put(f"{t}-{i}", CachedAnswer(data={"t": t, "i": i}, raw=""))
            assert cache.get(f"{t}-{i}").data == {"t": t, "i": i}

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(cache.get(f"{t}-{i}").data == {"t": t, "i": i} for t in range(6) for i in range(100))
    stats = cache.stats()
    assert (stats.entries, stats.writes, stats.hits) == (600, 600, 1200)


# --------------------------------------------------------------------------- entries never served torn


def test_an_entry_whose_bytes_changed_is_discarded_not_served(cache):
    cache.put("good", answer(1))
    cache.put("flipped", answer(2))
    value, checksum = raw_entries(cache)["flipped"]
    damaged = value.replace(b'"i":2', b'"i":3')
    write_raw(cache, "flipped", damaged, checksum)
    assert cache.get("flipped") is None
    assert "flipped" not in raw_entries(cache)
    assert cache.get("good") == answer(1)
    stats = cache.stats()
    assert (stats.discarded, stats.misses, stats.hits, stats.entries) == (1, 1, 1, 1)
    assert stats.disabled_reason is None


@pytest.mark.parametrize("value", [
    b'{"format":1,"key":"k","data":{"verdi',                                      # cut short
    "\xff not UTF-8 \xfe".encode("latin-1"),                                      # not text
    b'{"format":1,"key":"k","data":null,"raw":"","tokens_in":0,"tokens_out":0,"model":"","created_at":1.0}',
    b'{"format":1,"key":"other","data":1,"raw":"","tokens_in":0,"tokens_out":0,"model":"","created_at":1.0}',
    b'{"format":9,"key":"k","data":1,"raw":"","tokens_in":0,"tokens_out":0,"model":"","created_at":1.0}',
    b'[1, 2]',
])
def test_a_value_that_passes_its_checksum_but_is_not_an_answer_for_the_key_is_a_miss(cache, value):
    cache.put("k", CachedAnswer(data=1, raw=""))
    write_raw(cache, "k", value, hashlib.sha256(value).hexdigest())
    assert cache.get("k") is None
    assert raw_entries(cache) == {}
    assert cache.stats().discarded == 1


def test_an_entry_moved_under_another_key_is_not_served(cache):
    cache.put("k1", answer(1))
    value, checksum = encode_entry("k1", answer(1))
    write_raw(cache, "k2", value, checksum)
    assert cache.get("k2") is None
    assert cache.get("k1") == answer(1)


KILLED_WRITER = """
import os, sys
from engine.judge.cache.sqlite_backend import SQLiteJudgeCache
point, n = sys.argv[2], int(sys.argv[3])

def hook(where, count):
    if (where, count) == (point, n):
        os._exit(9)

SQLiteJudgeCache.write_hook = hook
cache = SQLiteJudgeCache(sys.argv[1])
for i in range(100):
    cache.put(f"key-{i}", answer(i))
"""


@pytest.mark.parametrize("point, stored", [("before_commit", 39), ("after_commit", 40)])
def test_a_writer_killed_while_writing_leaves_only_whole_answers(tmp_path, point, stored):
    path = tmp_path / "judge-cache.sqlite"
    child = run_child(KILLED_WRITER, str(path), point, "40")
    assert child.returncode == 9, child.stderr
    with SQLiteJudgeCache(path) as store:
        served = {i: store.get(f"key-{i}") for i in range(100)}
        assert [i for i, a in served.items() if a is not None] == list(range(stored))
        assert all(served[i] == answer(i) for i in range(stored))
        assert (store.stats().entries, store.stats().discarded) == (stored, 0)
    assert all(hashlib.sha256(value).hexdigest() == checksum for value, checksum in raw_rows(path).values())


def test_a_torn_write_ahead_log_yields_whole_answers_only(tmp_path):
    """The killed writer's log is cut mid-frame (a write torn by the system): the answers served
    are a prefix of those written, each exactly as written."""
    path = tmp_path / "judge-cache.sqlite"
    assert run_child(KILLED_WRITER, str(path), "after_commit", "40").returncode == 9
    wal = Path(f"{path}-wal")
    with open(wal, "r+b") as log:
        log.truncate(int(wal.stat().st_size * 0.6) + 1234)
    with SQLiteJudgeCache(path) as store:
        served = {i: store.get(f"key-{i}") for i in range(100)}
        kept = [i for i, a in served.items() if a is not None]
        assert 0 < len(kept) < 40 and kept == list(range(len(kept)))
        assert all(served[i] == answer(i) for i in kept)
        assert store.disabled_reason is None


# --------------------------------------------------------------------------- processes at once


CONCURRENT_WRITER = """
import json, sys, time
from pathlib import Path
from engine.judge.cache.layer import open_cache
where, name, other, folder = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
(folder / f"{name}.ready").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
cache = open_cache(where)
for i in range(200):
    cache.put(f"{name}-{i}", answer(i, name))
    cache.put(f"shared-{i % 20}", answer(i, name))
    cache.get(f"{other}-{i}")
s = cache.stats()
print(json.dumps({"writes": s.writes, "dropped": s.dropped_writes, "discarded": s.discarded,
                  "disabled": s.disabled_reason}))
"""


def test_two_processes_writing_at_once_lose_and_corrupt_nothing(tmp_path, cache_location):
    children = [subprocess.Popen(child_command(CONCURRENT_WRITER, cache_location, name, other, str(tmp_path)),
                                 env=CHILD_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for name, other in (("a", "b"), ("b", "a"))]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"{n}.ready").exists() for n in "ab") and time.monotonic() < deadline:
        time.sleep(0.005)
    (tmp_path / "go").touch()  # both open the new cache and write from here on
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, outputs):
        assert child.returncode == 0, err
        assert json.loads(out) == {"writes": 400, "dropped": 0, "discarded": 0, "disabled": None}
    with open_cache(cache_location) as store:
        assert store.stats().entries == 420
        assert all(store.get(f"{n}-{i}") == answer(i, n) for n in "ab" for i in range(200))
        for j in range(20):
            candidates = [answer(i, n) for n in "ab" for i in range(j, 200, 20)]
            assert store.get(f"shared-{j}") in candidates
        assert store.stats().discarded == 0


def _forked_writer(cache: SQLiteJudgeCache) -> None:
    inherited = cache._db
    ok = cache.get("from-parent") == answer(1) and cache._db is not inherited and cache._db is not None
    cache.put("from-child", answer(2, "child"))
    os._exit(0 if ok and cache.get("from-child") == answer(2, "child") else 1)


def test_a_forked_process_opens_its_own_connection(tmp_path):
    with SQLiteJudgeCache(tmp_path / "judge-cache.sqlite") as cache:
        cache.put("from-parent", answer(1))
        child = multiprocessing.get_context("fork").Process(target=_forked_writer, args=(cache,))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        assert cache.get("from-child") == answer(2, "child")
        cache.put("after", answer(3))
        assert cache.stats().entries == 3


# --------------------------------------------------------------------------- a cache that cannot be used


def assert_behaves_as_empty(store: JudgeCache, record, reason: str) -> None:
    """`store` (of either backend) warned once with `reason`, serves nothing, drops writes and
    never raises."""
    assert store.get("k") is None
    store.put("k", CachedAnswer(data=1, raw="1"))
    assert store.get("k") is None
    assert store.clear() == 0
    stats = store.stats()
    assert (stats.entries, stats.dropped_writes, stats.writes, stats.hits) == (0, 1, 0, 0)
    warned = [str(w.message) for w in record if issubclass(w.category, JudgeCacheWarning)]
    assert len(warned) == 1 and reason in warned[0] and "going on without the cache" in warned[0]
    assert reason in store.disabled_reason and stats.disabled_reason == store.disabled_reason


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(params=["sqlite", "redis"])
def unusable_cache(request, tmp_path) -> tuple[Callable[[], JudgeCache], str]:
    """A cache of each backend that cannot be used, as (how to open it, why its one warning says
    it cannot): a file that is not a database; a Redis server that cannot be reached."""
    if request.param == "redis":
        require_redis()
        from engine.judge.cache.redis_backend import RedisJudgeCache

        url = f"redis://127.0.0.1:{closed_port()}/0"
        return (lambda: RedisJudgeCache(url)), "cannot be reached"
    path = tmp_path / "judge-cache.sqlite"
    path.write_bytes(b"these are somebody's notes, not a database\n" * 100)
    return (lambda: SQLiteJudgeCache(path)), "not a database"


def test_a_cache_that_cannot_be_used_is_reported_once_and_serves_nothing(unusable_cache):
    opened, reason = unusable_cache
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with opened() as store:
            assert_behaves_as_empty(store, record, reason)


def test_a_warning_turned_into_an_error_still_never_raises(unusable_cache, caplog):
    opened, reason = unusable_cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = opened()
        assert store.get("k") is None
        store.put("k", CachedAnswer(data=1, raw="1"))
    store.close()
    assert reason in store.disabled_reason
    assert reason in caplog.text


def test_a_file_that_is_not_a_database_is_left_alone(tmp_path):
    path = tmp_path / "judge-cache.sqlite"
    path.write_bytes(b"these are somebody's notes, not a database\n" * 100)
    with pytest.warns(JudgeCacheWarning) as record, SQLiteJudgeCache(path) as store:
        assert_behaves_as_empty(store, record, "not a database")
    assert path.read_bytes() == b"these are somebody's notes, not a database\n" * 100


def test_another_programs_database_is_left_untouched(tmp_path):
    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE results (id INTEGER, score REAL)")
    db.execute("INSERT INTO results VALUES (1, 0.5)")
    db.commit()
    db.close()
    with pytest.warns(JudgeCacheWarning) as record, SQLiteJudgeCache(path) as store:
        assert_behaves_as_empty(store, record, "not a scorespec judge cache")
    db = sqlite3.connect(path)
    assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("results",)]
    assert db.execute("SELECT * FROM results").fetchall() == [(1, 0.5)]
    db.close()


def test_a_cache_of_another_format_is_not_read(tmp_path):
    path = tmp_path / "judge-cache.sqlite"
    with SQLiteJudgeCache(path) as store:
        store.put("k", CachedAnswer(data=1, raw="1"))
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.warns(JudgeCacheWarning) as record, SQLiteJudgeCache(path) as store:
        assert_behaves_as_empty(store, record, "format 99")


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_a_path_that_cannot_be_a_file_is_reported_once(tmp_path, where):
    if where == "a folder":
        path = tmp_path / "judge-cache.sqlite"
        path.mkdir()
    else:
        (tmp_path / "plain").write_text("a file, not a folder")
        path = tmp_path / "plain" / "judge-cache.sqlite"
    with pytest.warns(JudgeCacheWarning) as record, SQLiteJudgeCache(path) as store:
        assert_behaves_as_empty(store, record, "cannot be opened")


def test_a_file_locked_by_another_connection_is_reported_once(tmp_path):
    path = tmp_path / "judge-cache.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE held (x)")
    try:
        with pytest.warns(JudgeCacheWarning) as record, SQLiteJudgeCache(path, busy_timeout_s=0.05) as store:
            assert_behaves_as_empty(store, record, "locked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_cache_locked_while_in_use_stops_writing_and_serving(tmp_path):
    path = tmp_path / "judge-cache.sqlite"
    store = SQLiteJudgeCache(path, busy_timeout_s=0.05)
    store.put("k", CachedAnswer(data=1, raw="1"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # holds the write lock; readers may go on (write-ahead log)
    try:
        with pytest.warns(JudgeCacheWarning, match="locked") as record:
            store.put("k2", CachedAnswer(data=2, raw="2"))
            assert store.get("k") is None
            store.put("k3", CachedAnswer(data=3, raw="3"))
        assert len(record) == 1
        assert (store.stats().writes, store.stats().dropped_writes) == (1, 2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()
    assert set(raw_rows(path)) == {"k"}


def test_a_database_corrupted_inside_is_reported_once_and_never_serves_a_wrong_answer(tmp_path):
    path = tmp_path / "judge-cache.sqlite"
    with SQLiteJudgeCache(path) as store:
        for i in range(100):
            store.put(f"key-{i}", answer(i))
    size = path.stat().st_size
    with open(path, "r+b") as f:  # every page but the first (the schema) overwritten
        f.seek(4096)
        f.write(b"\xff" * (size - 4096))
    with warnings.catch_warnings(record=True) as record, SQLiteJudgeCache(path) as store:
        warnings.simplefilter("always")
        served = [store.get(f"key-{i}") for i in range(100)]
        store.put("new", CachedAnswer(data=1, raw="1"))
        assert served == [None] * 100
        assert "malformed" in store.disabled_reason
        assert len([w for w in record if issubclass(w.category, JudgeCacheWarning)]) == 1


# the keys of one call through judges built from a model string, as the code before the settings were
# resolved in one place computed them (its cache must answer every call of the code after)
KEPT_KEYS = [
    ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "SCORESPEC_MODE": "json_schema"}, "openai/gpt-4o-mini", {},
     "e4d29436c750d4ad44a4a953252ed0c26091dfa4ae3ff183d00732fa7ceac7c4"),
    ({}, "openai/gpt-4o-mini", {"base_url": "http://127.0.0.1:9/v1"},
     "a15e14e63bee18be7d8e577b89ed55a4ddeb366d110cf43ec510f67d49de0399"),
    ({}, "openai/gpt-4o-mini", {}, "50a25a947a9152dbd8ba4854f73fcc8cf2c8c4c1ee9201b2e644f1682580331a"),
    ({"OLLAMA_BASE_URL": "http://127.0.0.1:8/v1"}, "ollama/qwen2.5:7b", {},
     "2b09d9f6194ed998dd3c739c1f562d2dc4c8c24110b2bf002e54e23a87aca1a4"),
    ({}, "ollama/qwen2.5:7b", {}, "6109da17851123633f755d2a979f7ebbdc3aa3f6641210ff0ae03342c5098978"),
    ({"ANTHROPIC_BASE_URL": "http://127.0.0.1:7"}, "anthropic/claude-3-5-haiku-latest", {},
     "18d125bc43e4cc4c380b2bf44d6b3b7f5d759e566ff547ed4372cdcb32643421"),
]


@pytest.mark.parametrize("environ, model, given, key", KEPT_KEYS)
def test_a_judge_built_from_its_resolved_settings_keeps_the_keys_of_before(monkeypatch, environ, model, given, key):
    from engine.bind.stack import make_judge
    from engine.judge.call import JudgeCall
    from engine.judge.contract import AnswerContract

    for name in ("SCORESPEC_MODEL", "SCORESPEC_MODE", "OPENAI_BASE_URL", "OLLAMA_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    if model.startswith("anthropic/"):
        pytest.importorskip("anthropic")
    schema = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
              "required": ["verdict"]}
    call = JudgeCall("analyze", [{"role": "user", "content": "Is the sky blue?"}], AnswerContract(schema))
    judge = make_judge(model, api_key="k", **given)
    assert judge.provider.cache_identity.call_identity(call).key() == key

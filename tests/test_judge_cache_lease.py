"""Calls in flight across processes (engine.judge.cache.lease): with a Redis cache two machines
asking the same call at once make it once; a holder that fails or dies lets the other ask.

Each "machine" is a judge with a cache object of its own on the same real redis-server (as two
processes have), so the in-loop single flight of one cache object does not join them; the real
openai + instructor path asks the fake OpenAI-compatible server, which counts requests."""

from __future__ import annotations

import asyncio

import pytest

from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.core.errors import ScorerRunError
from engine.judge.cache import lease as judge_cache_lease
from engine.judge.cache.redis_backend import RedisJudgeCache
from engine.judge.call import JudgeCall
from engine.judge.contract import AnswerContract
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

SCHEMA = {"type": "object", "required": ["note"], "properties": {"note": {"type": "string"}}}


def a_call() -> JudgeCall:
    return JudgeCall("summary", [{"role": "user", "content": "Verdicts: yes yes"}], AnswerContract(SCHEMA, ()),
                     max_reasks=0)


def machine(server: FakeOpenAIServer, url: str):
    """A judge as one machine has it: its own cache object on the shared server."""
    return make_judge("openai/fake-model", base_url=server.base_url, api_key="test",
                      retry=RetryPolicy(max_retries=0, base_s=0.01), cache=RedisJudgeCache(url))


def test_two_machines_asking_one_call_at_once_make_it_once(redis_url):
    with FakeOpenAIServer({"note": "2 yes"}, latency_s=0.3) as server:
        first, second = machine(server, redis_url), machine(server, redis_url)

        async def both():
            return await asyncio.gather(first.ask(a_call()), second.ask(a_call()))

        answers = asyncio.run(both())
        assert len(server.requests) == 1
    assert [a.data for a in answers] == [{"note": "2 yes"}] * 2
    assert sorted((a.usage.cache_misses, a.usage.cache_hits, a.usage.calls) for a in answers) == [(0, 1, 0), (1, 0, 1)]


def test_when_the_asking_machine_fails_the_waiting_one_asks(redis_url):
    with FakeOpenAIServer({"note": "later"}, latency_s=0.2) as server:
        server.script(Fault.status(500))  # the first request fails (no retries here)
        first, second = machine(server, redis_url), machine(server, redis_url)

        async def both():
            return await asyncio.gather(first.ask(a_call()), second.ask(a_call()), return_exceptions=True)

        outcomes = asyncio.run(both())
        assert len(server.requests) == 2
    failed = [o for o in outcomes if isinstance(o, ScorerRunError)]
    answered = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(failed) == 1 and failed[0].kind == "transport"
    assert len(answered) == 1 and answered[0].data == {"note": "later"} and answered[0].usage.cache_misses == 1


def test_a_lease_left_by_a_dead_machine_expires_and_the_call_is_asked(redis_url, monkeypatch):
    monkeypatch.setattr(judge_cache_lease, "LEASE_S", 0.5)
    dead = RedisJudgeCache(redis_url)
    with FakeOpenAIServer({"note": "2 yes"}) as server:
        judge = machine(server, redis_url)
        key = judge.identity.call_identity(a_call()).key()
        assert dead.claim(key, 0.5) and not dead.claim(key, 0.5)  # held, and never renewed nor released
        answer = asyncio.run(judge.ask(a_call()))
        assert len(server.requests) == 1
    assert answer.data == {"note": "2 yes"} and answer.usage.cache_misses == 1


def test_a_lease_is_held_renewed_and_released_only_by_its_holder(redis_url):
    import redis

    holder, other = RedisJudgeCache(redis_url), RedisJudgeCache(redis_url)
    assert holder.claim("k", 0.5) is True
    assert other.claim("k", 30) is False
    other.release("k")  # not its lease: nothing happens
    holder.renew("k", 30)
    with redis.Redis.from_url(redis_url) as client:
        assert client.pttl(holder.prefix + "lease:k") > 20_000
        holder.release("k")
        assert client.exists(holder.prefix + "lease:k") == 0
    assert other.claim("k", 30) is True
    assert holder.stats().entries == 0  # a lease is no cached answer


def test_a_lost_server_never_holds_a_call_back(own_redis_server):
    cache = RedisJudgeCache(own_redis_server.url)
    own_redis_server.kill()
    with pytest.warns(Warning):
        assert cache.claim("k", 30) is True  # ask, uncached
    cache.renew("k", 30)
    cache.release("k")
    assert cache.disabled_reason is not None


def test_an_answer_stored_just_before_the_lease_is_taken_is_served_not_asked_again(redis_url):
    # the holder stored its answer and released its lease between this process's last look and its claim
    cache = RedisJudgeCache(redis_url)
    served = object()
    answer, lease = asyncio.run(judge_cache_lease.claim_or_wait(cache, "k", lambda: served))
    assert answer is served and lease is None
    assert cache.claim("k", 30) is True  # and the lease it took to find that out was given back
    cache.release("k")

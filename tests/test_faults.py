"""engine.testing.faults.FaultInjector: seeded, order-independent fault draws at given rates."""

from __future__ import annotations

import pytest

from engine.testing.fake_replies import Fault
from engine.testing.faults import KINDS, REFUSAL, FaultInjector


def request(i: int, stage: str = "preprocess") -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": f"ITEM-{i}"}],
            "tools": [{"type": "function", "function": {"name": stage}}]}


def answer(req: dict) -> dict:
    return {"claims": [req["messages"][0]["content"]]}


def test_rates_are_met_and_counted():
    injector = FaultInjector(answer, {"rate_limit": 0.1, "truncated": 0.05, "refusal": 0.05}, seed=3)
    replies = [injector(request(i)) for i in range(4000)]
    faults = sum(1 for r in replies if r == REFUSAL or isinstance(r, Fault))
    assert injector.requests == 4000
    assert sum(injector.injected.values()) == faults
    assert set(injector.injected) == {"rate_limit", "truncated", "refusal"}
    assert 340 <= injector.injected["rate_limit"] <= 460  # 400 expected
    assert 140 <= injector.injected["truncated"] <= 260   # 200 expected
    assert sum(1 for r in replies if isinstance(r, Fault) and r.kind == "status" and r.code == 429) == \
        injector.injected["rate_limit"]
    assert all(r == answer(request(i)) for i, r in enumerate(replies) if isinstance(r, dict))


def test_draws_depend_on_content_and_repeats_not_on_order():
    rates = {kind: 0.05 for kind in KINDS}  # 60% faulted
    forward, backward = FaultInjector(answer, rates, seed=11), FaultInjector(answer, rates, seed=11)
    kinds_fwd = {i: [forward.draw(request(i)) for _ in range(3)] for i in range(200)}
    kinds_bwd = {i: [backward.draw(request(i)) for _ in range(3)] for i in reversed(range(200))}
    assert kinds_fwd == kinds_bwd
    assert forward.injected == backward.injected
    assert any(k[0] != k[1] for k in kinds_fwd.values())  # a retry of the same request draws again
    other = FaultInjector(answer, rates, seed=12)
    assert [other.draw(request(i)) for i in range(200)] != [kinds_fwd[i][0] for i in range(200)]


def test_draws_ignore_the_tool_call_ids_a_reask_echoes():
    def reask(call_id: str) -> dict:
        req = request(5)
        req["messages"] = req["messages"] + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "preprocess", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call_id, "content": "fix it"}]
        return req

    rates = {kind: 0.05 for kind in KINDS}
    one, two = FaultInjector(answer, rates, seed=5), FaultInjector(answer, rates, seed=5)
    assert [one.draw(reask(f"call_fake_{i}")) for i in range(50)] == [two.draw(reask("x")) for _ in range(50)]
    changed = reask("x")
    changed["messages"][2]["content"] = "fix it differently"
    assert [one.draw(changed) for _ in range(50)] != [two.draw(reask("x")) for _ in range(50)]


def test_every_kind_builds_its_reply():
    for kind in KINDS:
        injector = FaultInjector(answer, {kind: 1.0}, retry_after_s=0.25, timeout_delay_s=3.0)
        reply = injector(request(1))
        assert injector.injected == {kind: 1}
        expected = {
            "rate_limit": Fault.status(429, retry_after=0.25), "rate_limit_no_retry_after": Fault.status(429),
            "server_error_500": Fault.status(500), "bad_gateway_502": Fault.status(502),
            "unavailable_503": Fault.status(503), "reset": Fault.reset(),
            "timeout": Fault.delay(3.0, then=answer), "unreadable_body": Fault.malformed_body(),
            "malformed_json": Fault.invalid_json('{"claims": '), "wrong_shape": {"result": "done", "items": [1, 2, 3]},
            "truncated": Fault.truncated({"claims": ["ITEM-1"]}), "refusal": REFUSAL,
        }[kind]
        assert reply == expected, kind
    off = FaultInjector(answer, {"reset": 1.0})
    off.enabled = False
    assert off(request(1)) == {"claims": ["ITEM-1"]} and not off.injected


@pytest.mark.parametrize("rates, message", [({"oops": 0.1}, "unknown fault kind"),
                                            ({"reset": 0.7, "timeout": 0.5}, "sum to at most 1")])
def test_bad_rates_are_rejected(rates, message):
    with pytest.raises(ValueError, match=message):
        FaultInjector(answer, rates)

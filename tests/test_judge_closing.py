"""A judge used directly (``await judge.ask(call)``) closes its HTTP connections when used as an
async context manager, so aiohttp never warns of an unclosed client session."""

from __future__ import annotations

import asyncio
import gc
import warnings

from engine.bind.stack import make_judge
from engine.judge.call import JudgeCall
from engine.judge.contract import AnswerContract
from engine.testing.fake_openai import FakeOpenAIServer

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["verdict"]}


def test_a_judge_in_async_with_closes_its_session_and_nothing_warns(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        judge = make_judge("openai/test-model", base_url=server.base_url)

        async def ask() -> object:
            async with judge:
                return await judge.ask(JudgeCall("s", [{"role": "user", "content": "Is it so?"}],
                                                 AnswerContract(SCHEMA)))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = asyncio.run(ask())
            gc.collect()
    assert answer.data == {"verdict": "yes"}
    assert [str(w.message) for w in caught if "nclosed" in str(w.message)] == []

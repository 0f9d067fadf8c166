"""`--optimizer-model` reaches its model as the scorer's judge is reached: at the same base URL
and through the same judge-call cache (a second alignment asks the optimiser nothing again)."""

from __future__ import annotations

from test_align import _data, _server_reply

from engine import load_scorer
from engine.alignment.loop import align
from engine.testing.fake_openai import FakeOpenAIServer


def test_the_optimizer_model_uses_the_base_url_and_the_cache_of_the_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    data = _data(tmp_path / "labelled.jsonl", 40)
    with FakeOpenAIServer(_server_reply) as server:
        for name in ("first", "second"):
            parent = load_scorer("faithfulness_quick", model="openai/judge-model", base_url=server.base_url,
                                 cache=str(tmp_path / "cache.sqlite"))
            result = align(parent, data, positive=["faithful"], negative=["hallucinated"], out_dir=tmp_path / name,
                           name=name, strategies="instructions", candidates=1, optimizer_model="openai/opt-model")
            assert result.candidates[0].dropped is None, result.notes
    asked = [r["model"] for r in server.requests]
    assert asked.count("opt-model") == 1  # asked once, at the judge's base URL; the second time cached
    assert result.child == "second"

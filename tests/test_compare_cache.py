"""`scorespec compare` with the judge-call cache: identical versions tie everywhere and make no
judge call the second time.

The cache layer (`engine.judge.cache.layer`) and the commands' ``--cache`` flags come from the
judge-cache branch; until both branches are merged this file has nothing to test and is skipped
as a whole (the comparison itself is tested in tests/test_compare.py).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("engine.judge.cache.layer", reason="the judge-call cache is not in this tree yet")

from test_compare import server_reply, twenty_items, write_jsonl  # noqa: E402

import engine.cli.compare  # noqa: E402,F401  (registers compare)
from engine.cli.main import app  # noqa: E402

# each item asks its own claims question (the #-word only tells items apart); the verdict
# questions are the same for every item with the same claims: 20 + 2 distinct judge calls
ITEMS = [{**item, "output": f"{item['output']} #{item['id']}"} for item in twenty_items()]
DISTINCT_CALLS = 20 + 2

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None}


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def test_identical_versions_make_no_judge_call_the_second_time(verdict_spec, fake_server, tmp_path):
    spec = verdict_spec()
    fake_server.reply = server_reply
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    args = ["compare", spec, f"again={spec}", "--data", data, "--model", "openai/x", "--base-url",
            fake_server.base_url, "--cache", tmp_path / "cache.sqlite", "--concurrency", "1", "--quiet", "--json"]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    (c,) = json.loads(first.stdout)["comparisons"]
    assert c["paired"]["meanDifference"] == 0 and (c["paired"]["wins"], c["paired"]["ties"]) == (0, 20)
    assert c["paired"]["pValue"] is None and c["statusChanges"] == [] and c["movers"] == []
    # one item at a time: the second version's calls are the first one's, answered from the cache
    assert len(fake_server.requests) == DISTINCT_CALLS
    second = invoke(*args)
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["comparisons"][0]["paired"]["ties"] == 20
    assert len(fake_server.requests) == DISTINCT_CALLS  # the second time: no judge call at all
    uncached = invoke(*args[:-6], "--no-cache", "--concurrency", "1", "--quiet", "--json")
    assert uncached.exit_code == 0, uncached.output
    assert len(fake_server.requests) == DISTINCT_CALLS + 20 * 2 * 2  # without it: every call, both versions

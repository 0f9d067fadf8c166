"""The judge-call cache on the command line: on by default for run, eval and calibrate;
--cache PATH, --no-cache, --refresh; the per-scorer calls and cache-hits line; `scorespec cache
stats` and `scorespec cache clear`. The default cache file is the test's own
(``$SCORESPEC_CACHE_DB``, set by tests/conftest.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval and calibrate)
from engine.cli.cache import parse_age
from engine.cli.main import app
from engine.testing.fake_openai import FakeOpenAIServer

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}


def reply(request: dict) -> dict:
    """Faithfulness: two claims of the item's own output; every claim supported."""
    stage = request["tools"][0]["function"]["name"]
    text = request["messages"][-1]["content"]
    if stage == "preprocess":
        output = text.rsplit("<<<\n", 1)[1].split("\n>>>", 1)[0]
        return {"claims": [f"{output} one", f"{output} two"]}
    return {"verdict": "yes", "reason": "The context says so."}


@pytest.fixture
def server():
    with FakeOpenAIServer(reply) as fake:
        yield fake


@pytest.fixture
def data(tmp_path) -> str:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": i, "output": f"Output {i}.", "context": ["Everything holds."],
                                        "label": "good"}) + "\n" for i in range(2)), encoding="utf-8")
    return str(path)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


def judged(server, *args: str) -> tuple:
    """Run a judging command against the fake server: (result, requests it made)."""
    before = len(server.requests)
    result = invoke(*args, "--model", "openai/test-model", "--base-url", server.base_url)
    return result, len(server.requests) - before


def test_eval_uses_the_default_cache_and_says_what_it_saved(server, data):
    first, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet")
    assert first.exit_code == 0, first.output
    assert asked == 6
    assert "faithfulness: 2 items · 6 judge calls · 0 cache hits" in first.stdout
    assert Path(os.environ["SCORESPEC_CACHE_DB"]).is_file()
    again, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--json")
    assert again.exit_code == 0, again.output
    assert asked == 0
    assert "faithfulness: 2 items · 0 judge calls · 6 cache hits" in again.stderr
    usage = json.loads(again.stdout)["usage"]["faithfulness"]
    assert (usage["calls"], usage["cacheHits"], usage["cacheMisses"], usage["tokensIn"]) == (0, 6, 0, 0)


def test_no_cache_refresh_and_another_cache_file(server, data, tmp_path):
    judged(server, "eval", "faithfulness", "--data", data, "--quiet")
    uncached, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--no-cache")
    assert (uncached.exit_code, asked) == (0, 6)
    assert "· 6 judge calls · 0 cache hits" in uncached.stdout
    refreshed, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--refresh")
    assert (refreshed.exit_code, asked) == (0, 6)
    other = tmp_path / "other" / "cache.sqlite"
    elsewhere, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", str(other))
    assert (elsewhere.exit_code, asked) == (0, 6)
    assert other.is_file()
    _, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", str(other))
    assert asked == 0


@pytest.mark.parametrize("flags, message", [
    (("--no-cache", "--refresh"), "--refresh asks again and overwrites the cache: it cannot go with --no-cache"),
    (("--no-cache", "--cache", "x.sqlite"), "--cache and --no-cache: give one of them"),
])
def test_contradictory_cache_flags_are_an_error(server, data, flags, message):
    result, asked = judged(server, "eval", "faithfulness", "--data", data, *flags)
    assert (result.exit_code, asked) == (2, 0)
    assert f"error: {message}" in result.stderr


def test_run_shows_the_hits_of_the_item(server):
    args = ("run", "faithfulness", "--output", "Output 0.", "--context", "Everything holds.")
    first, asked = judged(server, *args)
    assert (first.exit_code, asked) == (0, 3)
    assert "judge cache: 0 hit(s) · 3 miss(es)" in first.stdout
    again, asked = judged(server, *args)
    assert (again.exit_code, asked) == (0, 0)
    assert "judge cache: 3 hit(s) · 0 miss(es)" in again.stdout
    assert "score 1" in again.stdout


def test_calibrate_is_cached_too(server, data):
    args = ("calibrate", "faithfulness", "--data", data, "--positive", "good", "--quiet")
    first, asked = judged(server, *args)
    assert (first.exit_code, asked) == (0, 6), first.output
    again, asked = judged(server, *args)
    assert (again.exit_code, asked) == (0, 0), again.output
    assert "faithfulness: 2 items · 0 judge calls · 6 cache hits" in again.stdout


def test_an_unusable_cache_is_one_warning_and_the_run_goes_on(server, data, tmp_path):
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database" * 64)
    result, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", str(broken))
    assert (result.exit_code, asked) == (0, 6), result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning: judge cache")]
    assert len(lines) == 1 and "going on without the cache" in lines[0]
    assert "faithfulness: 2 items · 6 judge calls · 0 cache hits" in result.stdout


def test_cache_stats_and_clear(server, data):
    empty = invoke("cache", "stats")
    assert empty.exit_code == 0
    assert f"judge cache {os.environ['SCORESPEC_CACHE_DB']}" in empty.stdout
    assert "empty (no file yet" in empty.stdout
    judged(server, "eval", "faithfulness", "--data", data, "--quiet")
    stats = invoke("cache", "stats")
    assert "6 answers · " in stats.stdout and "  openai/test-model: 6" in stats.stdout
    figures = json.loads(invoke("cache", "stats", "--json").stdout)
    assert (figures["entries"], figures["perModel"]) == (6, {"openai/test-model": 6})
    other = invoke("cache", "clear", "--model", "openai/test-modle")
    assert other.stdout.startswith("removed 0 cached answers (of model")
    assert other.stderr == ("no cached answer is of model openai/test-modle (did you mean 'openai/test-model'?)\n")
    kept = invoke("cache", "clear", "--older-than", "30d")
    assert kept.stdout.startswith("removed 0 cached answers (older than 30d)")
    cleared = invoke("cache", "clear", "--model", "openai/test-model", "--older-than", "0s")
    assert cleared.stdout.startswith("removed 6 cached answers (older than 0s, of model openai/test-model)")
    assert json.loads(invoke("cache", "stats", "--json").stdout)["entries"] == 0
    _, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet")
    assert asked == 6


def test_cache_clear_refuses_an_age_without_a_unit():
    result = invoke("cache", "clear", "--older-than", "30")
    assert result.exit_code == 2
    assert "--older-than '30': expected a number and a unit, e.g. 30d" in result.stderr


@pytest.mark.parametrize("text, seconds", [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("45s", 45),
                                           ("2w", 14 * 86400), ("1.5h", 5400)])
def test_ages_read_as_seconds(text, seconds):
    assert parse_age(text) == seconds


# --------------------------------------------------------------------------- a Redis server as the cache


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_eval_stats_and_clear_on_a_redis_cache(server, data, redis_url):
    url = redis_url + "?ttl=30d"
    first, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", url)
    assert (first.exit_code, asked) == (0, 6), first.output
    again, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", url)
    assert (again.exit_code, asked) == (0, 0), again.output
    assert "faithfulness: 2 items · 0 judge calls · 6 cache hits" in again.stdout
    assert not Path(os.environ["SCORESPEC_CACHE_DB"]).exists()
    stats = invoke("cache", "stats", "--cache", url)
    assert stats.stdout.splitlines()[:2] == [f"judge cache {url}", "entries expire 30d after they are stored"]
    assert "6 answers · " in stats.stdout and "  openai/test-model: 6" in stats.stdout
    figures = json.loads(invoke("cache", "stats", "--cache", redis_url, "--json").stdout)
    assert (figures["location"], figures["entries"], figures["perModel"]) == (redis_url, 6, {"openai/test-model": 6})
    assert figures["sizeBytes"] > 0 and figures["disabledReason"] is None
    kept = invoke("cache", "clear", "--cache", url, "--older-than", "1d")
    assert kept.stdout == f"removed 0 cached answers (older than 1d) from {url}\n"
    cleared = invoke("cache", "clear", "--cache", url, "--model", "openai/test-model")
    assert cleared.stdout == f"removed 6 cached answers (of model openai/test-model) from {url}\n"
    _, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", url)
    assert asked == 6


def test_scorespec_cache_url_is_the_default_and_cache_overrides_it(server, data, redis_url, monkeypatch, tmp_path):
    monkeypatch.setenv("SCORESPEC_CACHE_URL", redis_url)
    first, asked = judged(server, "run", "faithfulness", "--output", "Output 0.", "--context", "Everything holds.")
    assert (first.exit_code, asked) == (0, 3), first.output
    assert not Path(os.environ["SCORESPEC_CACHE_DB"]).exists()  # the URL wins over the file's variable
    assert json.loads(invoke("cache", "stats", "--json").stdout)["entries"] == 3
    again, asked = judged(server, "run", "faithfulness", "--output", "Output 0.", "--context", "Everything holds.")
    assert (again.exit_code, asked) == (0, 0)
    file_cache = str(tmp_path / "file.sqlite")
    elsewhere, asked = judged(server, "run", "faithfulness", "--output", "Output 0.", "--context", "Everything holds.",
                              "--cache", file_cache)
    assert (elsewhere.exit_code, asked) == (0, 3)
    assert Path(file_cache).is_file()
    uncached, asked = judged(server, "run", "faithfulness", "--output", "Output 0.", "--context", "Everything holds.",
                             "--no-cache")
    assert (uncached.exit_code, asked) == (0, 3)
    assert invoke("cache", "clear").stdout == f"removed 3 cached answers from {redis_url}\n"


@pytest.mark.parametrize("args, variable, message", [
    (("--cache", "memcached://127.0.0.1:11211"), None,
     "error: cache memcached://127.0.0.1:11211: a cache URL starts with redis:// or rediss://"),
    (("--cache", "redis://127.0.0.1/0?ttl=30"), None,
     "error: cache URL redis://127.0.0.1/0?ttl=30: ttl '30': expected a number and a unit"),
    ((), "rediss:/127.0.0.1", "error: $SCORESPEC_CACHE_URL: cache rediss:/127.0.0.1: a cache URL starts with"),
])
def test_a_cache_url_that_cannot_name_a_cache_is_an_error(server, data, monkeypatch, args, variable, message):
    if variable:
        monkeypatch.setenv("SCORESPEC_CACHE_URL", variable)
    for command in (("eval", "faithfulness", "--data", data), ("cache", "stats")):
        result, asked = judged(server, *command, *args) if command[0] == "eval" else (invoke(*command, *args), 0)
        assert (result.exit_code, asked) == (2, 0), result.output
        assert result.stderr.startswith(message)


def test_an_unreachable_redis_server_is_one_warning_and_the_run_goes_on(server, data):
    url = f"redis://:s3cret@127.0.0.1:{closed_port()}/0"
    result, asked = judged(server, "eval", "faithfulness", "--data", data, "--quiet", "--cache", url)
    assert (result.exit_code, asked) == (0, 6), result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning: judge cache")]
    assert len(lines) == 1 and "cannot be reached" in lines[0] and "going on without the cache" in lines[0]
    assert "s3cret" not in result.output
    assert "faithfulness: 2 items · 6 judge calls · 0 cache hits" in result.stdout
    stats = invoke("cache", "stats", "--cache", url)
    assert stats.exit_code == 0
    assert stats.stdout.splitlines()[1].startswith("not usable: cannot be reached")
    cleared = invoke("cache", "clear", "--cache", url)
    assert cleared.exit_code == 2 and "cannot be reached" in cleared.stderr


def test_cache_stats_and_clear_on_a_corrupt_file_say_why_once_without_the_run_wording(tmp_path):
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database" * 64)
    stats = invoke("cache", "stats", "--cache", str(broken))
    assert stats.exit_code == 0, stats.output
    assert stats.stdout.splitlines()[1].startswith("not usable: ")
    assert "going on without the cache" not in stats.output
    cleared = invoke("cache", "clear", "--cache", str(broken))
    assert cleared.exit_code == 2
    assert cleared.stderr.count("judge cache") == 1 and "going on without the cache" not in cleared.output

"""Secrets: a canary API key, given as `api_key=` or in $OPENAI_API_KEY, never appears in results
(JSONL), the SQLite store, logs, stdout/stderr, error messages (a server that echoes the request's
headers included) or the reprs of the judge, the scorer and the clients — end to end against the
fake OpenAI-compatible server, with faults."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from engine import load_scorer, run_evals
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

CANARY = "sk-canary-7f3a9c2e5b1d4f608e9a7c3b2d1e0f4a5b6c7d8e"
SECRET_PART = CANARY[len("sk-canary-"):][:10]  # a truncated key would still leak this

CLAIMS = {"claims": ["The sky is blue."]}
VERDICT = {"verdict": "yes", "reason": "stated"}  # faithfulness verifies one claim per call


def _answer(request: dict) -> dict:
    return CLAIMS if "claims" in json.dumps(request.get("tools")) else VERDICT


def _faults() -> list:
    """A fault per item: the 401/403 echo the Authorization header and are not retried; the
    500s echo it and are retried (the item then succeeds); a reset; an unreadable body."""
    # a refused key stops the run after the items in flight, so the 401 comes last
    return [Fault.status(500, echo_headers=True), Fault.status(429, retry_after=0, echo_headers=True),
            Fault.reset(), Fault.malformed_body(f'{{"error": "bad key {CANARY}"'.encode()), {"claims": []},
            {"claims": []}, {"claims": []}, Fault.status(401, echo_headers=True)]


def _no_canary(where: str, text: str) -> None:
    assert CANARY not in text, f"the API key leaked into {where}"
    assert SECRET_PART not in text, f"part of the API key leaked into {where}"


def _files_text(*paths: Path) -> str:
    out = []
    for path in paths:
        for candidate in (path, Path(str(path) + "-wal"), Path(str(path) + "-journal")):
            if candidate.exists():
                out.append(candidate.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(out)


@pytest.mark.parametrize("via", ["argument", "environment"])
def test_canary_key_never_leaks_in_an_eval_with_faults(tmp_path, monkeypatch, caplog, capsys, via):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_LOG", "debug")
    with FakeOpenAIServer(_answer) as server:
        server.script(*_faults())
        if via == "environment":
            monkeypatch.setenv("OPENAI_API_KEY", CANARY)
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            judge = make_judge("openai/fake-model", retry=RetryPolicy(max_retries=1, base_s=0.01))
        else:
            monkeypatch.delenv("OPENAI_API_KEY", raising=False)
            judge = make_judge("openai/fake-model", base_url=server.base_url, api_key=CANARY,
                               retry=RetryPolicy(max_retries=1, base_s=0.01))
        scorer = load_scorer("faithfulness", judge=judge, context=["The sky is blue."])
        data = [{"id": f"item-{i}", "output": "The sky is blue."} for i in range(8)]
        out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
        summary = run_evals(data, scorers=[scorer], out=out, store=store, concurrency=1)
        server.script(Fault.status(403, body={"error": {"message": f"key {CANARY} is not allowed here"}}))
        refused = run_evals(data[:1], scorers=[scorer], out=tmp_path / "refused.jsonl", store=store, concurrency=1)
        requests = list(server.requests)

    # the key did reach the server (so the test would see a leak), on every request
    assert len(requests) >= 8
    assert refused.stopped and CANARY not in refused.stopped
    _no_canary("the refused run's results", (tmp_path / "refused.jsonl").read_text())
    results = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = sorted((r["error"] or {}).get("kind", "scored") for r in results)
    assert kinds.count("scored") >= 3 and {"judge", "transport"} & set(kinds)  # faults did fail items
    failures = " ".join(r["error"]["message"] for r in results if r["error"])
    assert "Incorrect API key provided. Request headers:" in failures  # the echo reached the message …
    assert "Bearer ***" in failures  # … with the key replaced
    _no_canary("the results file", out.read_text())
    _no_canary("the SQLite store", _files_text(store))
    _no_canary("the summary", json.dumps(summary.to_json_dict()))
    _no_canary("the logs", "\n".join(r.getMessage() for r in caplog.records) + caplog.text)
    captured = capsys.readouterr()
    _no_canary("stdout/stderr", captured.out + captured.err)
    provider = judge.provider  # the innermost layer, which holds the client
    for obj in (scorer, judge, provider, provider.client, getattr(provider.client, "client", None), scorer.plan,
                getattr(provider, "window", None)):
        _no_canary(f"repr({type(obj).__name__})", repr(obj) + str(obj))


def test_a_key_cut_by_message_truncation_is_still_redacted(tmp_path):
    """Error texts are cut (to 300 or 500 characters); the key is replaced before the cut, so no
    prefix of it survives wherever the cut falls."""
    faults = [Fault.status(401, body={"error": {"message": "x" * n + " key: " + CANARY}}) for n in range(200, 520, 9)]
    with FakeOpenAIServer() as server:
        server.script(*faults)
        judge = make_judge("openai/fake-model", base_url=server.base_url, api_key=CANARY,
                           retry=RetryPolicy(max_retries=0, base_s=0.01))
        scorer = load_scorer("faithfulness", judge=judge, context=["c"])
        messages = [scorer.run(output="a").error.message for _ in faults]
    assert all("HTTP 401" in m for m in messages)
    assert sum("key: ***" in m for m in messages) >= 5  # short enough to keep the key's place
    assert sum("key: " not in m for m in messages) >= 5  # cut before it
    for message in messages:
        _no_canary("a truncated error message", message)


def test_canary_key_never_leaks_from_the_cli(tmp_path):
    """`scorespec eval` and `scorespec run` with the key in the environment, OPENAI_LOG=debug,
    a 401 that echoes headers: nothing of the key on stdout, stderr, the out file or the store."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": "The sky is blue.", "context": ["The sky is blue."]}) + "\n"
                            for i in range(3)), encoding="utf-8")
    out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
    with FakeOpenAIServer(_answer) as server:
        server.script(Fault.status(401, echo_headers=True), Fault.status(401, echo_headers=True))
        env = {**os.environ, "OPENAI_API_KEY": CANARY, "OPENAI_LOG": "debug", "PYTHONPATH": str(ROOT)}
        env.pop("SCORESPEC_MODEL", None)
        base = [sys.executable, "-m", "engine"]
        evaluated = subprocess.run(
            base + ["eval", "faithfulness", "--data", str(data), "--model", "openai/fake-model", "--base-url",
                    server.base_url, "--out", str(out), "--store", str(store), "--concurrency", "1"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        server.script(Fault.status(401, echo_headers=True))
        single = subprocess.run(
            base + ["run", "faithfulness", "--output", "x", "--context", "x", "--model", "openai/fake-model",
                    "--base-url", server.base_url, "--json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert evaluated.returncode == 2, evaluated.stderr  # one item failed (the 401s)
    assert single.returncode == 2, single.stderr
    assert "Bearer ***" in single.stdout + single.stderr
    for where, text in (("eval stdout", evaluated.stdout), ("eval stderr", evaluated.stderr),
                        ("run stdout", single.stdout), ("run stderr", single.stderr),
                        ("the out file", out.read_text()), ("the store", _files_text(store))):
        _no_canary(where, text)


def test_every_api_key_in_the_environment_is_redacted(monkeypatch):
    """Providers reached through instructor's from_provider read their own variables
    (GROQ_API_KEY, MISTRAL_API_KEY…): any *_API_KEY value is redacted, whichever judge is made."""
    other = "gsk-canary-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    monkeypatch.setenv("GROQ_API_KEY", other)
    monkeypatch.setenv("Mistral_Api_Key", CANARY)
    judge = make_judge("openai/test-model", base_url="http://127.0.0.1:9/v1", api_key="sk-given-0123456789")
    text = f"echo: Bearer {other} / {CANARY} / sk-given-0123456789"
    assert judge.provider._redact(text) == "echo: Bearer *** / *** / ***"
    made = logging.getLogRecordFactory()("httpx", logging.ERROR, __file__, 1, "body %s", (other,), None)
    assert made.getMessage() == "body ***"


def test_the_settings_fields_never_show_the_api_key():
    import dataclasses
    import json
    import pickle

    from engine.judge.settings import JudgeSettings

    settings = JudgeSettings(model="openai/m", base_url="http://127.0.0.1:9/v1", api_key=CANARY)
    fields = dataclasses.asdict(settings)
    assert CANARY not in repr(fields) and CANARY not in str(fields["api_key"]) and CANARY not in repr(settings)
    with pytest.raises(TypeError):
        json.dumps(fields)  # refused rather than written out
    assert pickle.loads(pickle.dumps(settings)).api_key is None
    assert settings.api_key.reveal() == CANARY and settings == JudgeSettings(
        model="openai/m", base_url="http://127.0.0.1:9/v1", api_key=CANARY)

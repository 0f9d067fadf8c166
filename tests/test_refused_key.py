"""A judge that refuses the API key (HTTP 401 or 403) stops the run after the items in flight,
instead of failing every item of the data one by one; ``--resume`` with a good key finishes it.

OpenAI's error codes page: 401 "Invalid Authentication" / "Incorrect API key provided", 403
"Country, region, or territory not supported" — neither is worth a retry, nor another item."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

SPEC = """\
format: 1
id: verdict
name: Verdict
description: Whether the output is right.
version: 1
fields:
  output: {required: true}
stages:
  - id: judge
    prompt: t/judge.j2
    output_schema:
      type: object
      required: [verdict]
      properties:
        verdict: {type: string, enum: ["yes", "no"]}
score:
  formula: "1 if judge.verdict == 'yes' else 0"
"""
ENV = {"COLUMNS": "250", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "SCORESPEC_MODEL": None}


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_stops_the_run_and_resume_finishes_it(write_spec, tmp_path, status):
    spec = write_spec("verdict", SPEC, {"t/judge.j2": "Is this right?\n{{ run.output }}\n"})
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": f"item {i}"}) + "\n" for i in range(30)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(lambda request: Fault.status(status)) as refusing:
        args = ["eval", str(spec), "--data", str(data), "--quiet", "--no-cache", "--model", "openai/test-model",
                "--out", str(out), "--store", str(tmp_path / "store.sqlite"), "--concurrency", "4", "--json"]
        first = CliRunner().invoke(app, [*args, "--base-url", refusing.base_url], env=ENV)
        asked = len(refusing.requests)
    summary = json.loads(first.stdout)
    assert first.exit_code == 2 and summary["verdict"] == "errors"
    assert summary["stopped"].startswith("the provider refused the request's credentials (")
    assert f"HTTP {status}" in summary["stopped"]
    failed = summary["scorers"]["verdict"]["failed"]
    assert failed == 1 and asked == 1  # the first judge call goes alone: one item fails, asked once
    assert summary["left"] == 29
    with FakeOpenAIServer({"verdict": "yes"}) as accepting:
        second = CliRunner().invoke(app, [*args, "--base-url", accepting.base_url, "--resume"], env=ENV)
        assert len(accepting.requests) == 30  # the refused items asked again, then the ones left
    again = json.loads(second.stdout)
    assert second.exit_code == 0, second.output
    assert (again["verdict"], again["stopped"], again["scorers"]["verdict"]["scored"]) == ("passed", None, 30)


def test_a_server_that_refuses_the_structured_mode_stops_the_run_and_resume_in_another_mode_finishes_it(
        write_spec, tmp_path):
    # a self-hosted OpenAI-compatible server without tool calling answers HTTP 400 with
    # {"error": {"param": "tools", "code": "unsupported_parameter", ...}}, as OpenAI words its errors
    from engine.testing.server_rules import NoToolsRules

    spec = write_spec("verdict", SPEC, {"t/judge.j2": "Is this right?\n{{ run.output }}\n"})
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": f"item {i}"}) + "\n" for i in range(20)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer({"verdict": "yes"}, rules=NoToolsRules()) as server:
        args = ["eval", str(spec), "--data", str(data), "--quiet", "--no-cache", "--model", "openai/test-model",
                "--out", str(out), "--store", str(tmp_path / "store.sqlite"), "--concurrency", "4", "--json",
                "--base-url", server.base_url]
        first = CliRunner().invoke(app, args, env={**ENV, "OPENAI_API_KEY": "k", "SCORESPEC_MODE": "tools"})
        asked = len(server.requests)
        second = CliRunner().invoke(app, [*args, "--resume"],
                                    env={**ENV, "OPENAI_API_KEY": "k", "SCORESPEC_MODE": "json_schema"})
    summary = json.loads(first.stdout)
    assert first.exit_code == 2 and summary["verdict"] == "errors"
    assert summary["stopped"].startswith("the judge's server refused the structured-output mode's parameters (")
    assert f"`scorespec doctor --model openai/test-model --base-url {args[-1]}` finds a mode" \
        in summary["stopped"]
    failed = summary["scorers"]["verdict"]["failed"]
    assert failed == 1 and asked == 1  # the first judge call goes alone
    again = json.loads(second.stdout)
    assert second.exit_code == 0, second.output
    assert (again["verdict"], again["stopped"], again["scorers"]["verdict"]["scored"]) == ("passed", None, 20)

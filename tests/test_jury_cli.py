"""A jury on the command line, against the fake OpenAI server answering per model: a jury of three
with one model down scores every item on two votes with ``--jury-min 2`` and fails every item
naming the model that is down with ``--jury-min 3``; each juror's cache entries are its own; a
jury run resumes with its jury; each juror's usage and cost are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine.testing.fake_openai import FakeOpenAIServer, by_model
from engine.testing.fake_replies import Fault

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None,
       "SCORESPEC_JURY": None, "SCORESPEC_JURY_MIN": None}
JURY = "openai/juror-a,openai/juror-b,openai/juror-c"
DOWN = Fault.status(503, retry_after=0)

SPEC = """\
format: 1
id: verdict_panel
name: Verdict panel
description: Whether the output is right, by a vote.
version: 1
stages:
  - id: judge
    prompt: panel/ask.j2
    output_schema:
      type: object
      required: [verdict]
      properties:
        verdict: {type: string, enum: ["right", "wrong", "unsure"]}
score:
  formula: "1 if judge.verdict == 'right' else 0"
"""


def answers(down: str | None = "juror-c") -> dict:
    """Jurors a and b say right; c says wrong, or is down."""
    found = {"juror-a": {"verdict": "right"}, "juror-b": {"verdict": "right"}, "juror-c": {"verdict": "wrong"}}
    if down:
        found[down] = DOWN
    return found


@pytest.fixture
def spec(tmp_path) -> str:
    (tmp_path / "prompts" / "panel").mkdir(parents=True)
    (tmp_path / "prompts" / "panel" / "ask.j2").write_text("Is this right?\n{{ run.output }}\n", encoding="utf-8")
    (tmp_path / "scorer_specs").mkdir()
    path = tmp_path / "scorer_specs" / "verdict_panel.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return str(path)


@pytest.fixture
def data(tmp_path) -> str:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": i, "output": f"Output {i}."}) + "\n" for i in range(3)),
                    encoding="utf-8")
    return str(path)


def eval_(server: FakeOpenAIServer, spec: str, data: str, *args: str):
    return CliRunner().invoke(app, ["eval", spec, "--data", data, "--base-url", server.base_url, "--json", "--quiet",
                                    *args], env=ENV)


def lines(out: Path) -> list[dict]:
    return [json.loads(line)["result"] if "result" in json.loads(line) else json.loads(line)
            for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]


def asked(server: FakeOpenAIServer, model: str) -> int:
    return sum(1 for request in server.requests if request.get("model") == model)


def test_a_jury_of_three_with_one_model_down_scores_every_item_on_two_votes(spec, data, tmp_path):
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(by_model(answers())) as server:
        result = eval_(server, spec, data, "--jury", JURY, "--jury-min", "2", "--no-cache", "--out", str(out))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    panel = summary["scorers"]["verdict_panel"]
    assert (panel["scored"], panel["failed"], panel["mean"]) == (3, 0, 1.0)
    assert panel["jury"] == {"stages": {"judge": {"questions": 3, "agreeing": 1.0, "kappa": None}},
                             "failed": {"openai/juror-a": 0, "openai/juror-b": 0, "openai/juror-c": 3}}
    for line in lines(out):
        record = line["stages"]["judge"]
        assert record["juryVotes"] == [{"openai/juror-a": "right", "openai/juror-b": "right"}]
        assert record["jurors"]["openai/juror-c"]["error"].startswith("transport: ")
        assert record["jurors"]["openai/juror-c"]["answer"] is None
        assert line["jurors"]["openai/juror-c"]["failed"] == 1


def test_a_jury_needing_three_answers_fails_every_item_naming_the_model_that_is_down(spec, data, tmp_path):
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(by_model(answers())) as server:
        result = eval_(server, spec, data, "--jury", JURY, "--jury-min", "3", "--no-cache", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["scorers"]["verdict_panel"]["failed"] == 3
    for line in lines(out):
        error = line["error"]
        assert error["kind"] == "judge" and error["stage"] == "judge"
        assert "needs 3 of its 3 jurors' answers and got 2: failed openai/juror-c (transport:" in error["message"]
        assert "juror-a" not in error["message"].split("failed", 1)[1]


def test_each_jurors_cache_entries_are_its_own(spec, data, tmp_path):
    cache = str(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(by_model(answers(down=None))) as server:
        first = eval_(server, spec, data, "--jury", "openai/juror-a,openai/juror-b", "--cache", cache)
        assert first.exit_code == 0, first.output
        assert (asked(server, "juror-a"), asked(server, "juror-b")) == (3, 3)
        second = eval_(server, spec, data, "--jury", "openai/juror-a,openai/juror-c", "--cache", cache)
        assert second.exit_code == 0, second.output
        # juror a answered from its entries; juror c, new, asked; b's entries served nobody else
        assert (asked(server, "juror-a"), asked(server, "juror-b"), asked(server, "juror-c")) == (3, 3, 3)
    jury = json.loads(second.stdout)["scorers"]["verdict_panel"]["jury"]
    assert jury["stages"]["judge"] == {"questions": 3, "agreeing": 0.0, "kappa": pytest.approx(-1.0)}


def test_a_jury_run_resumes_with_its_jury(spec, data, tmp_path):
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(by_model(answers())) as server:
        first = eval_(server, spec, data, "--jury", JURY, "--jury-min", "3", "--no-cache", "--out", str(out))
        assert first.exit_code == 2, first.output
    with FakeOpenAIServer(by_model(answers(down=None))) as server:  # juror c is back
        again = eval_(server, spec, data, "--no-cache", "--out", str(out), "--resume")
        assert again.exit_code == 0, again.output
        assert (asked(server, "juror-a"), asked(server, "juror-c")) == (3, 3)
    panel = json.loads(again.stdout)["scorers"]["verdict_panel"]
    assert (panel["scored"], panel["failed"], panel["mean"]) == (3, 0, 1.0)
    assert panel["jury"]["stages"]["judge"]["agreeing"] == 0.0  # a and b say right, c wrong
    assert all(set(line["jurors"]) == set(JURY.split(",")) for line in lines(out))


def test_each_jurors_usage_and_cost_are_kept_in_the_result_and_the_summary(spec, data, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text('taken: "2026-12-01"\nmodels:\n  openai/juror-a: {input: 1.0, output: 2.0}\n'
                      '  openai/juror-b: {input: 10.0, output: 20.0}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(by_model(answers(down=None))) as server:
        result = eval_(server, spec, data, "--jury", "openai/juror-a,openai/juror-b", "--no-cache", "--out",
                       str(out), "--prices", str(prices))
    assert result.exit_code == 0, result.output
    total = 0.0
    for line in lines(out):
        a, b = line["jurors"]["openai/juror-a"], line["jurors"]["openai/juror-b"]
        assert a["usage"]["calls"] == b["usage"]["calls"] == 1
        assert a["costUsd"] == pytest.approx((a["usage"]["tokensIn"] * 1.0 + a["usage"]["tokensOut"] * 2.0) / 1e6)
        assert b["costUsd"] == pytest.approx(10 * a["costUsd"])  # the same tokens at ten times the price
        assert line["costUsd"] == pytest.approx(a["costUsd"] + b["costUsd"])
        total += line["costUsd"]
    cost = json.loads(result.stdout)["cost"]
    assert set(cost["byModel"]) == {"openai/juror-a", "openai/juror-b"}
    assert cost["usd"] == pytest.approx(total)
    assert cost["byModel"]["openai/juror-b"] == pytest.approx(10 * cost["byModel"]["openai/juror-a"])


def test_calibrate_shows_each_jurors_figures_beside_the_jurys(spec, tmp_path):
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": f"Output {i}.", "label": "good" if i < 2 else "bad"})
                            + "\n" for i in range(4)), encoding="utf-8")
    with FakeOpenAIServer(by_model(answers(down=None))) as server:  # a and b say right, c wrong: c is right on 2
        result = CliRunner().invoke(app, ["calibrate", spec, "--data", str(data), "--positive", "good", "--base-url",
                                          server.base_url, "--jury", JURY, "--no-cache", "--cutoff", "0.5"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = {line.split("(")[0].strip(): " ".join(line.split(")", 1)[1].split()) for line in result.stdout.splitlines()
            if line.startswith("juror ")}
    assert rows == {f"juror {model}": "accuracy 0.5 · balanced accuracy 0.5 · ROC AUC 0.5 · Cohen's kappa 0"
                    for model in JURY.split(",")}


def test_the_console_summary_says_how_far_the_jurors_agree_and_render_names_them(spec, data):
    with FakeOpenAIServer(by_model(answers())) as server:
        result = CliRunner().invoke(app, ["eval", spec, "--data", data, "--base-url", server.base_url, "--jury", JURY,
                                          "--no-cache"], env=ENV)
    assert result.exit_code == 0, result.output
    assert "jury of verdict_panel: judge agreeing 1; left out: openai/juror-c 3" in result.output
    shown = CliRunner().invoke(app, ["render", spec, "--output", "x"], env={**ENV, "SCORESPEC_JURY": JURY})
    assert shown.exit_code == 0, shown.output
    assert f"===== judge (asked by the jury: {JURY.replace(',', ', ')}) =====" in shown.stdout

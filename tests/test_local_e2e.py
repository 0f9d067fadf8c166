"""End to end through a real embedded model: the shipped specs, the engine, instructor and
llama.cpp, with no fakes. `local-tiny` (SmolLM2-135M) judges at about chance, so its tests
assert what the engine guarantees whatever the model says (shapes enforced by grammar, one
verdict per claim, asked one claim per call, scores in range, usage recorded); the `local` test asserts a verdict on an
unmistakable case.

Without the models these tests skip, unless SCORESPEC_REQUIRE_LOCAL=1 (as CI sets it), which
turns a missing model into a failure (`conftest.require_local`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import later_pages, require_local

from engine import load_scorer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_faithfulness():
    require_local("local-tiny")
    return load_scorer("faithfulness", model="local-tiny")


@pytest.mark.local
def test_tiny_faithfulness_one_verdict_per_claim(tiny_faithfulness):
    result = tiny_faithfulness.run(
        output="The Eiffel Tower is in Paris. It was finished in 1889.",
        context=["The Eiffel Tower, in Paris, was completed in 1889."],
    )
    assert result.status in ("scored", "not_scorable"), result.error
    assert result.model == "local-tiny"
    assert result.stages["preprocess"].usage.tokens_in > 0
    if result.status == "scored":
        claims = result.preprocess_step_result
        verdicts = result.analyze_step_result["verdicts"]  # {claim, verdict, reason}, one per claim
        assert len(verdicts) == len(claims) > 0 and [v["claim"] for v in verdicts] == claims
        answers = [json.loads(raw) for raw in json.loads(result.stages["analyze"].raw_answer)]
        assert all(list(a) == ["verdict", "reason"] for a in answers)  # the grammar: verdict first
        assert {v["verdict"] for v in verdicts} <= {"yes", "no", "unsure"}
        assert 0 <= result.score <= 1 and result.score == round(result.score, 2)
        supported = sum(v["verdict"] == "yes" for v in verdicts)
        assert result.score == round(supported / len(claims) + 1e-12, 2)
        extract_calls = 1 + later_pages(tiny_faithfulness, result)  # a full page asks for the next
        assert result.usage.calls == extract_calls + len(claims)  # then one call per claim
        assert result.stages["analyze"].usage.calls == len(claims)


@pytest.mark.local
def test_tiny_answer_similarity_one_match_per_unit():
    require_local("local-tiny")
    scorer = load_scorer("answer_similarity", model="local-tiny")
    result = scorer.run(output="Paris is the capital of France.", ground_truth="The capital of France is Paris.")
    if result.status == "failed":
        # a 135M model may repeat itself until its token limit (it does, depending on the prompt
        # cache's state): the cut-off answer must fail the item, never be parsed into a score
        assert (result.error.kind, result.error.stage, result.score) == ("truncated", "analyze", None), result.error
        assert "cut off at max_tokens=2048" in result.error.message
        return
    assert result.status in ("scored", "not_scorable"), result.error
    if result.status == "scored":
        units = result.preprocess_step_result["groundTruthUnits"]
        assert len(result.analyze_step_result["matches"]) == len(units)
        assert 0 <= result.score <= 1
        assert result.reason


@pytest.mark.local
def test_tiny_eval_command_on_the_example_data(tmp_path):
    """Two items: at most 2 × (1 + 25) judge calls (25 claims at most: maxClaims for a short output), each
    bounded by the spec's max_tokens. About a minute on a quiet machine; the timeout (conftest's
    MODEL_TEST_TIMEOUT_S) leaves room for a busy one."""
    require_local("local-tiny")
    data = tmp_path / "two.jsonl"
    data.write_text("".join((ROOT / "examples" / "begin_wow.jsonl").read_text().splitlines(True)[:2]))
    out = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "eval", "faithfulness", "textual_difference", "--data", str(data),
         "--model", "local-tiny", "--out", str(out), "--store", str(tmp_path / "store.sqlite"), "--quiet", "--json"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    summary = json.loads(proc.stdout)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((line["id"], line["scorer"]) for line in lines) == sorted(
        (json.loads(x)["id"], s) for x in data.read_text().splitlines() for s in ("faithfulness", "textual_difference"))
    assert summary["scorers"]["textual_difference"]["scored"] == 2
    assert proc.returncode == {"passed": 0, "below_threshold": 1, "errors": 2}[summary["verdict"]]
    assert all(line["model"] == "local-tiny" for line in lines if line["scorer"] == "faithfulness")


@pytest.mark.local_big
def test_local_judges_an_unmistakable_item():
    """The default embedded judge, one item: a claim the context states word for word."""
    require_local("local")
    scorer = load_scorer("faithfulness")  # no model configured: the embedded default
    result = scorer.run(output="Paris is the capital of France.",
                        context=["Paris is the capital and largest city of France."])
    assert result.model == "local"
    assert result.status == "scored", result.error
    verdicts = result.analyze_step_result["verdicts"]
    assert [v["verdict"] for v in verdicts] == ["yes"] * len(result.preprocess_step_result)
    assert result.score == 1

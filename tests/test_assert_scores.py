"""`engine.testing.assert_scores`, the pytest helper: passing and failing on scripted judges, the
failure message (case, score, reason, stage answers), and the shipped example test file run in a
subprocess pytest against the fake OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.core.errors import ScorerRunError
from engine.testing import FakeJudge, assert_scores
from engine.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "test_my_scorer.py"
CONTEXT = ["Paris is the capital of France."]


def claim_of(prompt: str) -> str:
    return re.search(r"CLAIM:\n<<<\n(.*?)\n>>>", prompt).group(1)


def output_of(prompt: str) -> str:
    return re.search(r"TEXT:\n<<<\n(.*?)\n>>>", prompt, re.S).group(1)


def judge(honest: bool = True, fail_on: str | None = None) -> FakeJudge:
    """Faithfulness through a scripted judge: each sentence of the output is a claim; a claim
    mentioning Rome is unsupported (when `honest`); an output containing `fail_on` fails."""

    def claims(call):
        text = output_of(call.messages[-1]["content"])
        if fail_on and fail_on in text:
            raise ScorerRunError("transport", "the server is down")
        return {"claims": [s.strip() + "." for s in text.split(".") if s.strip()]}

    def verdict(call):
        claim = claim_of(call.messages[-1]["content"])
        supported = not (honest and "Rome" in claim)
        return {"verdict": "yes" if supported else "no", "reason": f"checked: {claim}"}

    return FakeJudge({"preprocess": claims, "analyze": verdict})


def scorer(**kwargs):
    return load_scorer("faithfulness", judge=judge(**kwargs))


CASES = [{"id": "paris", "output": "Paris is in France.", "context": CONTEXT},
         {"id": "mixed", "output": "Paris is in France. Rome is its capital.", "context": CONTEXT}]


def test_passing_cases_return_their_results_in_order():
    results = assert_scores(scorer(), CASES, at_least=0.5)
    assert [r.score for r in results] == [1.0, 0.5]
    assert assert_scores(scorer(), {"rome": {"output": "Rome is in France.", "context": CONTEXT}},
                         at_most=0.2)[0].score == 0.0


def test_a_case_out_of_bounds_fails_with_its_score_reason_and_stage_answers():
    with pytest.raises(AssertionError) as raised:
        assert_scores(scorer(), CASES, at_least=0.8)
    message = str(raised.value)
    assert message.startswith("1 of 2 case(s) of faithfulness (at_least=0.8) did not pass:\n\ncase mixed: "
                              "score 0.5 is below at_least=0.8\n  reason: ")
    assert '  stage preprocess: ["Paris is in France.", "Rome is its capital."]' in message
    assert ('  stage analyze: {"verdicts": [{"claim": "Paris is in France.", "verdict": "yes", "reason": "checked: '
            'Paris is in France."}, {"claim": "Rome is its capital.", "verdict": "no", "reason": "checked: Rome is its '
            'capital."}]}') in message
    assert "case paris" not in message


def test_a_per_case_bound_overrides_the_default():
    cases = [CASES[0], {**CASES[1], "at_least": 0.5}]
    assert [r.score for r in assert_scores(scorer(), cases, at_least=0.9)] == [1.0, 0.5]
    with pytest.raises(AssertionError, match="case paris: score 1 is above at_most=0.6"):
        assert_scores(scorer(), [{**CASES[0], "at_most": 0.6}])


def test_a_failed_case_always_fails_naming_its_stage_and_kind():
    with pytest.raises(AssertionError) as raised:
        assert_scores(scorer(fail_on="Rome"), CASES)  # no bound: every case must still be scored
    assert "case mixed: failed at stage preprocess (transport): the server is down" in str(raised.value)


def test_not_scorable_fails_unless_allowed():
    blank = [{"id": "blank", "output": "   ", "context": CONTEXT}]
    with pytest.raises(AssertionError, match="case blank: not scorable: The output makes no claims"):
        assert_scores(scorer(), blank, at_least=0.5)
    assert assert_scores(scorer(), blank, at_least=0.5, not_scorable_ok=True)[0].status == "not_scorable"


@pytest.mark.parametrize("cases, message", [
    ([], "no cases given"),
    ([{"id": "x", "outptu": "typo"}], "case 'x' has unknown key(s) 'outptu'"),
])
def test_bad_cases_are_refused(cases, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        assert_scores(scorer(), cases)


def test_load_options_need_a_spec_id():
    with pytest.raises(ValueError, match="apply only to a spec id or path"):
        assert_scores(scorer(), CASES, model="openai/x")


# --- the example file, as a team runs it -------------------------------------------------------------


def server_reply(honest: bool):
    """The fake provider for faithfulness: each sentence is a claim; claims about Rome are
    unsupported when `honest`, else everything is supported."""

    def reply(request: dict):
        content = request["messages"][-1]["content"]
        stage = request["tools"][0]["function"]["name"]
        if stage == "preprocess":
            return {"claims": [s.strip() + "." for s in output_of(content).split(".") if s.strip()]}
        supported = not (honest and "Rome" in claim_of(content))
        return {"verdict": "yes" if supported else "no", "reason": "the context says Paris"}

    return reply


def run_example(tmp_path: Path, honest: bool) -> subprocess.CompletedProcess:
    with FakeOpenAIServer(server_reply(honest)) as server:
        env = {**os.environ, "SCORESPEC_MODEL": "openai/test-model", "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "test", "SCORESPEC_CACHE_DB": str(tmp_path / f"cache-{honest}.sqlite")}
        return subprocess.run([sys.executable, "-m", "pytest", str(EXAMPLE), "-q", "-p", "no:cacheprovider"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_the_example_passes_with_an_honest_judge(tmp_path):
    run = run_example(tmp_path, honest=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout


def test_the_example_fails_naming_the_case_when_the_judge_misses_a_made_up_answer(tmp_path):
    run = run_example(tmp_path, honest=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout
    assert "FAILED" in run.stdout and "test_made_up_answers_are_caught" in run.stdout
    assert "case wrong-city: score 1 is above at_most=0.2" in run.stdout
    assert '  stage preprocess: ["The Eiffel Tower is in Rome."]' in run.stdout
    assert ('  stage analyze: {"verdicts": [{"claim": "The Eiffel Tower is in Rome.", "verdict": "yes", '
            '"reason": "the context says Paris"}]}') in run.stdout
    assert "  reason: " in run.stdout

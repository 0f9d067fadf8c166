"""Faults a fresh user found by following the README, each kept fixed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine import load_scorer
from engine.core.errors import SpecError
from engine.spec.compile import compile_text
from engine.testing import FakeJudge

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=cwd or ROOT)


def test_user_text_in_an_error_is_printed_verbatim_not_as_markup():
    proc = cli("run", "textual_difference", "--output", "x", "--option", 'scale="[/bold]"')
    assert proc.returncode == 2
    assert "option 'scale': '[/bold]' is not of type 'number'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_keys_and_later_problems_are_reported_in_one_run():
    text = (ROOT / "scorer_specs" / "faithfulness.yaml").read_text()
    text = text.replace("    prompt: faithfulness/verify_claim.j2", "    prompt: faithfulness/verify_claim.j2\n"
                        "    temprature: 0").replace("credited / claims", "credted / claims")
    try:
        compile_text(text, ROOT / "scorer_specs" / "faithfulness.yaml")
    except SpecError as exc:
        found = [(p.code, p.key_path) for p in exc.problems]
    assert found == [("unknown-key", "stages[1].temprature"), ("undefined-name", "score.formula")]


def test_an_empty_output_has_no_claims_and_costs_no_judge_call():
    judge = FakeJudge({})
    result = load_scorer("faithfulness", judge=judge).run(output="   ", context=["Paris is in France."])
    assert result.status == "not_scorable"
    assert result.score is None
    assert judge.calls == []


def test_textual_difference_needs_an_output_but_accepts_an_empty_one():
    scorer = load_scorer("textual_difference")
    missing = scorer.run(ground_truth="abc")
    assert (missing.status, missing.error.kind) == ("failed", "input")
    assert scorer.run(output="", ground_truth="").score == 1


def test_result_json_carries_its_status():
    data = load_scorer("textual_difference").run(output="abc", ground_truth="abd").to_json_dict()
    assert data["status"] == "scored"


def test_an_embedded_judge_gets_as_many_items_in_flight_as_its_slots_by_default(monkeypatch):
    from engine.embedded.settings import DEFAULT_SLOTS
    from engine.run.evals import default_concurrency

    monkeypatch.delenv("SCORESPEC_LOCAL_SLOTS", raising=False)
    assert default_concurrency([load_scorer("faithfulness", model="local"), load_scorer("textual_difference")]) \
        == DEFAULT_SLOTS
    assert default_concurrency([load_scorer("faithfulness", model="local?slots=1")]) == 1
    assert default_concurrency([load_scorer("faithfulness", model="local?slots=4"),
                                load_scorer("answer_similarity", model="local-tiny?slots=2")]) == 4
    monkeypatch.setenv("SCORESPEC_LOCAL_SLOTS", "2")
    assert default_concurrency([load_scorer("faithfulness", model="local")]) == 2
    assert default_concurrency([load_scorer("faithfulness", model="openai/gpt-4o-mini")]) == 8
    assert default_concurrency([load_scorer("textual_difference")]) == 8


def test_texts_too_long_to_align_fail_clearly_instead_of_exhausting_memory():
    result = load_scorer("textual_difference").run(output="a" * 200_000, ground_truth="b" * 200_000)
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "function", "analyze")
    assert "texts of 200,000 and 200,000 characters are too long to align" in result.error.message
    assert load_scorer("textual_difference").run(output="a" * 200_000, ground_truth="a" * 200_000).score == 1


def test_the_readme_main_job_runs_scorers_that_mean_something_on_its_data():
    """The README's first command scores the example data with scorers that have what they
    compare: textual_difference would compare each response with the user's message when the
    items have no ground truth, and faithfulness needs each item's context."""
    import json
    import shlex

    from engine import run_evals

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("pip install") and "scorespec eval" in line)
    args = shlex.split(command.split("&&")[-1])
    scorers = args[2:args.index("--data")]
    data = ROOT / args[args.index("--data") + 1]
    items = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    assert scorers and len(items) == 6
    judge = FakeJudge({"preprocess": {"claims": ["A claim."]}, "analyze": {"verdict": "yes", "reason": "stated"}})
    results = {}
    run_evals(str(data), [load_scorer(s, judge=judge) for s in scorers], store=False,
              on_item_complete=lambda item, done: results.update({(item["id"], k): r for k, r in done.items()}))
    assert len(results) == 6 * len(scorers)
    for (item_id, scorer_id), result in results.items():
        assert result.status == "scored", (item_id, result.error)
        assert "output vs input" not in result.reason and "no context was given" not in result.reason
    # every item's passages reached the judge
    prompts = judge.prompts("analyze")
    assert all(any(item["context"][0] in p for p in prompts) for item in items)

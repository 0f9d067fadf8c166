"""The `scorespec` command line: validate, list, schema, run, render."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine import judge as judge_module
from engine.catalog import builtin_specs_dir
from engine.cli import app, parse_option_value
from engine.spec import spec_json_schema

from conftest import SPEC_FIXTURES

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})


def test_validate_builtins_ok():
    result = invoke("validate")
    assert result.exit_code == 0
    assert "ok: 3 spec(s) valid" in result.stderr
    assert result.stdout == ""


def test_validate_files_ok():
    result = invoke("validate", str(builtin_specs_dir() / "faithfulness.yaml"),
                    str(builtin_specs_dir() / "textual_difference.yaml"))
    assert result.exit_code == 0
    assert "ok: 2 spec(s) valid" in result.stderr


def test_validate_broken_file(monkeypatch):
    monkeypatch.chdir(SPEC_FIXTURES)
    result = invoke("validate", "broken/unknown_formula_name.yaml")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "broken/unknown_formula_name.yaml:13:3: score.formula: expression 'suported * options.scale' uses "
        "'suported', which is not defined here (did you mean 'supported'?) [undefined-name]",
        "1 problem(s) in 1 of 1 spec(s)",
    ]


def test_validate_missing_path():
    result = invoke("validate", "no/such/dir")
    assert result.exit_code == 2
    assert "no such file or folder: no/such/dir" in result.stderr


def test_list_shows_builtins_and_functions():
    result = invoke("list")
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "builtin" in rows["faithfulness"] and "Faithfulness" in rows["faithfulness"]
    assert "builtin" in rows["answer_similarity"]
    assert "no" in rows["textual_difference"].split()  # no judge
    assert "rule functions: textual_difference" in result.stdout


def test_schema_prints_the_spec_json_schema():
    result = invoke("schema")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == spec_json_schema()


def test_run_textual_difference_json():
    result = invoke("run", "textual_difference", "--output", "The quick brown cat",
                    "--ground-truth", "The quick brown fox", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)  # only the JSON on stdout
    assert round(data["score"], 4) == 0.8421
    assert data["scorer"] == "textual_difference"
    assert data["runId"] and data["specHash"]
    assert round(data["analyzeStepResult"]["ratio"], 4) == 0.8421
    assert "notScorable" in data and "not_scorable" not in data
    assert data["model"] is None


def test_run_human_output():
    result = invoke("run", "textual_difference", "--output", "abc", "--ground-truth", "abc")
    assert result.exit_code == 0
    assert result.stdout.startswith("score 1\n")
    assert "the texts are identical" in result.stdout


def test_run_option_typed_by_schema_no_judge_call(fake_server):
    result = invoke("run", "answer_similarity", "--output", "Paris.", "--option", "requireGroundTruth=false",
                    "--option", "scale=10", "--model", "openai/x", "--base-url", fake_server.base_url, "--json",
                    env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["score"] == 0
    assert data["model"] == "openai/x"
    assert fake_server.requests == []


def test_run_answer_similarity_through_the_fake_server(fake_server):
    units = ["Paris is the capital of France"]
    fake_server.script(
        {"outputUnits": units, "groundTruthUnits": units},
        {"matches": [{"groundTruthUnit": units[0], "outputUnit": units[0], "match": "exact", "reason": "same"}],
         "contradictions": [], "extraUnits": []},
        {"reason": "The answer matches."},
    )
    result = invoke("run", "answer_similarity", "--output", "Paris is the capital of France.",
                    "--ground-truth", "The capital of France is Paris.", "--option", "scale=10",
                    "--option", "requireGroundTruth=true", "--model", "openai/x", "--base-url",
                    fake_server.base_url, "--json", env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["score"] == 10
    assert data["reason"] == "The answer matches."
    assert [r["model"] for r in fake_server.requests] == ["x", "x", "x"]


def test_run_missing_ground_truth_exits_2():
    result = invoke("run", "answer_similarity", "--output", "Paris.", "--model", "openai/x", "--json",
                    env={"OPENAI_API_KEY": "test"})
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["error"]["kind"] == "input"
    assert "error: [input]" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--option", "scael=2"], "unknown option 'scael' (did you mean 'scale'?)"),
    (["--option", "scale=-1"], "option 'scale'"),
    (["--option", "scale"], "expected key=value"),
])
def test_run_bad_options(args, message):
    result = invoke("run", "textual_difference", "--output", "a", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_run_unknown_spec():
    result = invoke("run", "faithfulnes", "--output", "a")
    assert result.exit_code == 2
    assert "no scorer named 'faithfulnes' (did you mean 'faithfulness'?)" in result.stderr


def test_parse_option_value_types():
    assert parse_option_value("false", {"type": "boolean"}) is False
    assert parse_option_value("10", {"type": "number"}) == 10
    assert parse_option_value("0.5", {"type": "number"}) == 0.5
    assert parse_option_value('["a", "b"]', {"type": "array"}) == ["a", "b"]
    assert parse_option_value("10", {"type": "string"}) == "10"
    assert parse_option_value("plain text", None) == "plain text"


def test_render_calls_no_model(monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("render built a judge")

    monkeypatch.setattr(judge_module, "make_judge", no_judge)
    text = "The tower {{ 7*7 }} is in Paris."
    result = invoke("render", "faithfulness", "--output", text, "--context", "Passage one.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("===== preprocess =====\n[system]\n")
    assert f"TEXT:\n<<<\n{text}\n>>>" in result.stdout
    assert "needs the judge's answer" in result.stderr


def test_render_later_stages_with_answers():
    answer = json.dumps({"claims": ["The tower is in Paris."]})
    result = invoke("render", "faithfulness", "--output", "The tower is in Paris.", "--context", "Passage one.",
                    "--answer", f"preprocess={answer}")
    assert result.exit_code == 0, result.stderr
    assert "===== analyze =====" in result.stdout
    assert "[1] Passage one." in result.stdout and "CLAIM:\n<<<\nThe tower is in Paris.\n>>>" in result.stdout


def test_render_for_each_stage_shows_its_first_element_without_an_answer():
    answer = json.dumps({"claims": ["The tower is in Paris.", "It is tall."]})
    result = invoke("render", "faithfulness", "--output", "x", "--context", "Passage one.",
                    "--answer", f"preprocess={answer}")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("===== analyze =====") == 1  # it stops at the first answer it needs
    assert "CLAIM:\n<<<\nThe tower is in Paris.\n>>>" in result.stdout and "It is tall." not in result.stdout
    verdict = json.dumps({"verdict": "yes", "reason": "r"})
    result = invoke("render", "faithfulness", "--output", "x", "--context", "Passage one.",
                    "--answer", f"preprocess={answer}", "--answer", f"analyze={verdict}")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("===== analyze =====") == 2  # one prompt per claim, the answer given to each
    assert "CLAIM:\n<<<\nIt is tall.\n>>>" in result.stdout


def test_render_rule_only_scorer_sends_nothing():
    result = invoke("render", "textual_difference", "--output", "a")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "sends no prompt" in result.stderr


@pytest.mark.parametrize("when, shown", [
    ("run.output != ''", "not scorable: nothing to say about oops [/i] [bold]x[/bold]"),
    ("false", "failed at stage - (formula): "),  # 2 is out of [0, scale]
])
def test_run_prints_user_text_and_expressions_verbatim(tmp_path, when, shown):
    text = (builtin_specs_dir() / "textual_difference.yaml").read_text(encoding="utf-8")
    text = text.replace('  formula: "analyze.ratio * analyze.confidence * options.scale"',
                        f'  not_scorable:\n    when: "{when}"\n    reason: "nothing to say about {{{{ run.output }}}}"\n'
                        '  formula: "[analyze.ratio, 2] | max"')
    spec = tmp_path / "textual_difference.yaml"
    spec.write_text(text, encoding="utf-8")
    result = invoke("run", str(spec), "--output", "oops [/i] [bold]x[/bold]", "--ground-truth", "a")
    assert "internal error" not in result.output
    assert shown in result.output
    if when == "false":
        assert "[analyze.ratio, 2] | max" in result.output  # the formula, brackets included

"""The batch commands (``eval``, ``compare``) given several specs that do not load report every
problem of every spec at once, as ``validate`` does, and exit 2 before any judge call."""

from __future__ import annotations

import json

from conftest import SPEC_FIXTURES
from typer.testing import CliRunner

import engine.cli.compare  # noqa: F401  (registers compare)
import engine.cli.eval  # noqa: F401  (registers the batch commands)
from engine.cli.main import app

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "test",
       "OPENAI_BASE_URL": "http://127.0.0.1:9"}
FORMULA = ("broken/unknown_formula_name.yaml:13:3: score.formula: expression 'suported * options.scale' uses "
           "'suported', which is not defined here (did you mean 'supported'?) [undefined-name]")
KEY = "broken/unknown_key.yaml:9:5: stages[0].temprature: unknown key (did you mean 'temperature'?) [unknown-key]"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


def data(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "q", "output": "a"}) + "\n", encoding="utf-8")
    return str(path)


def test_eval_reports_every_problem_of_every_broken_spec(tmp_path, monkeypatch):
    items = data(tmp_path)
    monkeypatch.chdir(SPEC_FIXTURES)
    result = invoke("eval", "broken/unknown_formula_name.yaml", "broken/unknown_key.yaml", "textual_difference",
                    "--data", items, "--store", str(tmp_path / "runs.db"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: 2 of 3 scorers have problems:", FORMULA, KEY, "2 problem(s) in 2 of 3 spec(s)"]


def test_eval_names_a_missing_spec_beside_the_problems_of_a_broken_one(tmp_path, monkeypatch):
    items = data(tmp_path)
    monkeypatch.chdir(SPEC_FIXTURES)
    result = invoke("eval", "no_such_scorer_here", "broken/unknown_key.yaml", "--data", items,
                    "--store", str(tmp_path / "runs.db"))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "error: 2 of 2 scorers have problems:"
    assert lines[1] == KEY
    assert lines[2].startswith("no scorer named 'no_such_scorer_here'")
    assert lines[3:] == ["2 problem(s) in 2 of 2 spec(s)"]


def test_eval_with_one_broken_spec_names_it(tmp_path, monkeypatch):
    items = data(tmp_path)
    monkeypatch.chdir(SPEC_FIXTURES)
    result = invoke("eval", "broken/unknown_key.yaml", "--data", items, "--store", str(tmp_path / "runs.db"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: broken/unknown_key.yaml: the spec has problems:", KEY, "1 problem(s) in 1 of 1 spec(s)"]


def test_compare_reports_every_problem_of_every_broken_version(tmp_path, monkeypatch):
    items = data(tmp_path)
    monkeypatch.chdir(SPEC_FIXTURES)
    result = invoke("compare", "a=broken/unknown_formula_name.yaml", "b=broken/unknown_key.yaml", "--data", items,
                    "--store", str(tmp_path / "runs.db"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: 2 of 2 scorers have problems:", FORMULA, KEY, "2 problem(s) in 2 of 2 spec(s)"]


def test_eval_of_one_missing_spec_says_only_that(tmp_path):
    result = invoke("eval", "faithfulnes", "--data", data(tmp_path), "--store", str(tmp_path / "runs.db"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["error: no scorer named 'faithfulnes' (did you mean 'faithfulness'?)"]

"""`validate` as a new user meets it: a misspelled key does not hide the template's and the
formula's problems of the same spec, a missing template names every folder searched, no argument
means the user's ./scorer_specs/, and `new` never writes into the built-in catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.main import app
from engine.spec.catalog import builtin_specs_dir
from engine.spec.scaffold import new_spec

SPEC = """format: 1
id: mine
extends: judge_base
name: Mine
description: d
version: 1
stages:
  - id: ask
    {prompt_key}: mine/{template}
    output_schema:
      type: object
      properties:
        verdict: {{type: string, enum: ["yes", "no"]}}
      required: [verdict]
score:
  formula: "1 if ask.verdict == 'yes' else undefined_name"
"""


def _project(tmp_path: Path, prompt_key: str = "prompt", template: str = "judge.j2", prompts: bool = True) -> Path:
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "mine.yaml").write_text(SPEC.format(prompt_key=prompt_key, template=template))
    if prompts:
        (tmp_path / "prompts" / "mine").mkdir(parents=True)
        (tmp_path / "prompts" / "mine" / "judge.j2").write_text("Judge {{ run.outptu }}\n")
    return tmp_path


def _validate(tmp_path: Path, monkeypatch, *args: str):
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(app, ["validate", *args], env={"SCORESPEC_MODEL": None})


def test_a_misspelled_required_key_still_shows_the_template_and_formula_problems(tmp_path, monkeypatch):
    result = _validate(_project(tmp_path, prompt_key="promt"), monkeypatch)
    assert result.exit_code == 2
    codes = sorted(line.rsplit("[", 1)[1].rstrip("]") for line in result.stderr.splitlines()[:-1])
    assert "scorer_specs/mine.yaml:9:5: stages[0].promt: unknown key (did you mean 'prompt'?) [unknown-key]" \
        in result.stderr
    assert "template 'mine/judge.j2' uses 'run.outptu'" in result.stderr  # the template, read as the prompt
    assert "uses 'undefined_name', which is not defined here" in result.stderr  # and the formula
    assert codes == ["missing-key", "undefined-name", "undefined-name", "unknown-key"]


def test_a_missing_template_names_every_folder_searched(tmp_path, monkeypatch):
    result = _validate(_project(tmp_path, template="nothere.j2", prompts=False), monkeypatch)
    builtin = (builtin_specs_dir().parent / "prompts").resolve()
    local = (tmp_path / "prompts").resolve()
    assert f"template file 'mine/nothere.j2' not found (searched {local} (no such folder), {builtin})" in result.stderr


def test_validate_without_a_path_checks_only_the_users_specs(tmp_path, monkeypatch):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "close.yaml").write_text(
        (builtin_specs_dir() / "textual_difference.yaml").read_text().replace("id: textual_difference", "id: close"))
    result = _validate(tmp_path, monkeypatch)
    assert (result.exit_code, result.stderr) == (0, "ok: 1 spec(s) valid\n")


def test_new_refuses_to_write_into_the_built_in_catalogue(monkeypatch):
    checkout = builtin_specs_dir().parent
    with pytest.raises(ValueError, match="scorespec's own catalogue of built-in scorers"):
        new_spec("my_first", root=checkout)
    monkeypatch.chdir(checkout)
    result = CliRunner().invoke(app, ["new", "my_first"], env={"SCORESPEC_MODEL": None})
    assert result.exit_code == 2 and "Run `scorespec new` in your project's folder" in " ".join(result.stderr.split())
    assert not (builtin_specs_dir() / "my_first.yaml").exists()

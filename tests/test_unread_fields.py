"""`scorespec validate` warns of a field a spec declares and never reads (``[unread-field]``);
``validate --strict`` makes such warnings errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.main import app
from engine.spec.catalog import builtin_specs_dir
from engine.spec.compile import validate_specs

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}

SPEC = """\
format: 1
id: {id}
name: Echo
description: A judge that reads what its prompt renders.
version: 1
fields:
  input: {{required: true}}
  output: {{required: true}}
{extra}stages:
  - id: analyze
    prompt: echo/judge.j2
    output_schema:
      type: object
      required: [verdict]
      properties: {{verdict: {{type: string, enum: ["yes", "no"]}}}}
score:
  formula: "1 if analyze.verdict == 'yes' else 0"
"""
ECHO_TWICE = "Question: {{ run.input }}\nThe question again: {{ run.input }}\n"


def write(tmp_path: Path, prompt: str, *, spec_id: str = "echo", extra: str = "", text: str | None = None) -> Path:
    """A spec `spec_id` (SPEC with `extra` lines before its stages, or `text`) whose one prompt is
    `prompt`; returns the spec file."""
    (tmp_path / "prompts" / "echo").mkdir(parents=True, exist_ok=True)
    (tmp_path / "prompts" / "echo" / "judge.j2").write_text(prompt, encoding="utf-8")
    (tmp_path / "scorer_specs").mkdir(exist_ok=True)
    path = tmp_path / "scorer_specs" / f"{spec_id}.yaml"
    path.write_text(text if text is not None else SPEC.format(id=spec_id, extra=extra),
                    encoding="utf-8")
    return path


def warnings_of(path: Path) -> list[str]:
    """The rendered problems `validate` finds in one spec file, warnings included."""
    return [p.render() for p in validate_specs([path], warnings=True)[path]]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


def test_validate_warns_when_no_prompt_reads_a_required_field(tmp_path, monkeypatch):
    write(tmp_path, ECHO_TWICE)
    monkeypatch.chdir(tmp_path)
    result = invoke("validate", "scorer_specs/echo.yaml")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "scorer_specs/echo.yaml:8:3: warning: field 'output' is required but no prompt, expression or rule stage "
        "of this spec reads it [unread-field]",
        "ok: 1 spec(s) valid, 1 warning(s) (--strict makes them errors)",
    ]


def test_validate_strict_makes_an_unread_field_an_error(tmp_path, monkeypatch):
    write(tmp_path, ECHO_TWICE)
    monkeypatch.chdir(tmp_path)
    result = invoke("validate", "--strict", "scorer_specs/echo.yaml")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "scorer_specs/echo.yaml:8:3: warning: field 'output' is required but no prompt, expression or rule stage "
        "of this spec reads it [unread-field]",
        "1 problem(s) in 1 of 1 spec(s) (warnings are errors with --strict)",
    ]


def test_validate_strict_passes_a_spec_that_reads_every_field(tmp_path, monkeypatch):
    write(tmp_path, "Q: {{ run.input }}\nA: {{ run.output }}\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("validate", "--strict", "scorer_specs/echo.yaml")
    assert (result.exit_code, result.stderr) == (0, "ok: 1 spec(s) valid\n")


def test_a_declared_field_that_is_not_required_is_named_declared(tmp_path):
    path = write(tmp_path, "A: {{ run.output }} {{ run.input }}", extra="  context: {description: passages}\n")
    assert warnings_of(path) == [
        f"{path}:9:3: warning: field 'context' is declared but no prompt, expression or rule stage of this spec "
        "reads it [unread-field]"]


@pytest.mark.parametrize("read", ["run.output_text", "run.output_messages | length", "run['output']",
                                  "run.get('output')", "run | tojson", "'output' in run.given"])
def test_a_derived_name_or_a_whole_read_counts_as_reading_the_field(tmp_path, read):
    path = write(tmp_path, "Q: {{ run.input_messages | length }} A: {{ " + read + " }}")
    assert warnings_of(path) == []


def test_reading_tool_calls_reads_the_output_they_come_from(tmp_path):
    path = write(tmp_path, "Q: {{ run.input }} Calls: {{ run.tool_calls | length }}")
    assert warnings_of(path) == []


def test_a_variable_key_reads_every_field_it_can_name(tmp_path):
    extra = ("  ground_truth: {description: the reference}\n"
             "vars:\n  reference_field: \"'ground_truth' if 'ground_truth' in run.given else 'input'\"\n")
    path = write(tmp_path, "Reference: {{ run[reference_field] }}", extra=extra)
    assert [line.split(": ", 2)[2] for line in warnings_of(path)] == [
        "field 'output' is required but no prompt, expression or rule stage of this spec reads it [unread-field]"]


def test_an_option_key_reads_the_fields_its_enum_names(tmp_path):
    extra = ("  ground_truth: {description: the reference}\n"
             "options:\n  against: {type: string, enum: [input, ground_truth], default: input}\n")
    path = write(tmp_path, "Against: {{ run[options.against] }}", extra=extra)
    assert ["output" in line for line in warnings_of(path)] == [True]


def test_a_key_read_from_the_item_counts_for_every_field(tmp_path):
    path = write(tmp_path, "{{ run[run.input] }}")
    assert warnings_of(path) == []


def test_a_rule_stage_argument_reads_its_field(tmp_path):
    text = """\
format: 1
id: rule_reads
name: R
description: compares
version: 1
fields:
  output: {required: true}
  ground_truth: {required: true}
  input: {description: unused}
stages:
  - id: diff
    function: textual_difference
    args: {reference: run.ground_truth, candidate: run.output_text}
score:
  formula: diff.ratio
"""
    path = write(tmp_path, "", spec_id="rule_reads", text=text)
    assert [line.split(": ", 2)[2] for line in warnings_of(path)] == [
        "field 'input' is declared but no prompt, expression or rule stage of this spec reads it [unread-field]"]


def test_a_field_the_spec_names_itself_is_warned_of_when_unread(tmp_path):
    path = write(tmp_path, "Q: {{ run.input }} A: {{ run.output }}",
                 extra="  rubric: {required: true, schema: {type: string}}\n")
    assert ["field 'rubric' is required" in line for line in warnings_of(path)] == [True]


def test_an_inherited_field_is_warned_of_where_the_parent_declares_it(tmp_path):
    parent = write(tmp_path, "Q: {{ run.input }} A: {{ run.output }}", spec_id="parent")
    (tmp_path / "prompts" / "echo" / "child.j2").write_text(ECHO_TWICE, encoding="utf-8")
    child = tmp_path / "scorer_specs" / "child.yaml"
    child.write_text("format: 1\nid: child\nextends: parent.yaml\nstages:\n  - id: analyze\n"
                     "    prompt: echo/child.j2\n", encoding="utf-8")
    assert warnings_of(parent) == []
    assert warnings_of(child) == [
        f"{parent}:8:3: warning: field 'output' is required but no prompt, expression or rule stage of this spec "
        "reads it (in spec 'child', which extends the spec declaring it) [unread-field]"]


def test_an_abstract_base_is_not_warned_of(tmp_path):
    text = SPEC.format(id="base", extra="").replace("version: 1\n", "version: 1\nabstract: true\n")
    path = write(tmp_path, ECHO_TWICE, spec_id="base", text=text)
    assert warnings_of(path) == []


def test_validate_without_warnings_keeps_them_out():
    # validate_directory and validate_specs(warnings=False) list errors only
    path = builtin_specs_dir() / "faithfulness.yaml"
    assert validate_specs([path]) == {path: []}


def test_the_shipped_catalogue_validates_without_warnings():
    found = validate_specs([builtin_specs_dir()], warnings=True)
    assert {path.stem: [p.render() for p in problems] for path, problems in found.items() if problems} == {}
    result = invoke("validate", "--strict")
    assert result.exit_code == 0, result.stderr


def test_every_key_of_run_names_the_fields_it_reads():
    from engine.core.run_fields import FIELDS_READ, RUN_FIELDS, RUN_NAMES

    assert set(FIELDS_READ) == RUN_NAMES
    # and the item's language field, which run.language and run.language_name read
    assert {field for fields in FIELDS_READ.values() for field in fields} == set(RUN_FIELDS) | {"language"}

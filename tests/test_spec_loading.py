"""Loading, validating and compiling specs (issue 2): golden errors, properties, the catalogue."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import ROOT, SPEC_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import TemplateSyntaxError
from typer.testing import CliRunner

import engine
from engine.cli.main import app
from engine.core.errors import SpecError
from engine.interpret.scorer import Scorer
from engine.spec.catalog import builtin_prompts_dir, builtin_specs_dir, is_abstract, list_specs
from engine.spec.compile import compile_file, compile_text, load_spec, validate_directory
from engine.spec.expressions import Expression, Template, environment, prepare
from engine.spec.models import spec_json_schema
from engine.spec.yamlload import load_yaml
from engine.testing import FakeJudge

BROKEN = SPEC_FIXTURES / "broken"
UPDATE = os.environ.get("SCORESPEC_UPDATE_SNAPSHOTS") == "1"
SHIPPED = sorted((ROOT / "scorer_specs").glob("*.yaml"))
RUNNABLE = [path for path in SHIPPED if not is_abstract(path)]  # abstract bases are not run

# Every golden case, with the codes its problems must carry (in file order).
EXPECTED_CODES = {
    "unknown_key": ["unknown-key"],
    "wrong_type": ["wrong-type"],
    "missing_template": ["missing-template"],
    "undefined_variable": ["undefined-name"],
    "invalid_output_schema": ["invalid-schema"],
    "unknown_formula_name": ["undefined-name"],
    "duplicate_key": ["duplicate-key"],
    "bool_default": ["option-default"],
    "bool_required": ["wrong-type"],
    "unquoted_enum": ["wrong-type"],
    "yaml_syntax": ["yaml-syntax"],
    "unknown_function": ["unknown-function"],
    "unknown_filter": ["expression-syntax", "undefined-name"],
    "id_mismatch": ["id-mismatch"],
    "sandbox_template": ["template-syntax"],
    "sandbox_expression": ["expression-syntax"],
    "many_problems": ["missing-template", "invalid-schema", "invalid-schema", "expression-syntax",
                      "undefined-name", "undefined-name", "undefined-name"],
    # `each` and `each_index` are defined only inside a for_each stage (not in its for_each itself)
    "each_outside_for_each": ["undefined-name"] * 5,
    "each_stage_id": ["reserved-name", "reserved-name"],
}


def rendered(problems) -> str:
    """Problems rendered as the CLI prints them, with machine-specific folders normalised."""
    text = "\n".join(p.render() for p in problems) + "\n"
    text = text.replace(str(builtin_prompts_dir().resolve()), "<builtin>/prompts")
    return text.replace(str(SPEC_FIXTURES), ".")


def compile_broken(name: str, monkeypatch) -> SpecError:
    monkeypatch.chdir(SPEC_FIXTURES)
    with pytest.raises(SpecError) as info:
        compile_file(Path("broken") / f"{name}.yaml")
    return info.value


# --- golden files ------------------------------------------------------------------------------


def test_every_broken_spec_has_expected_codes_and_golden_file():
    names = {p.stem for p in BROKEN.glob("*.yaml")}
    assert names == set(EXPECTED_CODES)
    assert {p.name.removesuffix(".errors.txt") for p in BROKEN.glob("*.errors.txt")} == names


@pytest.mark.parametrize("name", sorted(EXPECTED_CODES))
def test_broken_spec_golden_errors(name, monkeypatch):
    error = compile_broken(name, monkeypatch)
    assert [p.code for p in error.problems] == EXPECTED_CODES[name]
    golden = BROKEN / f"{name}.errors.txt"
    got = rendered(error.problems)
    if UPDATE:
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8")
    # the exception's own text is the same rendering
    assert str(error) + "\n" == "\n".join(p.render() for p in error.problems) + "\n"


def test_unknown_key_has_position_and_did_you_mean(monkeypatch):
    (problem,) = compile_broken("unknown_key", monkeypatch).problems
    assert (problem.file, problem.line, problem.column) == ("broken/unknown_key.yaml", 9, 5)
    assert problem.key_path == "stages[0].temprature"
    assert problem.hint == "did you mean 'temperature'?"


@pytest.mark.parametrize("key, expected", [
    ("judge:\n  temprature: 0\n", ("judge.temprature", "did you mean 'temperature'?")),
    ("scor_e: 1\n", ("scor_e", "did you mean 'score'?")),
])
def test_unknown_key_did_you_mean_at_other_levels(tmp_path, key, expected):
    source = (SPEC_FIXTURES / "broken" / "id_mismatch.yaml").read_text().replace("id: id_mismatched", "id: spec")
    with pytest.raises(SpecError) as info:
        compile_text(source + key, tmp_path / "spec.yaml")
    (problem,) = info.value.problems
    assert (problem.code, problem.key_path, problem.hint) == ("unknown-key", *expected)


def test_rule_stage_unknown_key_suggests_rule_keys(tmp_path):
    source = (SPEC_FIXTURES / "broken" / "id_mismatch.yaml").read_text().replace("id: id_mismatched", "id: spec")
    source = source.replace("    args:", "    argz:")
    with pytest.raises(SpecError) as info:
        compile_text(source, tmp_path / "spec.yaml")
    # and without its args the function misses its arguments
    unknown, missing = sorted(info.value.problems, key=lambda p: p.code != "unknown-key")
    assert (unknown.code, unknown.key_path, unknown.hint) == ("unknown-key", "stages[0].argz", "did you mean 'args'?")
    assert (missing.code, missing.key_path) == ("missing-argument", "stages[0].args")


def test_unquoted_yes_no_enum_loads_as_strings(write_spec):
    """C08: with the YAML 1.2 loader `enum: [yes, no, unsure]` stays strings, never booleans."""
    path = write_spec("c08", """
        format: 1
        id: c08
        name: C08
        description: Unquoted verdict enum.
        version: 1
        stages:
          - id: analyze
            prompt: c08/ask.j2
            output_schema:
              type: object
              required: [verdict]
              properties:
                verdict: {type: string, enum: [yes, no, unsure]}
        score:
          formula: "1 if analyze.verdict == 'yes' else 0"
    """, {"c08/ask.j2": "Is it supported? {{ run.output }}"})
    compiled = compile_file(path)
    enum = compiled.stages[0].schema["properties"]["verdict"]["enum"]
    assert enum == ["yes", "no", "unsure"]
    assert all(type(v) is str for v in enum)
    judge = FakeJudge({"analyze": {"verdict": "YES"}})
    assert Scorer(compiled, judge=judge).run(output="x").score == 1


def test_yaml_1_1_surprises_stay_strings():
    loaded = load_yaml("a: no\nb: 1.10\nc: 2024-01-01\nd: on\ne: true\nf: 0o17\ng: ~\n", "x.yaml")
    assert loaded.data == {"a": "no", "b": 1.1, "c": "2024-01-01", "d": "on", "e": True, "f": 15, "g": None}
    assert loaded.bool_like == {"a", "d"}
    assert loaded.problems == []


def test_bool_default_hint(monkeypatch):
    (problem,) = compile_broken("bool_default", monkeypatch).problems
    assert problem.key_path == "options.strict.default"
    assert problem.line == 9
    assert problem.hint == "quote it, or use true/false for a boolean"


def test_duplicate_key_names_both_lines(monkeypatch):
    (problem,) = compile_broken("duplicate_key", monkeypatch).problems
    assert (problem.line, problem.key_path) == (5, "name")
    assert problem.hint == "first defined on line 3; keep one"


# --- for_each -------------------------------------------------------------------------------------


def test_each_names_are_unknown_outside_a_for_each_stage(monkeypatch):
    problems = compile_broken("each_outside_for_each", monkeypatch).problems
    assert [(p.key_path, p.message.split(" uses ")[1].split(",")[0]) for p in problems] == [
        ("stages[0].prompt", "'each'"), ("stages[0].prompt", "'each_index'"),
        ("stages[0].result", "'each_index'"), ("stages[1].for_each", "'each'"), ("score.formula", "'each'")]
    # inside the for_each stage (its result) each_index is known: no problem at stages[1].result
    assert "stages[1].result" not in {p.key_path for p in problems}


def test_each_is_a_reserved_name(monkeypatch):
    problems = compile_broken("each_stage_id", monkeypatch).problems
    assert [(p.key_path, p.code) for p in problems] == [("vars.each_index", "reserved-name"),
                                                      ("stages[0].id", "reserved-name")]
    assert "stage id 'each' clashes with a reserved or vars name" in problems[1].message


FOR_EACH_SPEC = """
    format: 1
    id: each_schema
    name: Each schema
    description: d
    version: 1
    stages:
      - id: analyze
        {for_each}
        prompt: e/ask.j2
        output_schema:
          type: object
          required: [words]
          properties:
            words: {{type: array, maxItems: {{$expr: "each | wordcount"}}}}
        checks:
          - expect: "answer.words | length <= each_index + 1"
            message: "at most as many words as the position"
    score:
      formula: "1"
"""


def test_each_in_schema_expr_and_checks_needs_for_each(write_spec):
    prompts = {"e/ask.j2": "Words of {{ run.output }}"}
    compiled = compile_file(write_spec("each_schema", FOR_EACH_SPEC.format(for_each="for_each: run.input"), prompts))
    assert compiled.stages[0].for_each.source == "run.input"
    with pytest.raises(SpecError) as info:
        compile_file(write_spec("each_schema", FOR_EACH_SPEC.format(for_each=""), prompts))
    assert [(p.code, p.key_path) for p in info.value.problems] == [
        ("undefined-name", "stages[0].output_schema.properties.words.maxItems"),
        ("undefined-name", "stages[0].checks[0].expect")]


def test_for_each_is_a_prompt_stage_key_only(tmp_path):
    source = (SPEC_FIXTURES / "broken" / "id_mismatch.yaml").read_text().replace("id: id_mismatched", "id: spec")
    source = source.replace("    args:", "    for_each: run.input\n    args:")
    with pytest.raises(SpecError) as info:
        compile_text(source, tmp_path / "spec.yaml")
    assert [(p.code, p.key_path) for p in info.value.problems] == [("unknown-key", "stages[0].for_each")]
    prompt_stage = spec_json_schema()["$defs"]["PromptStage"]["properties"]
    assert prompt_stage["for_each"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_several_problems_reported_together(monkeypatch):
    problems = compile_broken("many_problems", monkeypatch).problems
    assert len(problems) == 7
    assert len({p.key_path for p in problems}) == 6
    assert [p.line for p in problems] == sorted(p.line for p in problems)
    by_path = {p.key_path: p for p in problems}
    assert by_path["stages[1].when"].hint == "did you mean 'length'?"
    assert by_path["stages[1].args.reference"].hint == "did you mean 'run.ground_truth'?"


def copy_broken(tmp_path: Path, *names: str) -> Path:
    """Copy broken specs into tmp_path/broken, with the prompts they use beside that folder."""
    shutil.copytree(SPEC_FIXTURES / "prompts", tmp_path / "prompts")
    (tmp_path / "broken").mkdir()
    for name in names:
        shutil.copy(BROKEN / f"{name}.yaml", tmp_path / "broken" / f"{name}.yaml")
    return tmp_path / "broken"


def test_validate_directory_reports_every_file(tmp_path):
    problems = validate_directory([copy_broken(tmp_path, "unknown_key", "duplicate_key")])
    assert sorted((Path(p.file).name, p.code) for p in problems) == [
        ("duplicate_key.yaml", "duplicate-key"), ("unknown_key.yaml", "unknown-key")]


def test_cli_validate_directory_with_two_broken_files(tmp_path):
    folder = copy_broken(tmp_path, "unknown_key", "wrong_type")
    result = CliRunner().invoke(app, ["validate", str(folder)])
    assert result.exit_code == 2
    assert f"{folder}/unknown_key.yaml:9:5: stages[0].temprature: unknown key" in result.stderr
    assert f"{folder}/wrong_type.yaml:7:3: judge.max_reasks:" in result.stderr
    assert "2 problem(s) in 2 of 2 spec(s)" in result.stderr
    assert result.stdout == ""


def test_missing_template_and_id_mismatch_positions(monkeypatch):
    (problem,) = compile_broken("missing_template", monkeypatch).problems
    assert (problem.line, problem.key_path) == (8, "stages[0].prompt")
    (problem,) = compile_broken("id_mismatch", monkeypatch).problems
    assert problem.hint.endswith("set id: id_mismatch")


# --- the loader raises nothing but SpecError -----------------------------------------------------

PROPERTY_PATH = ROOT / "scorer_specs" / "prop.yaml"  # never read; compile_text gets the text
YAMLISH = st.text(alphabet=st.sampled_from(list(":-[]{}!&*#|>'\"%@`,?~\n\t .0123456789abcdefnoesyt_$<")), max_size=120)
JSON_LEAVES = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True)
               | st.text(max_size=20))
JSON_DOCS = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=25,
)
SPEC_WORDS = ["format", "id", "name", "description", "version", "fields", "options", "judge", "vars", "stages",
              "score", "reason", "prompt", "function", "args", "output_schema", "when", "checks", "formula", "let",
              "not_scorable", "template", "round", "scale", "$expr", "type", "properties", "required", "expect"]


def _compile_only_spec_errors(text: str, path: Path = PROPERTY_PATH) -> None:
    try:
        compile_text(text, path)
    except SpecError as exc:
        assert exc.problems, "a SpecError carries at least one problem"
        assert all(p.code and p.message for p in exc.problems)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), YAMLISH))
def test_arbitrary_text_raises_only_spec_error(text):
    _compile_only_spec_errors(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_DOCS)
def test_arbitrary_json_documents_raise_only_spec_error(doc):
    _compile_only_spec_errors(yaml.safe_dump(doc, allow_unicode=True))
    _compile_only_spec_errors(json.dumps(doc))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RUNNABLE), st.data())
def test_mutated_shipped_specs_raise_only_spec_error(path, data):
    """Replace one value anywhere in a shipped spec (or add a key) and compile: only SpecError."""
    doc = load_yaml(path.read_text(encoding="utf-8"), str(path)).data
    where = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    value = data.draw(JSON_DOCS | st.sampled_from(SPEC_WORDS) | st.text(alphabet="{}%#()|.'_ab", max_size=30))
    parent = doc
    for part in where[:-1]:
        parent = parent[part]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        parent[data.draw(st.sampled_from(SPEC_WORDS))] = value
    else:
        parent[where[-1]] = value
    _compile_only_spec_errors(json.dumps(doc), ROOT / "scorer_specs" / path.name)


@pytest.mark.parametrize("formula", ["(" * 3000 + "1" + ")" * 3000, " + ".join(["1"] * 20000)],
                         ids=["deep-parentheses", "long-sum"])
def test_pathological_expressions_are_spec_errors(tmp_path, formula):
    source = (BROKEN / "id_mismatch.yaml").read_text().replace("id: id_mismatched", "id: spec")
    source = source.replace('formula: "analyze.ratio"', f'formula: "{formula}"')
    with pytest.raises(SpecError) as info:
        compile_text(source, tmp_path / "spec.yaml")
    assert [p.code for p in info.value.problems] == ["expression-syntax"]


@pytest.mark.parametrize("text", [
    "a: " + "[" * 5000 + "]" * 5000,
    "a: " + "[" * 200_000 + "]" * 200_000,  # deep enough to crash a composer that recurses in C
    "- " * 200_000 + "x",
    "{a: " * 200_000 + "x" + "}" * 200_000,
], ids=["flow-5k", "flow-200k", "block-200k", "mapping-200k"])
def test_deeply_nested_yaml_is_a_spec_error(tmp_path, text):
    with pytest.raises(SpecError) as info:
        compile_text(text, tmp_path / "spec.yaml")
    assert [(p.code, p.message) for p in info.value.problems] == [
        ("yaml-too-large", "the document is nested too deeply")]


def test_alias_bomb_is_a_spec_error(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(SpecError) as info:
        compile_text("\n".join(lines), tmp_path / "spec.yaml")
    assert [p.code for p in info.value.problems] == ["yaml-too-large"]


def test_non_string_expr_in_output_schema(tmp_path):
    source = textwrap.dedent("""
        format: 1
        id: spec
        name: S
        description: d
        version: 1
        stages:
          - id: analyze
            prompt: common/instructions.j2
            output_schema:
              type: object
              properties: {xs: {type: array, minItems: {$expr: 5}}}
        score:
          formula: "1"
    """)
    with pytest.raises(SpecError) as info:
        compile_text(source, tmp_path / "spec.yaml")
    (problem,) = info.value.problems
    assert (problem.code, problem.key_path) == ("invalid-schema", "stages[0].output_schema.properties.xs.minItems")


# --- the sandbox ------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["x.__class__", "run['__class__']", "run.output.__globals__", "run._private",
                                    "run['__cla' ~ 'ss__']"])
def test_dunder_expressions_rejected_at_load(source):
    with pytest.raises(TemplateSyntaxError):
        Expression(source)
    with pytest.raises(TemplateSyntaxError):
        Template("{{ " + source + " }}")


@pytest.mark.parametrize("place, code", [("template", "template-syntax"), ("expression", "expression-syntax")])
def test_dunder_in_spec_is_spec_error_with_code(write_spec, place, code):
    template = "{{ x.__class__ }}" if place == "template" else "{{ run.output }}"
    formula = "x.__class__" if place == "expression" else "1"
    path = write_spec("sandboxed", f"""
        format: 1
        id: sandboxed
        name: S
        description: d
        version: 1
        stages:
          - id: analyze
            prompt: s/ask.j2
            output_schema: {{type: object}}
        score:
          formula: "{formula}"
    """, {"s/ask.j2": template})
    with pytest.raises(SpecError) as info:
        compile_file(path)
    assert [p.code for p in info.value.problems] == [code]
    assert "access to '__class__' is not allowed" in info.value.problems[0].message


@pytest.mark.parametrize("tag", ["{% include 'x.j2' %}", "{% extends 'x.j2' %}", "{% import 'x.j2' as x %}"])
def test_template_loading_tags_rejected(tag):
    with pytest.raises(TemplateSyntaxError, match="not supported"):
        Template(tag)


@pytest.mark.parametrize("prompt", [False, True])
@pytest.mark.parametrize("source", ["Judge only the text.\n", "  Two\n  lines >>> kept\n\n", "{# a note #}Text", "",
                                    "{% raw %}{{ x }}{% endraw %}"])
def test_a_text_only_template_renders_as_jinja_does(source, prompt):
    """Text without `{{ }}` or `{% %}` (a judge's instructions) is rendered once, at load: the
    same text Jinja gives on every render."""
    expected = environment(prompt).from_string(source).render()
    template = Template(source, prompt=prompt)
    assert template.render(prepare({"x": 1})) == template.render(prepare({})) == expected


def test_a_template_with_values_is_rendered_each_time():
    template = Template("Claim: {{ x }}{% if x > 1 %} (more){% endif %}", prompt=True)
    assert [template.render(prepare({"x": x})) for x in (1, 2)] == ["Claim: 1", "Claim: 2 (more)"]


def test_dynamic_dunder_refused_at_run_time(write_spec):
    """A dunder name built at run time passes the load check; the sandbox still refuses it and
    the item fails as an expression error (no score, nothing leaked)."""
    path = write_spec("dynamic", """
        format: 1
        id: dynamic
        name: S
        description: d
        version: 1
        vars:
          attr: "'__cla' ~ 'ss__'"
        stages:
          - id: analyze
            function: textual_difference
            args: {reference: "run.input", candidate: "run.output"}
        score:
          let:
            leaked: "run[attr] | string"
          formula: "analyze.ratio"
    """)
    result = Scorer(compile_file(path)).run(output="a", input="a")
    assert result.status == "failed"
    assert result.error.kind == "expression"
    assert result.score is None
    assert "<class" not in result.model_dump_json()


# --- the shipped catalogue --------------------------------------------------------------------------


def _minimal(schema: dict):
    """A small instance of a JSON Schema (the subset the shipped specs use)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _minimal(props.get(k, {})) for k in schema.get("required", props)}
    if kind == "array":
        n = max(schema.get("minItems", 1), 1)
        n = min(n, schema.get("maxItems", n))
        return [_minimal(schema.get("items", {})) for _ in range(n)]
    if kind == "string":
        return "x" * max(schema.get("minLength", 1), 1)
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


# A value for each field a shipped spec declares (the dry run gives a spec those it declares).
DECLARED_FIELDS = {
    "rubric": "Names a colour.",
    "criterion": "The answer names a colour.",
    "baseline_response": "The sky is blue.",
    "available_tools": [{"name": "look_up", "description": "Looks a fact up."}],
    "expected_trajectory": ["look_up"],
    "tool": "look_up",
    "order": ["look_up"],
}
DRY_RUN_OPTIONS = {"tool_call_accuracy_rule": {"expectedTool": "look_up"}}  # nothing to check against otherwise


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_shipped_spec_loads_compiles_and_dry_runs(path):
    compiled = compile_file(path)
    assert compiled.id == path.stem
    assert len(compiled.hash) == 64
    judge = FakeJudge(default=lambda call: _minimal(call.schema))
    scorer = Scorer(compiled, judge=judge, options=DRY_RUN_OPTIONS.get(path.stem))
    declared = {name: value for name, value in DECLARED_FIELDS.items() if name in compiled.declared}
    result = scorer.run(output="The sky is blue.", input="What colour is the sky?",
                        ground_truth="The sky is blue.", context=["The sky is blue."],
                        tool_calls=[{"name": "look_up", "arguments": {"q": "sky"}, "result": "blue"}],
                        output_a="The sky is blue.", output_b="The sky is green.", **declared)
    assert result.status == "scored", result.error
    assert 0 <= result.score <= scorer.scale
    assert result.reason
    assert json.loads(result.model_dump_json(by_alias=True))["scorer"] == path.stem
    assert compiled.uses_judge == bool(judge.calls)


def test_builtin_catalogue_is_the_shipped_folder():
    assert {e.id for e in list_specs(Path("/"))} == {p.stem for p in SHIPPED}
    assert builtin_specs_dir().resolve() == (ROOT / "scorer_specs").resolve()


def test_shipped_json_schema_is_current():
    shipped = json.loads((ROOT / "scorer_specs" / "scorespec.schema.json").read_text(encoding="utf-8"))
    assert shipped == spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(shipped)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_spec_points_at_schema_and_validates(path):
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=./scorespec.schema.json"
    doc = load_yaml(text, str(path)).data
    validator = jsonschema.Draft202012Validator(spec_json_schema())
    assert [e.message for e in validator.iter_errors(doc)] == []


def test_json_schema_rejects_what_the_loader_rejects():
    validator = jsonschema.Draft202012Validator(spec_json_schema())
    doc = load_yaml((BROKEN / "unknown_key.yaml").read_text(), "x").data
    assert not validator.is_valid(doc)


def test_json_schema_takes_a_child_stage_by_id_and_the_keys_it_changes():
    """A spec that extends another gives a stage partly (merged by id, checked whole at load); a
    spec that extends none gives every stage whole; a misspelt key is refused either way."""
    validator = jsonschema.Draft202012Validator(spec_json_schema())
    child = {"format": 1, "id": "strict", "extends": "faithfulness", "stages": [{"id": "analyze", "prompt": "s/v.j2"}]}
    assert validator.is_valid(child)
    assert not validator.is_valid({**child, "stages": [{"id": "analyze", "promt": "s/v.j2"}]})
    whole = {"format": 1, "id": "alone", "name": "A", "description": "d", "version": 1, "score": {"formula": "1"},
             "stages": [{"id": "analyze", "prompt": "s/v.j2"}]}
    assert not validator.is_valid(whole)
    assert validator.is_valid({**whole, "stages": [{"id": "analyze", "prompt": "s/v.j2", "output_schema": {}}]})


# --- where specs and templates resolve ---------------------------------------------------------------


def test_local_spec_shadows_builtin(tmp_path, monkeypatch):
    (tmp_path / "scorer_specs").mkdir()
    local = (ROOT / "scorer_specs" / "textual_difference.yaml").read_text().replace(
        "name: Textual difference", "name: Local textual difference")
    (tmp_path / "scorer_specs" / "textual_difference.yaml").write_text(local)
    monkeypatch.chdir(tmp_path)
    compiled = load_spec("textual_difference")
    assert compiled.path == Path.cwd() / "scorer_specs" / "textual_difference.yaml"
    assert compiled.name == "Local textual difference"
    assert engine.load_spec("faithfulness").path.resolve() == (ROOT / "scorer_specs" / "faithfulness.yaml").resolve()
    entries = {e.id: e for e in list_specs()}
    assert (entries["textual_difference"].origin, entries["textual_difference"].shadows_builtin) == ("local", True)
    assert entries["faithfulness"].origin == "builtin"
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    line = next(row for row in result.stdout.splitlines() if row.startswith("textual_difference"))
    assert "Local textual difference" in line and "local (shadows built-in)" in line


def test_templates_resolve_beside_the_spec_first_then_builtin(tmp_path, monkeypatch):
    (tmp_path / "scorer_specs").mkdir()
    shutil.copy(ROOT / "scorer_specs" / "faithfulness.yaml", tmp_path / "scorer_specs" / "faithfulness.yaml")
    own = tmp_path / "prompts" / "faithfulness" / "extract_claims.j2"
    own.parent.mkdir(parents=True)
    own.write_text("TEAM PROMPT: claims of <<<{{ run.output }}>>>")
    monkeypatch.chdir(tmp_path)
    compiled = load_spec("faithfulness")
    assert compiled.stages[0].template.file == str(own.resolve())
    assert compiled.stages[1].template.file == str((builtin_prompts_dir() / "faithfulness/verify_claim.j2").resolve())
    shown = Scorer(compiled, judge=FakeJudge()).render(output="Paris is in France.")
    assert shown[0][0] == "preprocess"
    assert "TEAM PROMPT: claims of <<<Paris is in France.>>>" in shown[0][1]
    # the hash covers templates: the team's prompt changes it
    assert compiled.hash != load_spec(ROOT / "scorer_specs" / "faithfulness.yaml").hash


def test_unknown_name_suggests_nearest(tmp_path):
    with pytest.raises(FileNotFoundError, match="did you mean 'faithfulness'"):
        load_spec("faithfulnes", cwd=tmp_path)


@pytest.mark.parametrize("name", ["a" * 300, "my_specs/" + "b" * 300 + ".yaml"])
def test_a_name_too_long_for_a_file_is_a_clear_error_not_an_os_error(tmp_path, name):
    with pytest.raises(FileNotFoundError, match="longer than a file name can be") as info:
        load_spec(name, cwd=tmp_path)
    assert len(str(info.value)) < 250  # the name shown cut, not whole
    result = CliRunner().invoke(app, ["run", name, "--output", "x"])
    assert result.exit_code == 2 and "longer than a file name can be" in result.output
    assert "Traceback" not in result.output and "Errno" not in result.output


@pytest.mark.parametrize("parent", ["c" * 300, "./" + "c" * 300 + ".yaml"])
def test_extending_a_name_too_long_for_a_file_is_a_spec_error_at_extends(tmp_path, parent):
    (tmp_path / "scorer_specs").mkdir()
    path = tmp_path / "scorer_specs" / "child.yaml"
    path.write_text(f"format: 1\nid: child\nextends: {parent}\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        compile_file(path)
    problem = info.value.problems[0]
    assert (problem.code, problem.key_path, problem.line) == ("unknown-parent", "extends", 3)
    assert "longer than a file name can be (305 bytes; at most 255)" in problem.message


def test_a_built_in_broken_by_a_childs_change_is_reported_in_the_childs_spec(tmp_path):
    """The child removes the vars faithfulness's reasons use: the built-in is valid alone, so
    every problem is placed in the file the user can edit, the built-in's place in the message."""
    (tmp_path / "scorer_specs").mkdir()
    path = tmp_path / "scorer_specs" / "strict_faith.yaml"
    path.write_text("format: 1\nid: strict_faith\nextends: faithfulness\nvars: null\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        compile_file(path)
    problems = info.value.problems
    assert problems and {(p.file, p.line, p.key_path) for p in problems} == {(str(path), 4, "vars")}
    assert all("— in the built-in scorer_specs/faithfulness.yaml:" in p.message
               or "— in the built-in prompts/faithfulness/" in p.message for p in problems)
    assert all(p.message.endswith("which fails with this spec's 'vars'") for p in problems)


# --- packaging ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_wheel_ships_builtins_and_loads_them_from_any_folder(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("scorespec-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for spec in SHIPPED:
        assert f"engine/_builtin/scorer_specs/{spec.name}" in names
    for prompt in (ROOT / "prompts").rglob("*.j2"):
        assert f"engine/_builtin/prompts/{prompt.relative_to(ROOT / 'prompts').as_posix()}" in names
    assert "engine/_builtin/scorer_specs/scorespec.schema.json" in names
    assert "engine/run/data/prices.yaml" in names  # the shipped price table (engine.run.prices)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import engine, json; c = engine.load_spec('faithfulness'); "
            "from engine.run.prices import load_prices; assert load_prices().price('openai/gpt-4o-mini'); "
            "print(json.dumps([engine.__file__, str(c.path), c.stages[0].template.file]))")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    module, spec_path, template = json.loads(out.stdout)
    builtin = tmp_path / "site" / "engine" / "_builtin"
    assert Path(module).is_relative_to(tmp_path / "site")
    assert Path(spec_path).is_relative_to(builtin)
    assert Path(template).is_relative_to(builtin)


def test_option_schema_nested_too_deeply_is_a_problem_not_a_crash(tmp_path):
    text = (ROOT / "scorer_specs" / "textual_difference.yaml").read_text(encoding="utf-8")
    deep = "{items: " * 300 + "{type: string}" + "}" * 300
    text = text.replace("vars:\n", f"options:\n  deep: {deep}\n\nvars:\n", 1)
    with pytest.raises(SpecError) as info:
        compile_text(text, tmp_path / "textual_difference.yaml")
    [problem] = [p for p in info.value.problems if p.key_path == "options.deep"]
    assert problem.code == "option-schema"
    assert "nested too deeply to check" in problem.message


def test_a_misspelled_schema_keyword_is_a_load_problem_at_its_key(tmp_path):
    text = (ROOT / "scorer_specs" / "textual_difference.yaml").read_text(encoding="utf-8")
    text = text.replace("vars:\n", "options:\n  cutoff: {type: number, defualt: 10}\n"
                        "  mine: {type: string, default: a, x-note: kept, widget: text}\n\nvars:\n", 1)
    with pytest.raises(SpecError) as info:
        compile_text(text, tmp_path / "textual_difference.yaml")
    [problem] = info.value.problems  # x-note and widget resemble no keyword: allowed
    assert (problem.code, problem.key_path) == ("option-schema", "options.cutoff.defualt")
    assert problem.hint == "did you mean 'default'?"
    assert problem.line == text.splitlines().index("  cutoff: {type: number, defualt: 10}") + 1


def test_a_misspelled_keyword_in_a_judge_answer_schema_is_a_load_problem(tmp_path):
    spec = ROOT / "scorer_specs" / "answer_similarity.yaml"
    text = spec.read_text(encoding="utf-8")
    assert "enum:" in text
    text = text.replace("enum:", "enmu:", 1)
    with pytest.raises(SpecError) as info:
        compile_text(text, tmp_path / "answer_similarity.yaml")
    typo = [p for p in info.value.problems if "'enmu'" in p.message]
    assert len(typo) == 1 and typo[0].code == "invalid-schema" and typo[0].hint == "did you mean 'enum'?"
    assert typo[0].key_path.endswith(".enmu")

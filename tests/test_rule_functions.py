"""Rule functions declare their arguments and result: load-time checks of `args` and of every
key read from a rule stage's result, checks at call time, entry points, `list --functions`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine import functions
from engine.cli.main import app
from engine.core.errors import SpecError
from engine.functions.rule_function import rule_function
from engine.interpret.scorer import Scorer
from engine.spec.compile import compile_file

SPEC = """
    format: 1
    id: {id}
    name: N
    description: d
    version: 1
    stages:
      - id: analyze
        function: textual_difference
        args: {args}
    score:
      formula: "{formula}"
"""
ARGS = '{reference: "run.ground_truth", candidate: "run.output"}'


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(functions, "_REGISTRY", dict(functions._REGISTRY))
    monkeypatch.setattr(functions, "_BROKEN", {})
    monkeypatch.setattr(functions, "_entry_points_loaded", False)
    return functions


def problems(path) -> list[tuple[str, str, str]]:
    with pytest.raises(SpecError) as info:
        compile_file(path)
    return [(p.code, p.key_path, p.message) for p in info.value.problems]


def test_a_misspelled_result_key_is_a_load_time_error(write_spec):
    path = write_spec("typo", SPEC.format(id="typo", args=ARGS, formula="analyze.ratoi * analyze.confidence"))
    with pytest.raises(SpecError) as info:
        compile_file(path)
    [problem] = info.value.problems
    assert (problem.code, problem.key_path) == ("undefined-name", "score.formula")
    assert "'analyze.ratoi'" in problem.message
    assert problem.hint == "did you mean 'analyze.ratio'?"
    assert problem.line == 11  # the formula's line in the spec


def test_a_result_key_read_in_a_reason_template_is_checked_too(write_spec):
    source = SPEC.format(id="reason_typo", args=ARGS, formula="analyze.ratio") + \
        '    reason:\n      - template: "{{ analyze.lenghtDiff }}"\n'
    path = write_spec("reason_typo", source)
    [(code, key, message)] = problems(path)
    assert (code, key) == ("undefined-name", "reason[0].template") and "'analyze.lenghtDiff'" in message


def test_an_unknown_argument_is_a_load_time_error_with_a_hint(write_spec):
    args = '{reference: "run.ground_truth", candidate: "run.output", ignore_cas: "true"}'
    path = write_spec("extra_arg", SPEC.format(id="extra_arg", args=args, formula="analyze.ratio"))
    [(code, key, message)] = problems(path)
    assert (code, key, message) == ("unknown-argument", "stages[0].args.ignore_cas",
                                    "textual_difference has no argument 'ignore_cas'")
    args = '{reference: "run.ground_truth", candidat: "run.output"}'
    path = write_spec("typo_arg", SPEC.format(id="typo_arg", args=args, formula="analyze.ratio"))
    with pytest.raises(SpecError) as info:
        compile_file(path)
    by_code = {p.code: p for p in info.value.problems}
    assert by_code["unknown-argument"].hint == "did you mean 'candidate'?"
    assert by_code["missing-argument"].message == "textual_difference needs the argument 'candidate'"


def test_a_missing_required_argument_is_a_load_time_error(write_spec):
    path = write_spec("no_args", SPEC.format(id="no_args", args="{}", formula="analyze.ratio"))
    [(code, key, message)] = problems(path)
    assert (code, key, message) == ("missing-argument", "stages[0].args",
                                    "textual_difference needs the arguments 'candidate', 'reference'")


def test_optional_arguments_may_be_left_out(write_spec):
    source = SPEC.replace("textual_difference", "content_similarity")
    path = write_spec("partial", source.format(id="partial", args=ARGS, formula="analyze.similarity"))
    assert Scorer(compile_file(path)).run(output="night", ground_truth="nacht").score == 0.25


def test_arguments_are_checked_against_their_schemas_when_called(write_spec):
    args = '{reference: "run.ground_truth", candidate: "run.output", ignore_case: "\'yes\'"}'
    source = SPEC.replace("textual_difference", "content_similarity")
    path = write_spec("bad_value", source.format(id="bad_value", args=args, formula="analyze.similarity"))
    result = Scorer(compile_file(path)).run(output="a", ground_truth="a")
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "function", "analyze")
    assert result.error.message == "content_similarity raised TypeError: argument 'ignore_case': 'yes' is not of " \
                                   "type 'boolean'"


def test_a_result_its_schema_does_not_allow_fails_the_item(registry, write_spec):
    @rule_function(result={"type": "object", "properties": {"share": {"type": "number", "maximum": 1}},
                           "required": ["share"], "additionalProperties": False})
    def share(text):
        return {"share": len(text)}

    registry.register("share", share)
    source = SPEC.replace("textual_difference", "share").replace("formula: \"{formula}\"", "formula: \"1\"")
    path = write_spec("shares", source.format(id="shares", args='{text: "run.output"}'))
    scorer = Scorer(compile_file(path))
    assert scorer.run(output="a").score == 1
    failed = scorer.run(output="abc")
    assert failed.error.kind == "function"
    assert failed.error.message == "share raised ValueError: share returned a result its declared schema does not " \
                                   "allow: 3 is greater than the maximum of 1"


def test_declarations_are_checked_when_made():
    with pytest.raises(ValueError, match="declares argument\\(s\\) it does not take: txt"):
        rule_function(lambda text: {}, name="f", result={"type": "object"}, args={"txt": {"type": "string"}})
    with pytest.raises(ValueError, match="the result schema is not valid JSON Schema"):
        rule_function(lambda text: {}, name="f", result={"type": "objekt"})
    declared = rule_function(lambda text, flag=False, **more: {}, name="f", result={"type": "object"},
                             args={"text": {"type": "string"}})
    assert (declared.required, dict(declared.defaults), declared.open_args) == ({"text"}, {"flag": False}, True)
    assert declared.signature() == "f(text: string, flag: any = false, **more)"
    assert declared.result_keys is None


class _EntryPoint:
    def __init__(self, name, obj, value="plugin:thing"):
        self.name, self._obj, self.value = name, obj, value

    def load(self):
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_an_entry_point_must_declare_its_result(registry, monkeypatch, write_spec):
    declared = rule_function(lambda text: {"n": len(text)}, name="length",
                             result={"type": "object", "properties": {"n": {"type": "integer"}}})
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [
        _EntryPoint("undeclared", lambda text: {}), _EntryPoint("broken", ImportError("no module named plugin")),
        _EntryPoint("length", declared)])
    assert "length" in registry.names() and "undeclared" not in registry.names()
    source = SPEC.replace("textual_difference", "undeclared")
    path = write_spec("plugin", source.format(id="plugin", args='{text: "run.output"}', formula="1"))
    with pytest.raises(SpecError) as info:
        compile_file(path)
    [problem] = info.value.problems
    assert problem.code == "unknown-function"
    assert problem.hint == ("entry point 'undeclared' (plugin:thing) is not a rule function declaring its arguments "
                            "and result: wrap it with engine.functions.rule_function(fn, result={...})")
    with pytest.raises(KeyError, match="cannot be loaded: ImportError: no module named plugin"):
        registry.lookup("broken")
    source = SPEC.replace("textual_difference", "length")
    path = write_spec("plugin_ok", source.format(id="plugin_ok", args='{text: "run.output"}', formula="analyze.m"))
    [(code, _, message)] = problems(path)
    assert code == "undefined-name" and "'analyze.m'" in message


def test_list_functions_shows_signatures_results_and_limits():
    result = CliRunner().invoke(app, ["list", "--functions"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    at = lines.index("content_similarity(reference: string, candidate: string, ignore_case: boolean = true, "
                     "ignore_whitespace: boolean = true, normalize: boolean = true)")
    assert lines[at + 1] == "  -> {similarity: number, shared: integer, referenceBigrams: integer, " \
                            "candidateBigrams: integer}"
    assert lines[at + 2].endswith("Limit: each text up to 1,000,000 characters.")
    assert sum(1 for line in lines if line.startswith("  -> ")) == len(functions.names())


def test_list_functions_json_publishes_the_schemas():
    result = CliRunner().invoke(app, ["list", "--functions", "--json"])
    published = {f["name"]: f for f in json.loads(result.stdout)}
    assert set(published) == set(functions.names())
    similarity = published["content_similarity"]
    assert similarity["args"]["required"] == ["candidate", "reference"]
    assert similarity["args"]["properties"]["ignore_case"] == {"type": "boolean", "default": True}
    assert similarity["result"]["properties"]["similarity"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert published["textual_difference"]["result"]["required"] == ["ratio", "changes", "lengthDiff", "confidence"]

"""`extends:` — a spec built on another, overriding only what it changes (issue 17)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine.core.errors import SpecError
from engine.interpret.scorer import Scorer
from engine.spec.compile import compile_file, validate_directory
from engine.spec.plans import PromptStagePlan
from engine.testing import FakeJudge

BASE = """
format: 1
id: base
name: Base
description: A two-stage base.
version: 1
options:
  scale: {type: number, exclusiveMinimum: 0, default: 1}
  weight: {type: number, default: 0.5}
stages:
  - id: preprocess
    prompt: base/list.j2
    output_schema:
      type: object
      required: [items]
      properties: {items: {type: array, items: {type: string}}}
    result: answer['items']
  - id: analyze
    when: preprocess | length > 0
    prompt: base/judge.j2
    output_schema:
      type: object
      required: [verdict]
      properties: {verdict: {type: string, enum: ["yes", "no"]}}
    checks:
      - id: known
        expect: answer.verdict in ['yes', 'no']
        message: say yes or no
score:
  not_scorable: {when: "preprocess | length == 0", reason: "nothing listed"}
  formula: "(1 if analyze.verdict == 'yes' else 0) * options.scale"
  round: 2
reason:
  - id: good
    when: score > 0
    template: "good {{ score }}"
  - id: bad
    template: "bad {{ score }}"
"""
PROMPTS = {"base/list.j2": "List the items of {{ run.output }}.", "base/judge.j2": "Judge {{ preprocess }}."}


@pytest.fixture
def specs(tmp_path: Path):
    """Write specs (name → YAML) and prompts into tmp_path's scorer_specs/ and prompts/."""

    def write(specs: dict[str, str], prompts: dict[str, str] | None = None) -> Path:
        for name, text in specs.items():
            path = tmp_path / "scorer_specs" / f"{name}.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        for rel, body in {**PROMPTS, **(prompts or {})}.items():
            target = tmp_path / "prompts" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
        return tmp_path / "scorer_specs"

    return write


def child(body: str, name: str = "child", extends: str = "base.yaml") -> str:
    return f"format: 1\nid: {name}\nextends: {extends}\n" + textwrap.dedent(body)


def run(path: Path, answers: dict, **item) -> tuple:
    judge = FakeJudge(answers)
    result = Scorer(compile_file(path), judge=judge).run(**{"output": "x", **item})
    return result, judge


def test_a_child_overrides_one_stage_prompt_and_keeps_the_rest(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: analyze\n    prompt: mine/judge.j2\n")},
                   {"mine/judge.j2": "Strictly judge {{ preprocess }}."})
    plan = compile_file(folder / "child.yaml")
    analyze = plan.stages[1]
    assert isinstance(analyze, PromptStagePlan)
    assert analyze.template.source == "Strictly judge {{ preprocess }}."
    assert analyze.when is not None and analyze.when.source == "preprocess | length > 0"  # kept
    assert plan.chain == ("child", "base") and plan.name == "Base"
    result, judge = run(folder / "child.yaml", {"preprocess": {"items": ["a"]}, "analyze": {"verdict": "yes"}})
    assert result.score == 1 and result.reason == "good 1.0"
    assert judge.calls[1].messages[-1]["content"] == "Strictly judge ['a']."
    assert result.spec_chain == ["child", "base"]
    assert plan.hash != compile_file(folder / "base.yaml").hash


def test_an_option_default_is_merged_into_the_parents_schema(specs):
    folder = specs({"base": BASE, "child": child("options:\n  scale: {default: 10}\n")})
    plan = compile_file(folder / "child.yaml")
    assert plan.options.defaults == {"scale": 10, "weight": 0.5}
    assert plan.options.schemas["scale"] == {"type": "number", "exclusiveMinimum": 0, "default": 10}
    result, _ = run(folder / "child.yaml", {"preprocess": {"items": ["a"]}, "analyze": {"verdict": "yes"}})
    assert result.score == 10


def test_one_reason_case_is_overridden_by_id(specs):
    folder = specs({"base": BASE, "child": child("reason:\n  - id: bad\n    template: 'poor {{ score }}'\n")})
    reasons = compile_file(folder / "child.yaml").reasons
    assert [r.template.source for r in reasons] == ["good {{ score }}", "poor {{ score }}"]
    result, _ = run(folder / "child.yaml", {"preprocess": {"items": ["a"]}, "analyze": {"verdict": "no"}})
    assert result.reason == "poor 0.0"


def test_a_reason_list_without_ids_replaces_the_parents(specs):
    folder = specs({"base": BASE, "child": child("reason:\n  - template: only\n")})
    assert [r.template.source for r in compile_file(folder / "child.yaml").reasons] == ["only"]


def test_a_new_stage_is_placed_after_the_one_it_names(specs):
    new_stages = """
    stages:
      - id: double_check
        after: preprocess
        prompt: base/judge.j2
        output_schema: {type: object, properties: {ok: {type: boolean}}}
      - id: second
        after: preprocess
        function: textual_difference
        args: {reference: "'a'", candidate: "'a'"}
      - id: last
        function: textual_difference
        args: {reference: "'a'", candidate: "'b'"}
    """
    folder = specs({"base": BASE, "child": child(new_stages)})
    plan = compile_file(folder / "child.yaml")
    assert [s.id for s in plan.stages] == ["preprocess", "double_check", "second", "analyze", "last"]


def test_null_removes_a_parents_value(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: analyze\n    when: null\n"
                                                "score:\n  not_scorable: null\n")})
    plan = compile_file(folder / "child.yaml")
    assert plan.stages[1].when is None and plan.score.not_scorable is None
    result, judge = run(folder / "child.yaml", {"preprocess": {"items": []}, "analyze": {"verdict": "no"}})
    assert result.score == 0 and len(judge.calls) == 2  # no when, no not-scorable rule: judged anyway


def test_a_chain_of_three_and_a_check_overridden_by_id(specs):
    middle = child("options:\n  scale: {default: 5}\n", name="middle")
    top = child("""
    stages:
      - id: analyze
        checks:
          - id: known
            expect: answer.verdict == 'yes'
            message: only yes
    """, name="top", extends="middle")
    folder = specs({"base": BASE, "middle": middle, "top": top})
    plan = compile_file(folder / "top.yaml")
    assert plan.chain == ("top", "middle", "base") and plan.options.defaults["scale"] == 5
    assert [c.expect.source for c in plan.stages[1].checks] == ["answer.verdict == 'yes'"]


def test_a_cycle_is_an_error_naming_the_files(specs):
    folder = specs({"a": child("name: A\n", name="a", extends="b"), "b": child("name: B\n", name="b", extends="a")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "a.yaml")
    problem = info.value.problems[0]
    assert problem.code == "extends-cycle"
    assert "a.yaml" in problem.message and "b.yaml" in problem.message
    assert (Path(problem.file).name, problem.line, problem.column) == ("a.yaml", 3, 1)  # where `extends` is


def test_an_abstract_base_cannot_be_run_and_its_children_can(specs):
    base = "format: 1\nid: judged\nabstract: true\noptions:\n  scale: {type: number, default: 3}\n"
    concrete = BASE.replace("id: base", "id: child\nextends: judged").replace(
        "  scale: {type: number, exclusiveMinimum: 0, default: 1}\n", "")
    folder = specs({"judged": base, "child": concrete})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "judged.yaml")
    assert [p.code for p in info.value.problems] == ["abstract-spec"]
    assert info.value.problems[0].line == 3
    plan = compile_file(folder / "child.yaml")
    assert plan.options.defaults["scale"] == 3 and plan.chain == ("child", "judged")
    assert validate_directory([folder]) == []  # the base validates as a base


def test_a_misspelled_key_in_a_childs_stage_is_reported_at_the_childs_line(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: analyze\n    temprature: 0.5\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.line, problem.code) == ("child.yaml", 6, "unknown-key")
    # the child writes that stage first: the key path is the child file's, as its line is
    assert problem.key_path == "stages[0].temprature" and "temperature" in problem.hint


def test_a_new_stage_of_a_child_is_named_by_its_index_in_the_child_file(specs):
    extra = ("stages:\n  - id: extra\n    prompt: base/judge.j2\n    temprature: 0.2\n"
             "    output_schema: {type: object, properties: {x: {type: string}}}\n")
    folder = specs({"base": BASE, "child": child(extra)})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    assert [p.render().split(str(folder) + "/")[-1] for p in info.value.problems] == [
        "child.yaml:7:5: stages[0].temprature: unknown key (did you mean 'temperature'?) [unknown-key]"]


def test_a_parents_problem_keeps_the_parents_key_path_when_a_child_adds_a_stage_before_it(specs):
    broken = BASE.replace("    checks:\n", "    temprature: 0.1\n    checks:\n")
    inserted = ("stages:\n  - id: first\n    after: preprocess\n    function: textual_difference\n"
                "    args: {reference: run.input, candidate: run.output}\n")
    folder = specs({"base": broken, "child": child(inserted)})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.key_path) == ("base.yaml", "stages[1].temprature")  # merged: [2]


def test_a_missing_key_of_a_childs_new_stage_is_named_as_the_child_writes_it(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: extra\n    prompt: base/judge.j2\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    assert [(Path(p.file).name, p.line, p.key_path, p.code) for p in info.value.problems] == [
        ("child.yaml", 5, "stages[0].output_schema", "missing-key")]


def test_a_childs_template_problem_names_the_stage_as_the_child_writes_it(specs):
    extra = ("stages:\n  - id: extra\n    prompt: base/extra.j2\n"
             "    output_schema: {type: object, properties: {x: {type: string}}}\n")
    folder = specs({"base": BASE, "child": child(extra)}, {"base/extra.j2": "Judge {{ run.outptu }}."})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.key_path, problem.code) == ("extra.j2", "stages[0].prompt",
                                                                        "undefined-name")


def test_a_problem_inherited_from_the_parent_is_reported_at_the_parents_line(specs):
    broken = BASE.replace("formula: \"(1 if", "formula: \"(1 if missing_name or")
    folder = specs({"base": broken, "child": child("name: Child\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.code) == ("base.yaml", "undefined-name")
    assert problem.line == broken.lstrip("\n").splitlines().index(
        next(line for line in broken.lstrip("\n").splitlines() if "formula:" in line)) + 1


def test_after_in_a_spec_that_extends_nothing_is_an_error(specs):
    folder = specs({"base": BASE.replace("  - id: analyze\n", "  - id: analyze\n    after: preprocess\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "base.yaml")
    assert [(p.code, p.key_path) for p in info.value.problems] == [("invalid-value", "stages[1].after")]


def test_an_unknown_after_and_an_unknown_parent_are_errors(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: new\n    after: nowhere\n    function: "
                                                "textual_difference\n    args: {reference: run.input, candidate: "
                                                "run.output}\n"),
                    "orphan": child("name: O\n", name="orphan", extends="no_such_spec")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    assert [p.code for p in info.value.problems] == ["unknown-after"]
    assert "preprocess" in info.value.problems[0].hint
    with pytest.raises(SpecError) as info:
        compile_file(folder / "orphan.yaml")
    assert info.value.problems[0].code == "unknown-parent"


def test_templates_resolve_from_the_childs_prompts_first(tmp_path, specs):
    folder = specs({"base": BASE})
    other = tmp_path / "team" / "scorer_specs"
    other.mkdir(parents=True)
    (other / "mine.yaml").write_text(child("name: Mine\n", name="mine", extends=str(folder / "base.yaml")))
    (tmp_path / "team" / "prompts" / "base").mkdir(parents=True)
    (tmp_path / "team" / "prompts" / "base" / "judge.j2").write_text("Team judge {{ preprocess }}.")
    plan = compile_file(other / "mine.yaml")
    assert plan.stages[1].template.source == "Team judge {{ preprocess }}."
    assert plan.stages[0].template.source == PROMPTS["base/list.j2"]  # from the parent's prompts/


# --- scorespec new, render --resolved ----------------------------------------------------------


def test_new_writes_a_child_of_a_builtin_that_compiles_and_copies_its_prompt(tmp_path, monkeypatch):
    from engine.spec.catalog import builtin_prompts_dir
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    written = new_spec("strict_faith", "faithfulness")
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "scorer_specs/strict_faith.yaml", "prompts/strict_faith/extract_claims.j2"]
    plan = compile_file(written[0])
    assert plan.chain == ("strict_faith", "faithfulness", "judge_base", "scorer_base")
    assert plan.stages[0].template.file == str(written[1].resolve())
    assert written[1].read_text() == (builtin_prompts_dir() / "faithfulness/extract_claims.j2").read_text()
    with pytest.raises(FileExistsError):
        new_spec("strict_faith", "faithfulness")


def test_new_copies_the_stages_asked_for_and_points_each_at_its_copy(tmp_path, monkeypatch):
    from engine.spec.catalog import builtin_prompts_dir
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    written = new_spec("strict_faith", "faithfulness", stages=["analyze"])
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "scorer_specs/strict_faith.yaml", "prompts/strict_faith/verify_claim.j2"]
    plan = compile_file(written[0])
    assert plan.stages[1].id == "analyze" and plan.stages[1].template.file == str(written[1].resolve())
    assert plan.stages[0].template.file == str((builtin_prompts_dir() / "faithfulness/extract_claims.j2").resolve())
    assert written[1].read_text() == (builtin_prompts_dir() / "faithfulness/verify_claim.j2").read_text()


def test_new_with_all_stages_copies_every_prompt_stage(tmp_path, monkeypatch):
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    written = new_spec("strict_faith", "faithfulness", all_stages=True)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "scorer_specs/strict_faith.yaml", "prompts/strict_faith/extract_claims.j2",
        "prompts/strict_faith/verify_claim.j2"]
    plan = compile_file(written[0])
    assert [s.template.file for s in plan.stages] == [str(p.resolve()) for p in written[1:]]


def test_new_with_an_unknown_stage_lists_the_prompt_stages_and_writes_nothing(tmp_path, monkeypatch):
    from engine.spec.scaffold import StageChoiceError, new_spec

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StageChoiceError, match=r"faithfulness has no prompt stage 'verify' \(its prompt stages: "
                                                r"preprocess, analyze\)"):
        new_spec("strict_faith", "faithfulness", stages=["preprocess", "verify"])
    with pytest.raises(StageChoiceError, match="only with --extends"):
        new_spec("polite", stages=["judge"])
    assert not (tmp_path / "scorer_specs").exists()


def test_new_lists_the_parents_prompt_stages_with_their_files(tmp_path, monkeypatch):
    from engine.spec.catalog import builtin_prompts_dir
    from engine.spec.scaffold import prompt_stages

    monkeypatch.chdir(tmp_path)
    assert prompt_stages("faithfulness") == [
        ("preprocess", (builtin_prompts_dir() / "faithfulness/extract_claims.j2").resolve()),
        ("analyze", (builtin_prompts_dir() / "faithfulness/verify_claim.j2").resolve())]


def test_new_without_a_parent_writes_a_one_question_judge(tmp_path, monkeypatch):
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    spec_path, prompt = new_spec("polite")
    judge = FakeJudge({"judge": {"verdict": "yes", "reason": "Courteous throughout."}})
    result = Scorer(compile_file(spec_path), judge=judge).run(output="Thank you!", input="Hi")
    assert (result.score, result.reason) == (1, "Courteous throughout.")
    assert "Thank you!" in judge.calls[0].messages[-1]["content"]
    with pytest.raises(ValueError, match="not a spec id"):
        new_spec("Bad-Id")


def test_new_refuses_the_id_of_a_builtin_unless_asked_to_shadow_it(tmp_path, monkeypatch):
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="'faithfulness' is a built-in scorer.*new my_faithfulness --extends "
                                         "faithfulness.*--shadow"):
        new_spec("faithfulness")
    assert not (tmp_path / "scorer_specs").exists()  # nothing written
    written = new_spec("faithfulness", shadow=True)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "scorer_specs/faithfulness.yaml", "prompts/faithfulness/judge.j2"]


def test_render_resolved_names_each_values_file_and_reads_back(specs, monkeypatch):
    from engine.spec.inherit import load_document
    from engine.spec.resolved import render_resolved
    from engine.spec.yamlload import load_yaml

    folder = specs({"base": BASE, "child": child("name: Child\noptions:\n  scale: {default: 10}\n")})
    monkeypatch.chdir(folder.parent)
    doc = load_document(folder / "child.yaml")
    text = render_resolved(doc)
    lines = text.splitlines()
    assert lines[0] == "# child extends base"
    assert 'name: "Child"  # scorer_specs/child.yaml:4' in lines
    assert "    default: 10  # scorer_specs/child.yaml:6" in lines
    assert '    type: "number"  # scorer_specs/base.yaml:7' in lines
    assert load_yaml(text, "resolved").data == doc.data


def test_the_extending_guide_example_compiles(tmp_path, monkeypatch):
    from conftest import ROOT

    guide = (ROOT / "docs" / "guides" / "extending.md").read_text(encoding="utf-8")
    example = guide.split('```yaml title="scorer_specs/strict_faithfulness.yaml"\n', 1)[1].split("```", 1)[0]
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "strict_faithfulness.yaml").write_text(example, encoding="utf-8")
    (tmp_path / "prompts" / "strict_faithfulness").mkdir(parents=True)
    (tmp_path / "prompts" / "strict_faithfulness" / "verify_claim.j2").write_text("Claim {{ each }}?")
    monkeypatch.chdir(tmp_path)
    plan = compile_file(tmp_path / "scorer_specs" / "strict_faithfulness.yaml")
    assert [s.id for s in plan.stages] == ["preprocess", "analyze", "double_check"]
    assert plan.options.defaults["scale"] == 10 and plan.score.formula.source.endswith("* 0.9")
    assert plan.reasons[1].template.source.startswith("{{ supported }} of")


def test_a_stage_id_that_is_not_text_is_a_spec_error_not_a_crash(specs):
    """A child stage whose id is a list (or a mapping) cannot key the merge: it is reported by the
    spec's validation, at the child's line."""
    folder = specs({"base": BASE, "child": child("stages:\n  - id: [analyze]\n    prompt: base/judge.j2\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    assert [(p.key_path, p.file.endswith("child.yaml")) for p in info.value.problems if p.code == "wrong-type"] == [
        ("stages[0].id", True)]  # the child's first stage, merged third


def test_a_child_giving_one_stage_id_twice_is_an_error_at_the_second(specs):
    folder = specs({"base": BASE, "child": child("stages:\n  - id: analyze\n    temperature: 0.5\n"
                                                "  - id: analyze\n    max_tokens: 10\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.line, problem.code) == ("child.yaml", 7, "duplicate-id")


def test_new_on_an_abstract_base_writes_a_one_question_judge_extending_it(tmp_path, monkeypatch):
    from engine.spec.scaffold import new_spec

    monkeypatch.chdir(tmp_path)
    spec_path, _ = new_spec("polite", "judge_base")
    assert "extends: judge_base" in spec_path.read_text()
    assert compile_file(spec_path).chain == ("polite", "judge_base", "scorer_base")
    with pytest.raises(ValueError, match="asks no judge"):
        new_spec("td", "textual_difference")


def test_a_reason_case_after_a_case_without_when_is_reported_as_never_used(specs):
    folder = specs({"base": BASE, "child": child("reason:\n  - id: verdict\n    template: 'typo id'\n")})
    with pytest.raises(SpecError) as info:
        compile_file(folder / "child.yaml")
    [problem] = info.value.problems
    assert (Path(problem.file).name, problem.code, problem.key_path) == ("child.yaml", "unreachable-reason",
                                                                          "reason[0]")  # merged third
    assert problem.message == "this reason case is never used: reason[1] of base.yaml before it has no `when`"

"""The `scorespec` command line: validate, list, schema, run, render."""

from __future__ import annotations

import json

import pytest
from conftest import SPEC_FIXTURES
from typer.testing import CliRunner

from engine.bind import stack as judge_module
from engine.cli.app import parse_option_value
from engine.cli.main import app
from engine.spec.catalog import builtin_prompts_dir, builtin_specs_dir
from engine.spec.models import spec_json_schema

BUILTIN_IDS = sorted(path.stem for path in builtin_specs_dir().glob("*.yaml"))

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}




def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})


def test_validate_builtins_ok():
    result = invoke("validate")
    assert result.exit_code == 0
    shipped = len(list(builtin_specs_dir().glob("*.yaml")))
    assert f"ok: {shipped} spec(s) valid" in result.stderr
    assert result.stdout == ""


def test_validate_without_a_path_checks_the_local_specs_that_list_shows(tmp_path, monkeypatch):
    local = tmp_path / "scorer_specs"
    local.mkdir()
    text = (builtin_specs_dir() / "textual_difference.yaml").read_text(encoding="utf-8")
    (local / "my_scorer.yaml").write_text(text.replace("id: textual_difference", "id: my_scorer"), encoding="utf-8")
    broken = (builtin_specs_dir() / "faithfulness.yaml").read_text(encoding="utf-8")
    (local / "faithfulness.yaml").write_text(broken.replace("credited / claims", "credted / claims"),
                                             encoding="utf-8")  # shadows the built-in
    monkeypatch.chdir(tmp_path)
    listed = invoke("list")
    rows = [line.split() for line in listed.stdout.split("\nrule functions")[0].splitlines()[1:] if line[:1].strip()]
    shipped = sorted(p.stem for p in builtin_specs_dir().glob("*.yaml"))
    assert sorted(row[0] for row in rows) == sorted(shipped + ["my_scorer"])
    # grouped: LLM scorers, rule scorers, abstract bases, then the spec that does not compile
    kinds = [row[1] for row in rows]
    assert kinds == sorted(kinds, key=["LLM", "rule", "base", "?"].index)
    assert {row[0]: row[1] for row in rows}["my_scorer"] == "rule"
    assert rows[-1][:2] == ["faithfulness", "?"]
    formula_line = broken.splitlines().index('  formula: "credited / claims * options.scale"') + 1
    result = invoke("validate")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"scorer_specs/faithfulness.yaml:{formula_line}:3: score.formula: expression 'credted / claims * options.scale' uses "
        "'credted', which is not defined here (did you mean 'credited'?) [undefined-name]",
        "1 problem(s) in 1 of 2 spec(s)",  # the two in ./scorer_specs/, not the built-ins beside them
    ]
    (local / "faithfulness.yaml").unlink()
    result = invoke("validate")
    assert result.exit_code == 0 and result.stderr == "ok: 1 spec(s) valid\n"


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


def test_validate_a_folder_without_specs_is_an_error_not_ok(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("validate", str(tmp_path / "empty"))
    assert result.exit_code == 2 and "no spec in" in result.stderr and "ok:" not in result.stderr
    (tmp_path / "yml").mkdir()
    (tmp_path / "yml" / "mine.yml").write_text("id: mine\n")
    result = invoke("validate", str(tmp_path / "yml"))
    assert result.exit_code == 2 and "found mine.yml" in result.stderr


def test_run_refuses_a_base_url_without_its_scheme_before_any_call():
    result = invoke("run", "faithfulness", "--model", "openai/m", "--base-url", "localhost:8000/v1",
                    "--output", "a", "--context", "b")
    assert result.exit_code == 2
    assert "base_url must be an http:// or https:// URL" in result.stderr and "internal error" not in result.stderr


def test_a_yml_spec_in_scorer_specs_is_named_where_it_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "mine.yml").write_text((builtin_specs_dir() / "textual_difference.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    ran = invoke("run", "mine", "--output", "x", "--ground-truth", "y")
    assert ran.exit_code == 2 and "scorer_specs/mine.yml is not read by name" in ran.stderr
    checked = invoke("validate")
    assert checked.exit_code == 0
    assert "scorer_specs/mine.yml: warning: not read (a spec file ends in .yaml" in checked.stderr


def test_list_shows_builtins_and_functions():
    result = invoke("list")
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "builtin" in rows["faithfulness"] and "Faithfulness" in rows["faithfulness"]
    assert "builtin" in rows["answer_similarity"]
    assert rows["textual_difference"].split()[1:3] == ["rule", "higher"]  # no judge
    assert rows["faithfulness"].split()[1:3] == ["LLM", "higher"]
    assert rows["judge_base"].split()[1] == "base"
    assert "rule functions: " in result.stdout
    listed = result.stdout.split("rule functions: ")[1]
    assert "textual_difference" in listed and "content_similarity" in listed


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


def test_a_number_given_to_a_text_option_stays_text():
    assert parse_option_value("330", {"type": ["string", "null"]}) == "330"
    assert parse_option_value("true", {"type": ["string", "null"]}) == "true"
    assert parse_option_value("null", {"type": ["string", "null"]}) is None
    assert parse_option_value("3", {"type": ["number", "string"]}) == 3
    assert parse_option_value("[1]", {"type": ["array", "string"]}) == [1]


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


def test_render_refuses_an_answer_for_a_stage_the_scorer_does_not_have():
    result = invoke("render", "faithfulness", "--output", "The tower is in Paris.", "--context", "Passage one.",
                    "--answer", 'preproces={"claims": []}')
    assert result.exit_code == 2 and result.stdout == ""
    assert "--answer preproces: faithfulness has no judge stage 'preproces' (did you mean 'preprocess'?)" in result.stderr


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


def _printed(result) -> list[str]:
    import io

    from rich.console import Console

    from engine.cli.main import print_result

    out = io.StringIO()
    print_result(result, Console(file=out, width=200, highlight=False, color_system=None))
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_a_stage_shows_its_calls_re_asks_and_retries_apart():
    from engine import load_scorer
    from engine.testing import FakeJudge

    verdicts = [{"verdict": "perhaps", "reason": "x"}] + [{"verdict": "yes", "reason": "stated"}] * 3
    judge = FakeJudge({"preprocess": {"claims": ["A.", "B.", "C."]}, "analyze": verdicts})
    result = load_scorer("faithfulness", judge=judge, options={"context": ["A. B. C."]}).run(output="A. B. C.")
    lines = _printed(result)
    assert lines[2].split() == ["stage", "kind", "status", "calls", "re-asks", "retries", "tokens", "in/out",
                                "seconds"]
    # three claims, one answer re-asked: 4 calls to the judge, one of them a re-ask
    assert lines[3].split()[:6] == ["preprocess", "prompt", "ok", "1", "0", "0"]
    assert lines[4].split()[:6] == ["analyze", "prompt", "ok", "4", "1", "0"]
    assert result.stages["analyze"].usage.transport_retries == 0


@pytest.mark.parametrize("reason, shown", [
    ("The output makes no claims.", "not scorable: The output makes no claims."),
    ("Not scorable: no claims in the output.", "not scorable: no claims in the output."),
    ("not scorable - nothing here", "not scorable: nothing here"),
    ("Not scorable", "not scorable: Not scorable"),
])
def test_not_scorable_is_said_once(reason, shown):
    from engine.core.result import NotScorableInfo, ScoreResult

    result = ScoreResult(scorer="x", spec_version=1, spec_hash="0" * 12, not_scorable=NotScorableInfo(reason=reason))
    assert _printed(result)[0] == shown


def test_shipped_not_scorable_reasons_do_not_start_with_not_scorable():
    import re

    from engine.spec.catalog import is_abstract
    from engine.spec.compile import load_spec

    for path in sorted(builtin_specs_dir().glob("*.yaml")):
        plan = None if is_abstract(path) else load_spec(path)
        if plan is None or plan.score.not_scorable is None:
            continue
        for sentence in re.split(r"\{%.*?%\}", plan.score.not_scorable[1].source):  # each text between tags
            text = sentence.strip()
            assert not text or (text[:1].isupper() or text.startswith("{{")) and \
                not text.lower().startswith("not scorable"), (path.stem, text)


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


def test_new_then_render_resolved_and_validate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made = invoke("new", "strict_faith", "--extends", "faithfulness")
    assert made.exit_code == 0, made.stderr
    assert "wrote scorer_specs/strict_faith.yaml" in made.stderr
    again = invoke("new", "strict_faith", "--extends", "faithfulness")
    assert again.exit_code == 2 and "not overwriting" in again.stderr
    shown = invoke("render", "strict_faith", "--resolved")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "# strict_faith extends faithfulness → judge_base → scorer_base"
    assert '    prompt: "strict_faith/extract_claims.j2"  # scorer_specs/strict_faith.yaml:9' in shown.stdout
    assert invoke("validate").stderr == "ok: 1 spec(s) valid\n"  # the new spec (its parents through it)
    assert invoke("run", "judge_base", "--output", "x").exit_code == 2  # an abstract base is not run


def test_new_names_the_prompts_it_wrote_and_how_to_override_another_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made = invoke("new", "strict", "--extends", "faithfulness")
    assert made.exit_code == 0, made.stderr
    lines = made.stderr.splitlines()
    assert lines[:2] == ["wrote scorer_specs/strict.yaml", "wrote prompts/strict/extract_claims.j2 (stage preprocess)"]
    assert "inherited as it is: analyze (faithfulness/verify_claim.j2)" in made.stderr
    assert f"to override it too: cp {(builtin_prompts_dir() / 'faithfulness' / 'verify_claim.j2').resolve()} prompts/strict/ " \
           "and uncomment its lines in scorer_specs/strict.yaml" in made.stderr and "--stage analyze" in made.stderr
    spec = (tmp_path / "scorer_specs" / "strict.yaml").read_text()
    assert spec.endswith("  # - id: analyze\n  #   prompt: strict/verify_claim.j2  # from faithfulness/verify_claim.j2\n")


def test_new_copies_the_stages_named_by_stage_or_all_stages(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made = invoke("new", "strict", "--extends", "faithfulness", "--stage", "analyze")
    assert made.exit_code == 0, made.stderr
    assert made.stderr.splitlines()[:2] == ["wrote scorer_specs/strict.yaml",
                                            "wrote prompts/strict/verify_claim.j2 (stage analyze)"]
    every = invoke("new", "every", "--extends", "faithfulness", "--all-stages")
    assert every.exit_code == 0, every.stderr
    assert every.stderr.splitlines()[1:3] == ["wrote prompts/every/extract_claims.j2 (stage preprocess)",
                                              "wrote prompts/every/verify_claim.j2 (stage analyze)"]
    assert "inherited as it is" not in every.stderr
    assert invoke("validate").stderr == "ok: 2 spec(s) valid\n"


def test_new_with_an_unknown_stage_is_a_usage_error_listing_the_stage_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("new", "strict", "--extends", "faithfulness", "--stage", "verify")
    assert result.exit_code == 2
    assert "Invalid value for '--stage': faithfulness has no prompt stage 'verify' (its prompt stages: " \
           "preprocess, analyze)" in " ".join(result.stderr.split())
    assert not (tmp_path / "scorer_specs").exists()


def test_validate_counts_specs_not_the_files_their_problems_are_in(tmp_path, monkeypatch):
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "prompts" / "b").mkdir(parents=True)
    (tmp_path / "prompts" / "b" / "ask.j2").write_text("Ask {{ run.outptu }} and {{ nope }}.")
    spec = ("format: 1\nid: bad\nextends: judge_base\nname: B\ndescription: b\nversion: 1\nstages:\n  - id: s\n"
            "    prompt: b/ask.j2\n    output_schema: {type: object, properties: {v: {type: string}}}\n"
            "score:\n  formula: \"1 if s.v else 0\"\n")
    (tmp_path / "scorer_specs" / "bad.yaml").write_text(spec)
    (tmp_path / "scorer_specs" / "child.yaml").write_text("format: 1\nid: child\nextends: bad\nname: C\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("validate", "scorer_specs")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[-1] == "2 problem(s) in 2 of 2 spec(s)"  # the parent's problems once, both specs failing
    assert all(line.startswith(str(tmp_path / "prompts" / "b" / "ask.j2") + ":1:") for line in lines[:-1])


def test_version_is_printed():
    from engine import __version__

    result = invoke("--version")
    assert (result.exit_code, result.stdout) == (0, f"scorespec {__version__}\n")

"""Typed plans, the document phase and load-time checks of judge-answer keys (issue 15)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT

from engine.core.errors import ERROR_KINDS, ScorerRunError, SpecError
from engine.core.result import ItemError
from engine.spec.compile import compile_file, load_spec
from engine.spec.document import parse_document
from engine.spec.plans import PromptStagePlan, RuleStagePlan

RATING_SPEC = """
format: 1
id: {id}
name: Rating
description: A rating.
version: 1
stages:
  - id: rate
    prompt: r/ask.j2
    output_schema:
      type: object
      required: [rating]
      properties:
        rating: {{type: integer, minimum: 0, maximum: 10}}
        why: {{type: string}}
    checks:
      - expect: "{check}"
        message: give a rating
score:
  formula: "{formula}"
reason:
  - template: "{reason}"
"""


def rating_spec(write_spec, *, check="answer.rating >= 0", formula="rate.rating / 10",
                reason="rated {{ rate.rating }}", prompt="Rate {{ run.output }}.", name="rating"):
    text = RATING_SPEC.format(id=name, check=check, formula=formula, reason=reason)
    return write_spec(name, text, {"r/ask.j2": prompt})


def problems_of(path: Path) -> list[tuple[str, int, str, str, str]]:
    with pytest.raises(SpecError) as info:
        compile_file(path)
    return [(Path(p.file).name, p.line, p.key_path, p.code, p.message + " | " + p.hint) for p in info.value.problems]


def test_a_misspelled_answer_key_in_a_formula_is_a_load_error_at_its_line(write_spec):
    found = problems_of(rating_spec(write_spec, formula="rate.ratng / 10"))
    assert found == [("rating.yaml", 19, "score.formula", "undefined-name",
                      "expression 'rate.ratng / 10' uses 'rate.ratng', which is not defined here "
                      "| did you mean 'rate.rating'?")]


def test_a_misspelled_answer_key_in_a_reason_template_and_a_check_is_found(write_spec):
    found = problems_of(rating_spec(write_spec, check="answer.ratin >= 0", reason="rated {{ rate.ratign }}"))
    assert [(key, message.split(" | ")[1]) for _, _, key, _, message in found] == [
        ("stages[0].checks[0].expect", "did you mean 'answer.rating'?"),
        ("reason[0].template", "did you mean 'rate.rating'?"),
    ]


def test_declared_answer_keys_pass_and_open_schemas_are_not_checked(write_spec):
    plan = compile_file(rating_spec(write_spec, formula="(rate.rating + (rate.why | length) * 0) / 10"))
    assert isinstance(plan.stages[0], PromptStagePlan)
    open_spec = RATING_SPEC.replace("      required: [rating]\n", "      required: [rating]\n"
                                    "      additionalProperties: true\n")
    path = write_spec("open", open_spec.format(id="open", check="answer.anything or true",
                                               formula="rate.rating / 10", reason="ok"), {"r/ask.j2": "x"})
    assert compile_file(path).id == "open"


def test_a_name_a_template_file_misuses_is_reported_at_the_template_line(write_spec):
    prompt = "Rate this.\n\nOutput: {{ run.output }}\nStyle: {{ run.outptu }}\n"
    found = problems_of(rating_spec(write_spec, prompt=prompt))
    assert found == [("ask.j2", 4, "stages[0].prompt", "undefined-name",
                      "template 'r/ask.j2' uses 'run.outptu', which is not defined here | did you mean 'run.output'?")]


def test_plans_are_typed_frozen_and_complete():
    plan = load_spec(ROOT / "scorer_specs" / "faithfulness.yaml")
    preprocess, analyze = plan.stages
    assert isinstance(preprocess, PromptStagePlan) and isinstance(analyze, PromptStagePlan)
    assert analyze.for_each is not None and analyze.max_reasks == 2 and analyze.temperature == 0.0
    assert len(plan.hash) == 64 and not hasattr(plan, "spec")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.hash = "x"  # type: ignore[misc]
    rule = load_spec(ROOT / "scorer_specs" / "textual_difference.yaml").stages[0]
    assert isinstance(rule, RuleStagePlan) and rule.function_name == "textual_difference"


def test_a_stage_max_tokens_and_temperature_override_the_judge_block():
    plan = load_spec(ROOT / "scorer_specs" / "answer_similarity.yaml")
    by_id = {stage.id: stage for stage in plan.stages}
    assert by_id["analyze"].max_tokens == 2048 and by_id["preprocess"].max_tokens == 1024


def test_document_positions_name_their_file_and_the_hash_covers_templates(tmp_path):
    doc = parse_document("format: 1\nid: x\nstages:\n  - id: a\n", tmp_path / "x.yaml")
    where = doc.position("stages[0].id")
    assert (Path(where.file).name, where.line, where.column) == ("x.yaml", 4, 5)
    assert doc.position("stages[0].prompt").line == 4  # the nearest written ancestor
    assert doc.hash({"a.j2": "one"}) != doc.hash({"a.j2": "two"})
    assert doc.hash({}) == parse_document("format: 1\nid: x\nstages:\n  - id: a\n", tmp_path / "y.yaml").hash({})


def test_error_kinds_are_a_closed_set():
    assert "prompt_too_long" in ERROR_KINDS and "check" in ERROR_KINDS
    with pytest.raises(ValueError, match="unknown error kind 'oops'"):
        ScorerRunError("oops", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ItemError(kind="oops", message="x")  # type: ignore[arg-type]
    assert ItemError(kind="judge", message="x").kind == "judge"


def test_the_reliability_guide_documents_every_error_kind_in_order():
    guide = (ROOT / "docs" / "guides" / "reliability.md").read_text(encoding="utf-8")
    section = guide.split("## Why an item failed: error kinds", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")]
    assert tuple(rows) == ERROR_KINDS

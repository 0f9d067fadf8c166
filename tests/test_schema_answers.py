"""`engine.testing.schema_answers`: a valid answer for every stage schema of every shipped spec,
and for the schema keywords user specs may write (checked with jsonschema, and by hypothesis over
bounds)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.spec.catalog import list_specs
from engine.spec.compile import load_spec
from engine.spec.plans import PromptStagePlan
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.schema_answers import answer_for, schema_of_request, schema_reply


def _shipped_stage_schemas() -> list[tuple[str, dict]]:
    """(spec id/stage id, output schema) of every prompt stage of every runnable shipped spec;
    a ``{$expr}`` value (computed per item) is set to 2 here, or to two labels for an ``enum``."""
    found = []
    for entry in list_specs():
        if entry.abstract:
            continue
        for stage in load_spec(entry.path).stages:
            if not isinstance(stage, PromptStagePlan):
                continue
            schema = copy.deepcopy(dict(stage.schema))
            for pointer, _expression in stage.schema_exprs:
                node = schema
                for part in pointer[:-1]:
                    node = node[part]
                node[pointer[-1]] = ["first", "second"] if pointer[-1] == "enum" else 2
            found.append((f"{entry.id}/{stage.id}", schema))
    return found


ROOT = Path(__file__).resolve().parent.parent
SHIPPED = _shipped_stage_schemas()


def test_the_shipped_specs_have_prompt_stages_to_answer():
    assert len(SHIPPED) >= 20


@pytest.mark.parametrize("schema", [s for _, s in SHIPPED], ids=[name for name, _ in SHIPPED])
def test_the_answer_to_each_shipped_stage_schema_is_valid(schema):
    answer = answer_for(schema)
    assert list(Draft202012Validator(schema).iter_errors(answer)) == []


def test_arrays_hold_one_item_unless_the_schema_asks_for_more_or_none():
    item = {"type": "string"}
    assert answer_for({"type": "array", "items": item}) == ["example"]
    assert answer_for({"type": "array", "items": item, "minItems": 3}) == ["example"] * 3
    assert answer_for({"type": "array", "items": item, "maxItems": 0}) == []


def test_enums_give_their_first_value_and_unique_arrays_distinct_ones():
    assert answer_for({"enum": ["yes", "no", "idk"]}) == "yes"
    unique = {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 2, "uniqueItems": True}
    assert answer_for(unique) == ["a", "b"]


def test_objects_have_required_properties_and_all_when_few():
    few = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}
    assert answer_for(few) == {"a": 0, "b": True}
    many = {"type": "object", "required": ["p0"], "properties": {f"p{i}": {"type": "string"} for i in range(9)}}
    assert answer_for(many) == {"p0": "example"}


def test_refs_and_first_branches_are_followed():
    schema = {"$defs": {"verdict": {"type": "object", "required": ["v"],
                                    "properties": {"v": {"oneOf": [{"const": "yes"}, {"type": "null"}]}}}},
              "type": "object", "required": ["items"],
              "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/verdict"}}}}
    assert answer_for(schema) == {"items": [{"v": "yes"}]}


@pytest.mark.parametrize("pattern", [r"^[A-Z]{2}-\d{3}$", r"^(yes|no|unsure)$", r"^\w+@\w+\.com$",
                                     r"^[^\s]{4,8}$", r"^v\d+(\.\d+)*$"])
def test_strings_match_simple_patterns(pattern):
    schema = {"type": "string", "pattern": pattern, "minLength": 4}
    assert list(Draft202012Validator(schema).iter_errors(answer_for(schema))) == []


def test_an_unsatisfiable_array_and_a_foreign_ref_are_errors():
    with pytest.raises(ValueError, match="maxItems 1 is below minItems 2"):
        answer_for({"type": "array", "minItems": 2, "maxItems": 1})
    with pytest.raises(ValueError, match="only references inside the schema"):
        answer_for({"$ref": "https://example.com/s.json"})


bounds = st.one_of(st.none(), st.integers(-50, 50))


@given(low=bounds, high=bounds, exclusive=st.booleans(), integer=st.booleans())
def test_numbers_fall_within_their_bounds(low, high, exclusive, integer):
    if low is not None and high is not None and high - low < 2:
        high = low + 2
    schema: dict = {"type": "integer" if integer else "number"}
    if low is not None:
        schema["exclusiveMinimum" if exclusive else "minimum"] = low
    if high is not None:
        schema["exclusiveMaximum" if exclusive else "maximum"] = high
    assert list(Draft202012Validator(schema).iter_errors(answer_for(schema))) == []


@given(min_length=st.integers(0, 30), spread=st.integers(0, 30), min_items=st.integers(0, 5),
       more_items=st.integers(0, 3))
def test_string_lengths_and_item_counts_fall_within_their_bounds(min_length, spread, min_items, more_items):
    schema = {"type": "array", "minItems": min_items, "maxItems": min_items + more_items,
              "items": {"type": "string", "minLength": min_length, "maxLength": min_length + spread}}
    answer = answer_for(schema)
    assert list(Draft202012Validator(schema).iter_errors(answer)) == []
    assert len(answer) == max(min_items, 1 if more_items + min_items else 0)


def test_the_schema_of_a_request_comes_from_its_named_tool_or_its_response_format():
    wanted = {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}}
    tools = {"tools": [{"type": "function", "function": {"name": "other", "parameters": {}}},
                       {"type": "function", "function": {"name": "stage", "parameters": wanted}}],
             "tool_choice": {"type": "function", "function": {"name": "stage"}}}
    assert schema_of_request(tools) == wanted
    response_format = {"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": wanted}}}
    assert schema_of_request(response_format) == wanted
    in_text = {"messages": [{"role": "system", "content": 'follow this json_schema:\n{"properties": {"x": {}}}\n'}]}
    assert schema_of_request(in_text) == {"properties": {"x": {}}}
    assert schema_reply({"messages": [{"role": "user", "content": "hi"}]}) == "ok"


def test_a_hosted_judge_answered_by_schema_reply_scores_faithfulness(tmp_path):
    with FakeOpenAIServer(schema_reply) as server:
        env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url,
               "SCORESPEC_MODEL": "openai/gpt-4o-mini", "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-m", "engine", "run", "faithfulness", "--json",
                               "--output", "Paris is in France.", "--context", "Paris is the capital of France."],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "scored"
    assert 0 <= result["score"] <= 1
    assert [r["tool_choice"]["function"]["name"] for r in server.requests] == ["preprocess", "analyze"]

"""What the compiler derives once per prompt stage (the answer schema's validator, label fields,
JSON text, the schema as sent and its canonical JSON) and how calls carry it; the records of a
run, one type per stage kind; the reference's seed fields, produced at the JSON edge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SPEC_FIXTURES
from pydantic import ValidationError

from engine.bind.load import load_scorer
from engine.core.answer_schema import AnswerSchema, SentSchema, canonical_json
from engine.core.result import SEED_FIELDS, PromptStageRecord, RuleStageRecord, ScoreResult
from engine.interpret.scorer import Scorer
from engine.judge.cache.base import cache_key
from engine.judge.identity import provider_identity, schema_as_sent
from engine.spec.compile import compile_file
from engine.spec.plans import PromptStagePlan
from engine.testing import FakeJudge

ENGINE = Path(__file__).resolve().parents[1] / "engine"
REASON = {"reason": "Because of the verdicts."}


def faithfulness():
    judge = FakeJudge({"preprocess": {"claims": ["A", "B", "C"]},
                       "analyze": [{"verdict": x, "reason": "r"} for x in ("yes", "no", "yes")], "reason": REASON})
    return load_scorer("faithfulness", judge=judge), judge


# --- compiled once ---------------------------------------------------------------------------------


def test_the_compiler_fills_each_prompt_stages_answer_schema():
    plan = load_scorer("faithfulness", judge=FakeJudge({})).plan
    prompts = [s for s in plan.stages if isinstance(s, PromptStagePlan)]
    prompts += [r.prompt for r in plan.reasons if r.prompt is not None]
    assert prompts
    for stage in prompts:
        answer = stage.answer
        assert isinstance(answer, AnswerSchema) and answer.schema is stage.schema and answer.title == stage.id
        # computed at load: nothing is left to derive on the first call
        assert answer._validator is not None and answer._labels is not None and answer._json_text is not None
        sent = answer.as_sent(stage.id)
        assert isinstance(sent, SentSchema) and sent["title"] == stage.schema.get("title", stage.id)
        assert sent._canonical == canonical_json(dict(sent))


def test_every_call_of_a_stage_carries_the_plans_compiled_schema():
    scorer, judge = faithfulness()
    scorer.run(output="A. B. C.", context=["A is true."])
    scorer.run(output="A. B. C.", context=["A is true."])
    by_id = {s.id: s for s in scorer.plan.stages}
    analyze = [call for call in judge.calls if call.stage == "analyze"]
    assert len(analyze) == 6  # one per claim (for_each), two items
    for call in judge.calls:
        stage = by_id.get(call.stage) or next(r.prompt for r in scorer.plan.reasons if r.prompt)
        assert call.contract.compiled is stage.answer
    assert len({id(call.contract.compiled.validator) for call in analyze}) == 1
    assert schema_as_sent(analyze[0]) is schema_as_sent(analyze[-1])


def test_a_schema_computed_per_item_gets_its_own_compiled_schema_per_call():
    judge = FakeJudge({"preprocess": [{"claims": ["A", "B"]}, {"claims": ["A", "B", "C"]}],
                       "analyze": [{"verdicts": [{"verdict": "yes", "reason": "r"}] * 2},
                                   {"verdicts": [{"verdict": "no", "reason": "r"}] * 3}]})
    scorer = Scorer(compile_file(SPEC_FIXTURES / "stages" / "verdict_list.yaml"), judge=judge)
    analyze_plan = next(s for s in scorer.plan.stages if s.id == "analyze")
    assert analyze_plan.answer is None  # {$expr} values: nothing to compile ahead
    assert scorer.run(output="A. B.").score == 1.0 and scorer.run(output="A. B. C.").score == 0.0
    first, second = [call.contract.compiled for call in judge.calls if call.stage == "analyze"]
    assert first is not second
    assert first.schema["properties"]["verdicts"]["minItems"] == 2
    assert second.schema["properties"]["verdicts"]["minItems"] == 3
    assert schema_as_sent(judge.calls[-1])["title"] == "analyze"


def test_a_schema_as_sent_keys_as_its_plain_dict():
    schema = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}, "title": "analyze"}
    material = {"provider": "openai", "model": "gpt-4o-mini", "base_url": None, "structured_mode": "tool_call",
                "messages": [{"role": "user", "content": "Is it so?"}], "temperature": 0.0, "max_tokens": 64,
                "seed": None, "sample_index": 0}
    assert cache_key(schema=SentSchema(schema), **material) == cache_key(schema=dict(schema), **material)


def test_the_identity_of_a_compiled_call_is_the_key_of_its_schema_as_sent():
    scorer, judge = faithfulness()
    scorer.run(output="A. B. C.", context=["A is true."])
    call = judge.calls[0]
    identity = provider_identity("openai/gpt-4o-mini").call_identity(call)
    sent = dict(schema_as_sent(call))
    assert identity.key() == cache_key(provider="openai", model="gpt-4o-mini", base_url=None,
                                       structured_mode="provider-default", messages=call.messages, schema=sent,
                                       temperature=call.temperature, max_tokens=call.max_tokens, seed=None,
                                       sample_index=0)


def test_no_module_level_cache_keyed_by_object_id_remains():
    """The answer validators, schemas as sent and key prefixes were kept in module dicts keyed by
    ``id(schema)``; the plan holds them now (the in-flight table of the cache layer, keyed by its
    cache object while a call runs, is no cache of derived data and is not checked here)."""
    paths = [*(ENGINE / "core").glob("*.py"), *(ENGINE / "interpret").glob("*.py"), *(
        ENGINE / "judge" / name for name in ("contract.py", "identity.py", "call.py", "provider.py", "cache/base.py"))]
    found = [f"{path.relative_to(ENGINE)}:{number}: {line.strip()}" for path in paths
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"(?<![\w.])(?<!def )id\(", line)]
    assert found == []


# --- records by kind ------------------------------------------------------------------------------


def test_each_stage_gets_the_record_of_its_kind(write_spec):
    path = write_spec("rules", """
        format: 1
        id: rules
        name: Rules
        description: d
        version: 1
        stages:
          - id: analyze
            function: equals
            args: {text: "run.output", expected: "run.ground_truth"}
        score:
          formula: "1 if analyze.equal else 0"
    """)
    result = Scorer(compile_file(path)).run(output="x", ground_truth="x")
    record = result.stages["analyze"]
    assert type(record) is RuleStageRecord and record.kind == "rule"
    assert not {"samples", "agreement", "agreements", "spread", "answer_probs"} & set(RuleStageRecord.model_fields)
    assert set(record.model_dump(by_alias=True)) == {
        "kind", "skipped", "result", "prompt", "rawAnswer", "attempts", "usage"}
    scorer, _ = faithfulness()
    result = scorer.run(output="A. B. C.", context=["A is true."])
    assert {type(r) for r in result.stages.values()} == {PromptStageRecord}
    assert {r.kind for r in result.stages.values()} == {"prompt"}


def test_a_records_kind_is_checked_and_read_back_from_json():
    with pytest.raises(ValidationError):
        RuleStageRecord(kind="prompt")
    data = {"scorer": "s", "spec_version": 1, "spec_hash": "h",
            "stages": {"a": {"kind": "rule", "result": 1}, "b": {"kind": "prompt", "prompt": "p", "samples": [1]}}}
    result = ScoreResult.model_validate(data)
    assert type(result.stages["a"]) is RuleStageRecord and type(result.stages["b"]) is PromptStageRecord
    assert result.stages["b"].samples == [1]
    with pytest.raises(ValidationError):
        ScoreResult.model_validate({**data, "stages": {"a": {"kind": "other"}}})


# --- the seed fields ------------------------------------------------------------------------------

# a result line as out files held it before the records had a type per kind
OLDER_LINE = (
    '{"runId": "r", "scorer": "x", "label": "x", "specVersion": 1, "specHash": "h", "specChain": [], "model": null, '
    '"score": 0.5, "reason": "half", "notScorable": null, "error": null, "preprocessStepResult": ["a"], '
    '"preprocessPrompt": null, "analyzeStepResult": {"v": 1}, "analyzePrompt": "p", "generateReasonPrompt": null, '
    '"stages": {"preprocess": {"kind": "rule", "skipped": false, "result": ["a"], "prompt": null, "rawAnswer": null, '
    '"attempts": 0, "usage": {"calls": 0, "tokensIn": 0, "tokensOut": 0, "reasks": 0, "transportRetries": 0, '
    '"seconds": 0.0, "cacheHits": 0, "cacheMisses": 0}}, "analyze": {"kind": "prompt", "skipped": false, '
    '"result": {"v": 1}, "prompt": "p", "rawAnswer": "{}", "attempts": 1, "usage": {"calls": 0, "tokensIn": 0, '
    '"tokensOut": 0, "reasks": 0, "transportRetries": 0, "seconds": 0.0, "cacheHits": 0, "cacheMisses": 0}}}, '
    '"usage": {"calls": 0, "tokensIn": 0, "tokensOut": 0, "reasks": 0, "transportRetries": 0, "seconds": 0.0, '
    '"cacheHits": 0, "cacheMisses": 0}, "status": "scored"}')


def test_an_older_result_line_reads_back_and_writes_the_same_json():
    result = ScoreResult.model_validate(json.loads(OLDER_LINE))
    assert json.dumps(result.to_json_dict()) == OLDER_LINE
    assert result.preprocess_step_result == ["a"] and result.analyze_prompt == "p"


def test_the_seed_fields_come_from_the_table_of_seed_stages():
    assert [(s.stage, s.result, s.prompt) for s in SEED_FIELDS] == [
        ("preprocess", "preprocess_step_result", "preprocess_prompt"),
        ("analyze", "analyze_step_result", "analyze_prompt")]
    scorer, _ = faithfulness()
    result = scorer.run(output="A. B. C.", context=["A is true."])
    data = result.to_json_dict()
    keys = list(data)
    assert keys[keys.index("error") + 1:keys.index("stages")] == [
        "preprocessStepResult", "preprocessPrompt", "analyzeStepResult", "analyzePrompt", "generateReasonPrompt"]
    for seed in SEED_FIELDS:
        stage = data["stages"][seed.stage]
        assert data[_camel(seed.result)] == stage["result"] and data[_camel(seed.prompt)] == stage["prompt"]
        assert getattr(result, seed.result) == result.stages[seed.stage].result
    python = result.model_dump(by_alias=False)
    assert python["analyze_step_result"] == result.stages["analyze"].result


def test_a_spec_without_the_seed_stages_writes_them_null(write_spec):
    path = write_spec("judged", """
        format: 1
        id: judged
        name: Judged
        description: d
        version: 1
        stages:
          - id: verdict
            function: equals
            args: {text: "run.output", expected: "'x'"}
        score:
          formula: "1"
    """)
    data = Scorer(compile_file(path)).run(output="x").to_json_dict()
    assert [data[k] for k in ("preprocessStepResult", "preprocessPrompt", "analyzeStepResult", "analyzePrompt")] \
        == [None] * 4


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)

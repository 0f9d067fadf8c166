"""An answer the schema refuses is the judge's failure: the stage's checks run only on answers that
passed the schema, so they never read a key the schema required and the answer lacks (case C35)."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.judge.contract import AnswerContract, AnswerInvalid
from engine.spec.expressions import Expression
from engine.testing import FakeJudge

CLAIMS_SCHEMA = {"type": "object", "required": ["claims"],
                 "properties": {"claims": {"type": "array", "items": {"type": "string"}}}}
NO_CLAIMS = "no valid answer after 3 attempt(s): the answer does not match the required JSON schema: at the answer: "


def test_checks_run_only_on_answers_that_pass_the_schema():
    contract = AnswerContract(CLAIMS_SCHEMA, ((Expression("answer.claims | length < 3"), "at most two claims"),))
    with pytest.raises(AnswerInvalid) as refused:
        contract.validate({})
    assert refused.value.check is None
    assert str(refused.value) == ("the answer does not match the required JSON schema: at the answer: "
                                  "'claims' is a required property")
    with pytest.raises(AnswerInvalid) as checked:
        contract.validate({"claims": ["a", "b", "c"]})
    assert (checked.value.check.source, str(checked.value)) == ("answer.claims | length < 3", "at most two claims")


def test_a_claims_answer_missing_its_claims_fails_as_judge_naming_the_schema_error():
    judge = FakeJudge({"preprocess": {}})
    result = load_scorer("faithfulness", judge=judge).run(output="Paris is in France.", context=["Paris is in France."])
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "judge", "preprocess")
    assert result.error.message == NO_CLAIMS + "'claims' is a required property"
    assert "UndefinedError" not in result.error.message
    assert (result.error.attempts, result.error.raw_answer) == (3, "{}")
    assert len(judge.calls) == 3
    assert "'claims' is a required property" in judge.calls[1].messages[-1]["content"]


def test_a_claims_answer_missing_its_claims_from_a_provider_fails_as_judge(fake_server, http_judge):
    fake_server.script({}, {}, {})
    result = load_scorer("faithfulness", judge=http_judge).run(output="Paris is in France.",
                                                               context=["Paris is in France."])
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "judge", "preprocess")
    assert result.error.message.startswith("no valid answer after 3 attempt(s)")
    assert "'claims' is a required property" in result.error.message
    assert "UndefinedError" not in result.error.message
    assert len(fake_server.requests) == 3

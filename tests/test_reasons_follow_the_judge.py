"""An engine-written reason never says more than the judge did: a claim the judge answered `no`
while saying the context does not mention it is reported as not supported, with the judge's words."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.testing import FakeJudge

SILENT = "The context does not mention a price."


def test_a_claim_judged_no_is_not_called_contradicted_when_the_judge_says_the_context_is_silent():
    judge = FakeJudge({"preprocess": {"claims": ["It opened in 1921.", "It costs $5."]},
                       "analyze": [{"verdict": "yes", "reason": "Says 1921."}, {"verdict": "no", "reason": SILENT}]})
    result = load_scorer("faithfulness", judge=judge).run(output="It opened in 1921. It costs $5.",
                                                          context=["The library opened in 1921."], language="en")
    assert result.reason == ('The score is 0.5 of 1: 1 of 2 claims supported. Supported by the context: '
                             f'"It opened in 1921.". Not supported by the context: "It costs $5." ({SILENT}).')
    assert "ontradict" not in result.reason


@pytest.mark.parametrize("scorer_id, stage_answers", [
    ("context_recall", {"preprocess": {"statements": ["It costs $5."]}}),
    ("hallucination", {"preprocess": {"statements": ["It costs $5."]}}),
])
def test_statement_scorers_call_a_no_verdict_not_supported(scorer_id, stage_answers):
    judge = FakeJudge({**stage_answers, "analyze": {"verdict": "no", "reason": SILENT}})
    result = load_scorer(scorer_id, judge=judge).run(output="It costs $5.", ground_truth="It costs $5.",
                                                     context=["The library opened in 1921."], language="en")
    assert 'Not supported' in result.reason and 'Contradicted' not in result.reason

"""Rounding what a formula means: a value whose exact decimal sits on a half but whose float is a
hair below it (0.225 computed as 0.22499999999999998) rounds as the decimal does, half away from
zero; scores, the `num` filter in reasons, and comparisons of weighted sums in the shipped specs."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import load_scorer
from engine.interpret.values import round_half_away
from engine.spec.expressions import Expression, Template
from engine.testing import FakeJudge, scripted

DIMENSIONS = ("accuracy", "completeness", "relevance", "consistency", "hallucination")


def relevancy_score(verdicts: list[str]) -> float:
    script = {"preprocess": {"statements": [f"Statement {i}." for i in range(len(verdicts))]},
              "analyze": scripted([{"verdict": v, "reason": "r"} for v in verdicts])}
    scorer = load_scorer("answer_relevancy", judge=FakeJudge(script))
    return scorer.run(input="What is on the menu?", output="Soup and bread.")


@pytest.mark.parametrize("verdicts, expected", [
    (["unsure", "unsure", "unsure", "no"], 0.23),       # 0.9 / 4 = 0.225, computed 0.22499999999999998
    (["unsure"] + ["no"] * 11, 0.03),                    # 0.3 / 12 = 0.025, computed 0.024999999999999998
    (["yes", "unsure", "no", "yes"], 0.58),              # 2.3 / 4 = 0.575 (stays)
])
def test_answer_relevancy_rounds_the_exact_half_away_from_zero(verdicts, expected):
    result = relevancy_score(verdicts)
    assert result.score == expected
    assert result.reason.startswith(f"The score is {expected:g} of 1:")


def test_prompt_alignment_rounds_the_exact_half_away_from_zero_in_score_and_reason():
    """0.4 × 0.5 + 0.3 × 0.5 + 0.2 × 0.5 + 0.1 × 0.65 = 0.515, computed 0.5149999999999999."""
    answer = {"intent": 0.5, "requirements": 0.5, "completeness": 0.5, "appropriateness": 0.65, "unmet": [],
              "reason": "Half done."}
    scorer = load_scorer("prompt_alignment", judge=FakeJudge({"user_alignment": answer}),
                         options={"evaluationMode": "user"})
    result = scorer.run(input="List three fruits.", output="Apple.")
    assert result.score == 0.52
    assert result.reason.startswith("The score is 0.52 of 1 (user alignment).")


def test_noise_sensitivity_compares_the_exact_mean_with_the_discrepancy_threshold():
    """Impacts none ×3, significant ×2: mean (3 + 0.6) / 5 = 0.72, computed 0.72 exactly, but
    0.92 − 0.72 is 0.20000000000000007 in floats. The exact difference 0.2 is not more than the
    threshold 0.2, so the judge's 0.92 counts, not the lower mean."""
    answer = {"dimensions": {name: {"impact": impact, "change": ""} for name, impact
                             in zip(DIMENSIONS, ["none", "none", "none", "significant", "significant"])},
              "majorIssues": [], "robustness": 0.92, "assessment": "Barely shaken."}
    scorer = load_scorer("noise_sensitivity", judge=FakeJudge({"analyze": answer}))
    result = scorer.run(input="Capital of France? (Berlin, I heard.)", output="Paris.",
                        baseline_response="Paris.")
    assert result.score == 0.92


def test_context_relevance_weight_sum_rounds_the_exact_half():
    """Weights high 1, medium 0.7, low 0.3: one medium and two low sum to 1.3, computed
    1.2999999999999998; over four passages the mean 0.325 rounds to 0.33, not 0.32."""
    mean = Expression("(high * 1 + medium * 0.7 + low * 0.3) / rated")(
        {"high": 0, "medium": 1, "low": 2, "rated": 4})
    assert mean == 0.32499999999999996
    assert round_half_away(mean, 2) == 0.33
    assert Template("{{ mean | num(2) }}").render({"mean": mean}) == "0.33"


@pytest.mark.parametrize("value, places, expected", [
    (0.22499999999999998, 2, 0.23), (0.024999999999999998, 2, 0.03), (0.5149999999999999, 2, 0.52),
    (-0.22499999999999998, 2, -0.23), (22.499999999999996, 0, 23.0), (0.575, 2, 0.58), (0.125, 2, 0.13),
    (0.3333, 2, 0.33), (1e-13, 12, 0.0), (0.123456789012345, 12, 0.123456789012),
])
def test_round_half_away_removes_float_noise_first(value, places, expected):
    assert round_half_away(value, places) == expected


@pytest.mark.parametrize("value, places, text", [
    (0.22499999999999998, 2, "0.23"), (0.125, 2, "0.13"), (-0.125, 2, "-0.13"), (10.0, 4, "10"),
    (0.5149999999999999, 4, "0.515"), (1 / 3, 4, "0.3333"), (-0.0001, 2, "0"),
])
def test_num_filter_rounds_like_the_score(value, places, text):
    assert Template("{{ v | num(p) }}").render({"v": value, "p": places}) == text


NOISY = {  # d / 10^k computed as formulas do, leaving the last bits wrong
    "product": lambda d, k: d * 0.1 ** k,
    "scaled": lambda d, k: d * 0.1 / 10 ** (k - 1),
    "split": lambda d, k: (d - d // 3) / 10 ** k + (d // 3) / 10 ** k,
}


@given(digits=st.integers(min_value=-10**8, max_value=10**8), places=st.integers(min_value=0, max_value=5),
       extra=st.integers(min_value=1, max_value=3), half=st.booleans(), noise=st.sampled_from(sorted(NOISY)))
def test_rounding_a_decimal_computed_through_float_noise_gives_the_decimal_result(digits, places, extra, half,
                                                                                   noise):
    """A decimal d / 10^k reached through float arithmetic rounds to the decimal's own
    half-away-from-zero result; `half` makes the decimal sit exactly on a half of the last place."""
    if half:
        digits, k = digits * 10 + (5 if digits >= 0 else -5), places + 1
    else:
        k = places + extra
    exact = Decimal(digits).scaleb(-k)
    expected = float(exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
    assert round_half_away(NOISY[noise](digits, k), places) == expected


RULE_SPEC = """
format: 1
id: rule
name: Rule
description: A score from a formula over a rule stage.
version: 1
stages:
  - id: check
    function: equals
    args: {{text: "run.output_text", expected: "'x'"}}
score:
  formula: "{formula}"
"""


@pytest.mark.parametrize("formula, said", [
    ("10**400", "gave an integer of about 401 digits, too large for a score"),
    ("10.0**400", "raised OverflowError"),
    ("(10**400) / 3", "raised OverflowError: integer division result too large for a float"),
])
def test_a_formula_that_overflows_fails_its_item_as_a_formula_naming_it(write_spec, formula, said):
    result = load_scorer(str(write_spec("rule", RULE_SPEC.format(formula=formula)))).run(output="x")
    assert result.score is None
    assert result.error.kind == "formula"
    assert f"score.formula{':' if 'raised' in said else ''} {formula!r}" in result.error.message
    assert said in result.error.message


@pytest.mark.parametrize("formula", ["-0.0", "0 * -1.0", "-(check.equal | int) * 0.5"])
def test_a_formula_giving_negative_zero_scores_zero(write_spec, formula):
    result = load_scorer(str(write_spec("rule", RULE_SPEC.format(formula=formula)))).run(output="y")
    assert result.score == 0.0 and math.copysign(1.0, result.score) == 1.0
    assert result.to_json_dict()["score"] == 0.0 and '"score":-0' not in result.model_dump_json(by_alias=True)

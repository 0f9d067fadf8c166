"""The rule scorers of the catalogue: each formula on hand-computed pairs, degenerate inputs,
regular expressions (refused at load, per item, bounded in time), size limits, and properties
on arbitrary Unicode."""

from __future__ import annotations

import math
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import load_scorer
from engine.functions import lookup
from engine.functions.tone import sentiment
from engine.interpret.scorer import OptionError

CAFE_NFC = "caf\u00e9"
CAFE_NFD = "cafe\u0301"


def score(scorer_id: str, output: str, reference: str | None = None, **options):
    """The result of `scorer_id` on `output` against `reference` (as the ground truth)."""
    scorer = load_scorer(scorer_id, options=options)
    return scorer.run(output=output, ground_truth=reference) if reference is not None else scorer.run(output=output)


# --- content_similarity ----------------------------------------------------------------------------------


@pytest.mark.parametrize("output, reference, options, expected", [
    ("nacht", "night", {}, 0.25),  # ni ig gh ht / na ac ch ht: 1 shared, 2·1 / (4 + 4)
    ("night", "Night", {"ignoreCase": False}, 0.75),  # Ni ≠ ni: 3 shared of 4 + 4
    ("Night", "night", {}, 1.0),
    ("a b\tc\n", "abc", {"ignoreWhitespace": False}, 1.0),  # whitespace never counts
    ("ab", "a", {}, 0.0),  # one unit: no bigram
    ("aaaa", "aa", {}, 0.5),  # aa ×3 vs aa ×1: 1 shared, 2 / (3 + 1)
    ("\U0001F600a", "\U0001F600", {}, 2 / 3),  # an emoji is two UTF-16 units, as in the reference
    ("ab\U0001F600", "ab", {}, 0.5),  # ab b? ?? vs ab: 1 shared, 2 / (3 + 1), counted in units on both sides
])
def test_content_similarity_formula(output, reference, options, expected):
    result = score("content_similarity", output, reference, **options)
    assert result.score == pytest.approx(expected)
    assert result.reason.startswith("output vs ground_truth: ")


def test_cafe_in_two_unicode_forms_is_identical_after_nfc():
    """Field case C28 (shared/cases/handed.md)."""
    assert unicodedata.normalize("NFC", CAFE_NFD) == CAFE_NFC != CAFE_NFD
    result = score("content_similarity", CAFE_NFD, CAFE_NFC)
    assert result.score == 1
    # without NFC the reference's score: ca af fé vs ca af fe e◌́, 2 shared of 3 + 4
    assert score("content_similarity", CAFE_NFD, CAFE_NFC, normalizeUnicode=False).score == pytest.approx(4 / 7)


def test_content_similarity_reason_names_the_shared_pairs_and_the_field():
    result = load_scorer("content_similarity").run(output="nacht", input="night")
    assert result.reason == ("output vs input: 1 shared character pair of 4 in the output and 4 in the input: "
                             "similarity 0.25.")


# --- keyword_coverage ------------------------------------------------------------------------------------


def test_keyword_coverage_formula_and_lists():
    reference = "Alice sells blue kayaks near the harbour in 2024."  # alice sells blue kayaks harbour
    result = score("keyword_coverage", "ALICE sells red kayaks", reference)
    assert result.score == pytest.approx(3 / 5)
    assert result.analyze_step_result == {"coverage": 0.6, "total": 5, "matched": ["alice", "sells", "kayaks"],
                                          "missing": ["blue", "harbour"]}
    assert result.reason == "3 of 5 keywords of the ground_truth are in the output; missing: blue, harbour."


def test_keyword_coverage_with_nothing_to_cover_scores_the_scale():
    result = score("keyword_coverage", "anything at all", "the of and 42", scale=10)
    assert result.score == 10
    assert "has no keywords" in result.reason and "nothing to cover" in result.reason


# --- completeness ----------------------------------------------------------------------------------------


def test_completeness_counts_lemmas_numbers_and_named_terms():
    reference = "The children ran to London with 3 very happy dogs."  # child run london 3 dog
    result = score("completeness", "A child runs with dogs", reference)
    assert result.analyze_step_result == {"coverage": 0.6, "total": 5, "matched": ["child", "run", "dog"],
                                          "missing": ["london", "3"]}
    assert result.score == pytest.approx(0.6)
    assert result.reason == "3 of 5 key elements of the ground_truth are in the output; missing: london, 3."


def test_completeness_with_no_elements_in_the_reference_scores_the_scale():
    result = score("completeness", "Paris in spring", "It is so very, very.")
    assert result.score == 1 and "no key elements" in result.reason


@pytest.mark.parametrize("scorer_id", ["keyword_coverage", "completeness"])
@pytest.mark.parametrize("output, reference", [(f"the {CAFE_NFC} menu", f"the {CAFE_NFD} menu"),
                                               (f"the {CAFE_NFD} menu", f"the {CAFE_NFC} menu")])
def test_words_are_compared_after_nfc_whichever_side_is_decomposed(scorer_id, output, reference):
    result = score(scorer_id, output, reference)
    assert result.score == 1
    assert result.analyze_step_result["missing"] == []
    assert result.analyze_step_result["matched"] == [CAFE_NFC, "menu"]


@pytest.mark.parametrize("scorer_id", ["keyword_coverage", "completeness"])
def test_a_combining_mark_with_no_composed_form_stays_inside_its_word(scorer_id):
    """Devanagari vowel signs and viramas are combining marks (not ``\\w``): हिन्दी is one word,
    not the three letters between its marks; q with a combining acute has no composed form."""
    result = score(scorer_id, "भाषा q\u0301x", "हिन्दी भाषा q\u0301x")
    assert result.analyze_step_result["total"] == 3
    assert result.analyze_step_result["missing"] == ["हिन्दी"]
    assert result.score == pytest.approx(2 / 3)


# --- tone_consistency -----------------------------------------------------------------------------------


def test_tone_stability_is_one_minus_the_variance_of_sentence_sentiments():
    # VADER's compound scores (lexicon facts): "I love it." 0.6369, "I hate it." -0.5719
    assert (sentiment("I love it."), sentiment("I hate it.")) == (0.6369, -0.5719)
    mean = (0.6369 - 0.5719) / 2
    variance = ((0.6369 - mean) ** 2 + (-0.5719 - mean) ** 2) / 2
    result = score("tone_consistency", "I love it. I hate it.")
    assert result.score == pytest.approx(1 - variance)  # 0.6347
    assert result.analyze_step_result["sentences"] == 2
    assert score("tone_consistency", "The box is on the table. The meeting is at noon.").score == 1


def test_tone_against_a_reference_tone_is_one_minus_the_difference():
    result = score("tone_consistency", "I love it.", referenceTone="I hate it.")
    assert result.score == max(0, 1 - (0.6369 + 0.5719)) == 0  # 1 - 1.2088, floored at 0
    close = score("tone_consistency", "I love it.", referenceTone="I love it!")
    assert close.analyze_step_result["mode"] == "reference"
    assert close.score == pytest.approx(1 - abs(0.6369 - sentiment("I love it!")))


def test_an_empty_output_is_stable():
    result = score("tone_consistency", "")
    assert result.score == 1 and result.reason == "The output has no sentences: nothing varies, so its tone is stable."


# --- degenerate inputs, decided --------------------------------------------------------------------------


@pytest.mark.parametrize("scorer_id", ["content_similarity", "keyword_coverage", "completeness"])
def test_two_empty_texts_score_the_scale_and_an_empty_output_scores_zero(scorer_id):
    assert score(scorer_id, "", "", scale=5).score == 5
    assert score(scorer_id, "", "Paris hosted the 2024 Olympic Games.", scale=5).score == 0


# --- quick checks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("scorer_id, output, reference, options, passed, reason", [
    ("includes", "It is Sunny today", "sunny", {}, True, 'The output includes "sunny".'),
    ("includes", "It is Sunny today", "sunny", {"ignoreCase": False}, False, 'The output does not include "sunny".'),
    ("includes", "rain", None, {"expected": "snow"}, False, 'The output does not include "snow" (ignoring case).'),
    ("excludes", "an Error occurred", None, {"unwanted": "error"}, False,
     'The output contains "error" (at character 3, ignoring case).'),
    ("excludes", "all good", None, {"unwanted": "error"}, True, 'The output does not contain "error".'),
    ("equals", "Hello", "hello", {}, True, 'The output equals "hello".'),
    ("equals", "Hello", "hello!", {}, False, 'The output differs from "hello!" from character 5 on (ignoring case).'),
    ("matches", "Sunny, 72°F", None, {"pattern": r"\d+°[FC]"}, True,
     'The output matches "\\d+°[FC]" at characters 7-11.'),
    ("matches", "Sunny, 72°F", None, {"pattern": r"\d+°[FC]", "exact": True}, False,
     'The output does not match "\\d+°[FC]" as a whole.'),
    ("matches", "SUNNY", "sunny", {"ignoreCase": True}, True, 'The output matches "sunny" at characters 0-5.'),
    ("similarity", "night", "nacht", {"threshold": 0.25}, True,
     'The output\'s similarity to "nacht" is 0.25, at least the threshold 0.25.'),
    ("similarity", "night", "nacht", {"threshold": 0.3}, False,
     'The output\'s similarity to "nacht" is 0.25, below the threshold 0.3.'),
    ("json_valid", '{"a": [1, 2]}', None, {}, True, "The output is valid JSON."),
    ("json_valid", '{"a": NaN}', None, {}, False, "The output is not valid JSON: NaN is not JSON."),
    ("json_valid", '{"a": 1,\n}', None, {}, False,
     "The output is not valid JSON: Expecting property name enclosed in double quotes at line 2, column 1."),
    ("json_schema", '{"a": 1}', None, {"schema": {"type": "object", "required": ["a"]}}, True,
     "The output is valid JSON and satisfies the schema."),
    ("json_schema", '{"a": "x"}', None, {"schema": {"properties": {"a": {"type": "integer"}}, "required": ["b"]}},
     False, 'The output does not satisfy the schema: /: "b" is a required property; /a: "x" is not of type "integer".'),
])
def test_quick_checks_score_the_scale_or_zero_and_say_what_failed(scorer_id, output, reference, options, passed,
                                                                  reason):
    result = score(scorer_id, output, reference, scale=3, **options)
    assert (result.score, result.reason) == (3 if passed else 0, reason)


def test_similarity_without_a_threshold_is_the_similarity():
    assert score("similarity", "night", "nacht", scale=4).score == 1.0


def test_a_text_check_without_its_text_needs_the_ground_truth():
    result = score("includes", "anything")
    assert (result.status, result.error.kind) == ("failed", "input")
    assert "includes needs 'ground_truth'" in result.error.message


# --- regular expressions ---------------------------------------------------------------------------------


def test_a_pattern_option_that_does_not_compile_is_refused_at_load_with_its_position():
    with pytest.raises(OptionError) as info:
        load_scorer("matches", options={"pattern": "Sunny (\\d+"})
    assert str(info.value) == "matches: option 'pattern': pattern 'Sunny (\\\\d+' does not compile: missing ) at " \
                              "position 10"


def test_a_pattern_from_the_item_that_does_not_compile_fails_that_item_only():
    scorer = load_scorer("matches")
    bad = scorer.run(output="x", ground_truth="[a-")
    assert (bad.status, bad.error.kind, bad.error.stage) == ("failed", "function", "check")
    assert bad.error.message == "matches raised PatternError: pattern '[a-' does not compile: unterminated " \
                                "character set at position 3"
    assert scorer.run(output="x", ground_truth="x").score == 1


def test_a_catastrophic_pattern_is_stopped_and_fails_its_item():
    text = "a" * 60 + "b"
    direct = lookup("matches")
    with pytest.raises(ValueError, match=r"did not finish within 0.2 s on a text of 61 characters"):
        direct(text=text, pattern="(a|aa)+$", seconds=0.2)
    result = score("matches", text, "(a|aa)+$")
    assert (result.status, result.error.kind) == ("failed", "function")
    assert "did not finish within 1 s" in result.error.message and "backtracks catastrophically" in result.error.message


def test_a_json_schema_option_that_is_not_a_schema_is_refused_at_load():
    with pytest.raises(OptionError, match="option 'schema': not a valid JSON Schema: 'objekt' is not valid"):
        load_scorer("json_schema", options={"schema": {"type": "objekt"}})


# --- size limits -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("scorer_id, limit, options", [
    ("content_similarity", 1_000_000, {}),
    ("keyword_coverage", 1_000_000, {}),
    ("completeness", 200_000, {}),
    ("tone_consistency", 100_000, {}),
    ("includes", 1_000_000, {"expected": "x"}),
    ("matches", 1_000_000, {"pattern": "x"}),
    ("json_valid", 1_000_000, {}),
])
def test_an_input_past_a_functions_size_limit_fails_the_item_clearly(scorer_id, limit, options):
    big = "ab " * (limit // 3 + 1)
    result = score(scorer_id, big, "reference", **options)
    assert (result.status, result.error.kind) == ("failed", "function")
    assert f"has {len(big):,} characters" in result.error.message
    assert f"takes at most {limit:,} (its size limit)" in result.error.message


def test_a_pattern_past_its_size_limit_is_refused():
    with pytest.raises(OptionError, match="the pattern has 10,001 characters; patterns take at most 10,000"):
        load_scorer("matches", options={"pattern": "a" * 10_001})


# --- properties --------------------------------------------------------------------------------------------

# any code point, lone surrogates included (JSON input can carry them)
TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)
COMPARED = ["content_similarity", "keyword_coverage", "completeness", "similarity", "includes", "equals"]


@pytest.mark.parametrize("scorer_id", COMPARED)
@settings(max_examples=40)
@given(a=TEXT, b=TEXT)
def test_compared_texts_score_within_the_scale_and_identical_ones_score_it(scorer_id, a, b):
    scorer = load_scorer(scorer_id, options={"scale": 7})
    same = scorer.run(output=a, ground_truth=a)
    assert same.status == "scored" and same.score == 7, (same.reason, same.error)
    other = scorer.run(output=a, ground_truth=b)
    assert other.status == "scored", other.error
    assert 0 <= other.score <= 7 and not math.isnan(other.score)


@pytest.mark.parametrize("scorer_id", ["tone_consistency", "json_valid", "json_schema"])
@settings(max_examples=40)
@given(text=TEXT, tone=st.one_of(st.none(), TEXT))
def test_single_text_scorers_score_within_the_scale_on_any_text(scorer_id, text, tone):
    options = {"scale": 7, **({"referenceTone": tone} if scorer_id == "tone_consistency" else {})}
    scorer = load_scorer(scorer_id, options=options)
    result = scorer.run(output=text, language="en")
    assert result.status == "scored", result.error
    assert 0 <= result.score <= 7 and not math.isnan(result.score)
    detected = scorer.run(output=text)  # tone_consistency's lexicon is English: another language is not scorable
    if detected.status != "scored":
        assert scorer_id == "tone_consistency" and detected.status == "not_scorable", detected.error
        assert detected.language != "en" and detected.language_detected


@settings(max_examples=40)
@given(text=TEXT)
def test_matches_finds_any_text_as_its_own_escaped_pattern(text):
    import regex

    result = load_scorer("matches", options={"exact": True}).run(output=text, ground_truth=regex.escape(text))
    assert (result.status, result.score) == ("scored", 1)

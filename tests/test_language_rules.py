"""Rule scorers in other languages: words segmented for Chinese, Japanese and Thai, each
language's stopwords, lemmas in English only, and tone_consistency not scorable outside English."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.functions.completeness import completeness
from engine.functions.keywords import keyword_coverage, keywords
from engine.functions.words import stopwords, tokens


def test_japanese_completeness_splits_its_words():
    result = load_scorer("completeness").run(ground_truth="猫はとても可愛い", output="猫はとても可愛いです。")
    assert result.language == "ja" and result.language_detected is True
    assert result.score >= 0.6
    assert result.stages["analyze"].result["matched"] == ["猫", "とても", "可愛い"]  # "は": a stopword


def test_japanese_completeness_counts_a_missing_word():
    found = completeness(reference="猫はとても可愛い", candidate="犬はとても可愛いです。", language="ja")
    assert found["missing"] == ["猫"] and round(found["coverage"], 4) == 0.6667


@pytest.mark.parametrize(("text", "language", "expected"), [
    ("我喜欢吃苹果", "zh", ["我", "喜欢", "吃", "苹果"]),
    ("猫はとても可愛いです。", "ja", ["猫", "は", "とても", "可愛い", "です"]),
    ("วันนี้อากาศดีมาก", "th", ["วันนี้", "อากาศ", "ดีมาก"]),
    ("Le chat, c'est l'ami.", "fr", ["Le", "chat", "c'est", "l'ami"]),
])
def test_tokens_split_each_language_into_words(text, language, expected):
    assert tokens(text, language) == expected


def test_each_language_has_its_own_stopwords():
    assert "der" in stopwords("de") and "der" not in stopwords("en")
    assert "le" in stopwords("fr") and "the" in stopwords("en")
    assert "ครับ" in stopwords("th")
    assert stopwords("xh") == frozenset()  # no list for Xhosa: nothing is dropped


def test_german_keywords_drop_german_stopwords():
    assert keywords("Der Hund und die Katze schlafen im Garten.", "de") == ["hund", "katze", "schlafen", "garten"]


def test_chinese_keyword_coverage_finds_the_missing_word():
    found = keyword_coverage(reference="我喜欢吃苹果和香蕉", candidate="我喜欢吃苹果", language="zh")
    assert found["missing"] == ["香蕉"] and found["total"] == 4


def test_lemmas_are_english_only():
    assert completeness(reference="The children ran home.", candidate="A child runs home.", language="en")["coverage"] == 1.0
    french = completeness(reference="Les enfants couraient.", candidate="Un enfant court.", language="fr")
    assert french["missing"] == ["enfants", "couraient"] and french["coverage"] == 0.0


def test_english_scores_as_before_when_the_language_is_detected():
    scorer = load_scorer("keyword_coverage")
    result = scorer.run(ground_truth="The quick brown fox jumps over the lazy dog.",
                        output="A quick fox jumped over a dog.")
    assert result.language == "en"
    assert result.stages["analyze"].result == keyword_coverage(
        reference="The quick brown fox jumps over the lazy dog.", candidate="A quick fox jumped over a dog.")


def test_german_tone_consistency_is_not_scorable_with_the_reason():
    result = load_scorer("tone_consistency").run(output="Das ist ein wunderbarer Tag, ich bin sehr glücklich.")
    assert result.score is None and result.error is None
    assert result.not_scorable is not None
    # the reason in the item's language (the spec gives it in German)
    assert result.reason.startswith("Die Ausgabe ist nicht auf Englisch (German)") and "VADER" in result.reason
    assert result.stages["analyze"].skipped is True  # no number computed from an English lexicon
    italian = load_scorer("tone_consistency").run(output="Che bella giornata, sono molto felice.", language="it")
    assert "Italian" in italian.reason and "English lexicon" in italian.reason and italian.reason_language == "en"


def test_english_tone_consistency_still_scores():
    result = load_scorer("tone_consistency").run(output="What a wonderful day, I am very happy.")
    assert result.language == "en" and result.score == 1.0


def test_tone_consistency_for_a_given_language_is_not_scorable_even_for_english_text():
    result = load_scorer("tone_consistency").run(output="What a wonderful day.", language="fr")
    assert result.not_scorable is not None and "French" in result.reason

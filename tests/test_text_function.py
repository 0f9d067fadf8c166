"""Tests for engine.functions.text.textual_difference."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from engine.functions.text import textual_difference


def test_one_word_replaced():
    r = textual_difference("The quick brown fox", "The quick brown cat")
    assert round(r["ratio"], 4) == 0.8421
    assert r["confidence"] == 1.0
    assert r["lengthDiff"] == 0.0
    assert r["changes"] == 1  # "fox" -> "cat" is one replacement
    assert set(r) == {"ratio", "changes", "lengthDiff", "confidence"}


def test_insertion_lowers_confidence():
    r = textual_difference("hello world", "hello there world")
    assert round(r["ratio"], 4) == 0.7857
    assert round(r["confidence"], 4) == 0.6471
    assert round(r["ratio"] * r["confidence"], 4) == 0.5084
    assert round(r["lengthDiff"], 4) == 0.3529
    assert r["changes"] == 1


def test_both_empty():
    assert textual_difference("", "") == {
        "ratio": 1.0, "changes": 0, "lengthDiff": 0.0, "confidence": 1.0,
    }


def test_one_empty():
    r = textual_difference("abc", "")
    assert r["ratio"] == 0.0
    assert r["changes"] == 1
    assert r["lengthDiff"] == 1.0
    assert r["confidence"] == 0.0
    assert textual_difference("", "abc")["ratio"] == 0.0


def test_no_common_character():
    r = textual_difference("abc", "xyz")
    assert r["ratio"] == 0.0
    assert r["changes"] == 1
    assert r["confidence"] == 1.0


def test_changes_counts_regions():
    assert textual_difference("abc", "xbz")["changes"] == 2
    assert textual_difference("xabc", "abc")["changes"] == 1
    assert textual_difference("abc", "abcx")["changes"] == 1
    assert textual_difference("ab", "ba")["changes"] == 2


def test_code_points_without_normalisation():
    # "é" precomposed (1 code point) vs decomposed (2 code points).
    r = textual_difference("caf\u00e9", "cafe\u0301")
    assert r["ratio"] == pytest.approx(2 * 3 / 9)
    assert r["lengthDiff"] == pytest.approx(1 / 5)
    # Astral characters count as one code point each.
    r = textual_difference("a\U0001F600b", "a\U0001F600c")
    assert r["ratio"] == pytest.approx(2 * 2 / 6)
    assert r["confidence"] == 1.0


def test_rejects_non_str():
    with pytest.raises(TypeError):
        textual_difference(None, "a")
    with pytest.raises(TypeError):
        textual_difference("a", b"a")


def test_long_texts():
    a = "lorem ipsum dolor sit amet " * 400
    b = a.replace("dolor", "dolour", 50)
    r = textual_difference(a, b)
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b))
    assert r["changes"] == 50


texts = st.text(alphabet=st.sampled_from("ab c\u00e9\U0001F600"), max_size=40) | st.text(max_size=40)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_identical_texts(a):
    r = textual_difference(a, a)
    assert r == {"ratio": 1.0, "changes": 0, "lengthDiff": 0.0, "confidence": 1.0}


@settings(max_examples=500, deadline=None)
@given(texts, texts)
def test_properties(a, b):
    r = textual_difference(a, b)
    s = textual_difference(b, a)
    assert r["ratio"] == s["ratio"]
    assert r["lengthDiff"] == s["lengthDiff"]
    assert r["confidence"] == s["confidence"]
    for key in ("ratio", "lengthDiff", "confidence"):
        assert isinstance(r[key], float)
        assert not math.isnan(r[key])
        assert 0.0 <= r[key] <= 1.0
    assert isinstance(r["changes"], int)
    assert r["changes"] >= 0
    assert (r["changes"] == 0) == (a == b)
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b), abs=1e-12)
    if a != b:
        assert r["ratio"] < 1.0
    # A change region holds at least one edit operation, at most all of them.
    n_ops = len(a) + len(b) - round(r["ratio"] * (len(a) + len(b)))
    assert r["changes"] <= max(n_ops, 0)

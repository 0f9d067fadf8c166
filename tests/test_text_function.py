"""Tests for engine.functions.text.textual_difference."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from engine.functions import text
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


# --- long pairs: aligned piecewise at proven cuts -------------------------------------------------

WORDS = "the quick brown fox jumps over lazy dog while agents evaluate scores across inputs".split()


def word_pair(n_words: int, seed: int, edit_rate: float = 0.1) -> tuple[str, str]:
    """A random word text and a copy with about `edit_rate` of its words replaced, dropped or doubled."""
    rng = random.Random(seed)
    a = [rng.choice(WORDS) for _ in range(n_words)]
    b = []
    for word in a:
        roll = rng.random()
        if roll < edit_rate / 3:
            b.append(rng.choice(WORDS))
        elif roll < 2 * edit_rate / 3:
            continue
        elif roll < edit_rate:
            b += [word, rng.choice(WORDS)]
        else:
            b.append(word)
    return " ".join(a), " ".join(b)


def assert_optimal_alignment(a: str, b: str, blocks: list) -> None:
    """`blocks` are in order, do not overlap, match character for character, and together hold
    a longest common subsequence."""
    end_a = end_b = 0
    for x, y, size in blocks:
        assert size > 0 and x >= end_a and y >= end_b
        assert a[x:x + size] == b[y:y + size]
        end_a, end_b = x + size, y + size
    assert 2 * sum(size for _, _, size in blocks) == len(a) + len(b) - Indel.distance(a, b)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_words", [500, 1800, 6000])
def test_long_pairs_are_cut_into_an_optimal_alignment(n_words, seed):
    a, b = word_pair(n_words, seed)
    assert len(a) * len(b) > text.SPLIT_CELLS
    distance = text._distance(a, b)
    assert distance == Indel.distance(a, b)
    blocks = text._blocks(a, b, distance, 0, 0, [])
    assert_optimal_alignment(a, b, blocks)
    r = textual_difference(a, b)
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b), abs=1e-12)
    # the count is the gaps of those blocks, touching blocks (across a cut) being one
    gaps, end_a, end_b = 0, 0, 0
    for x, y, size in blocks:
        gaps += (x, y) != (end_a, end_b)
        end_a, end_b = x + size, y + size
    assert r["changes"] == gaps + ((end_a, end_b) != (len(a), len(b)))


def test_a_cut_is_used_for_texts_that_mostly_agree():
    a, b = word_pair(1800, 1)
    assert text._cut(a, b, Indel.distance(a, b)) is not None


def test_separated_edits_in_long_texts_are_each_one_change():
    a = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 180
    parts = a.split("dolor")
    b = "".join(p + ("dolour" if i % 4 == 0 else "dolor") for i, p in enumerate(parts[:-1])) + parts[-1]
    assert len(a) * len(b) > text.SPLIT_CELLS
    r = textual_difference(a, b)
    assert r["changes"] == len(range(0, len(parts) - 1, 4)) == 45
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b), abs=1e-12)


@pytest.mark.parametrize("a, b", [
    ("a" * 40_000, "a" * 39_983),  # 17 deletions of one repeated character
    ("lorem ipsum dolor sit amet, consectetur " * 1000, ("lorem ipsum dolor sit amet, consectetur " * 1000)[:-1000]),
    ("lorem ipsum dolor sit amet, consectetur " * 1000,
     ("lorem ipsum dolor sit amet, consectetur " * 1000)[:20_000] + ("lorem ipsum dolor sit amet, consectetur " * 1000)[20_200:]),
], ids=["one-character", "cut-off-end", "cut-out-middle"])
def test_one_change_in_repetitive_long_text_stays_one_change(a, b):
    # a repeated run is never a cut: it could put one deleted stretch on both sides of it
    assert textual_difference(a, b)["changes"] == 1


def test_long_texts_that_mostly_agree_fit_where_one_alignment_would_not():
    a, b = word_pair(12_000, 3)  # about 70,000 characters each: aligned whole ~600 MB, over the limit
    assert len(a) * len(b) > text.MAX_ALIGNMENT_CELLS
    r = textual_difference(a, b)
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b), abs=1e-12)
    assert r["changes"] > 100


def test_unrelated_long_texts_are_refused_naming_both_lengths():
    with pytest.raises(ValueError, match=r"^texts of 60,000 and 59,000 characters are too long to align: a part of "
                                         r"60,000 × 59,000 characters has no common run to cut it at, and aligning it "
                                         r"whole would need about 425 MB \(the limit is 298 MB"):
        textual_difference("a" * 60_000, "b" * 59_000)
    with pytest.raises(ValueError, match=r"^texts of 300,000 and 300,000 characters are too long to align: they "
                                         r"differ by more than 33,333 insertions and deletions"):
        textual_difference("a" * 300_000, "b" * 300_000)


def _long_text(n_chars: int, seed: int = 5) -> str:
    rng = random.Random(seed)
    vocabulary = ["word", "river", "stone", "a", "of", "light", "quiet", "seven"]
    out, size = [], 0
    while size < n_chars:
        w = rng.choice(vocabulary)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n_chars]


@pytest.mark.parametrize("long_is_reference", [True, False])
def test_a_short_text_against_a_million_characters_is_aligned_within_the_limit(long_is_reference):
    """Aligning 9 characters with 1,000,000 needs about 25 MB (a bit matrix of 1.1 MB and an
    edit per extra character), far below the limit: it scores, with the exact Indel ratio."""
    long = _long_text(1_000_000)
    a, b = (long, "word word") if long_is_reference else ("word word", long)
    r = textual_difference(a, b)
    assert r["ratio"] == pytest.approx(Indel.normalized_similarity(a, b), abs=1e-12)
    assert r["ratio"] == pytest.approx(18 / 1_000_009, abs=1e-12)  # all 9 characters in common
    assert r["lengthDiff"] == pytest.approx(999_991 / 1_000_000)
    assert r["confidence"] == pytest.approx(9 / 1_000_000)
    assert 1 <= r["changes"] <= 10  # the 9 matched characters split the rest into at most 10 regions


def test_the_textual_difference_scorer_scores_a_short_output_against_a_long_ground_truth():
    from engine import load_scorer

    long = _long_text(1_000_000)
    result = load_scorer("textual_difference").run(output="word word", ground_truth=long)
    assert result.status == "scored", result.error
    assert result.score == pytest.approx(Indel.normalized_similarity(long, "word word") * 9 / 1_000_000, abs=1e-15)


@pytest.mark.parametrize("a, b", [("a" * 60_000, "b" * 59_000), ("a" * 300_000, "b" * 300_000),
                                  ("x" * 1_000_000, "y" * 1_000_000)], ids=["unrelated", "banded", "megabyte"])
def test_a_refusal_states_a_need_above_its_limit(a, b):
    import re

    with pytest.raises(ValueError) as info:
        textual_difference(a, b)
    need, limit = map(lambda n: int(n.replace(",", "")),
                      re.search(r"would need about ([\d,]+) MB \(the limit is ([\d,]+) MB", str(info.value)).groups())
    assert need > limit

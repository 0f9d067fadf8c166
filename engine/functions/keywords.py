"""Keyword coverage: the share of a reference text's keywords that the output also has.

A keyword is a word (`engine.functions.words`) that is not an English stopword (the `stop-words` list) and
not a number, case folded; each counts once. The reference (`keyword-extractor` with its own
570-word list) splits on whitespace and strips some punctuation; here words are Unicode word runs,
and the longer stopword list drops more words (every word of the reference's list, and common ones
such as ``information``, ``system`` or ``work`` as well).
"""

from __future__ import annotations

from .rule_function import check_length, rule_function
from .words import COVERAGE_RESULT, coverage, fold, is_number, stopwords, words

#: Each text may have up to this many characters (about 0.3 s per million).
MAX_CHARS = 1_000_000


def keywords(text: str) -> list[str]:
    """The keywords of `text`, folded, each once, in the order they first occur."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for word in words(text):
        folded = fold(word)
        if folded not in stop and not is_number(word):
            seen.setdefault(folded, None)
    return list(seen)


@rule_function(
    args={"reference": {"type": "string"}, "candidate": {"type": "string"}},
    result=COVERAGE_RESULT,
    limit=f"each text up to {MAX_CHARS:,} characters",
)
def keyword_coverage(reference: str, candidate: str) -> dict:
    """The share of the reference's keywords found among the candidate's.

    Returns ``{"coverage": float in [0, 1], "total": int, "matched": [str], "missing": [str]}``:
    `total` keywords of the reference, `matched` those the candidate has and `missing` the others
    (both in the reference's order). A reference with no keywords (empty, or only stopwords and
    numbers) leaves nothing to cover: coverage 1.0 with total 0. Raises `ValueError` past
    `MAX_CHARS`.
    """
    check_length("keyword_coverage", "reference", reference, MAX_CHARS)
    check_length("keyword_coverage", "candidate", candidate, MAX_CHARS)
    return coverage(keywords(reference), keywords(candidate))


__all__ = ["MAX_CHARS", "keyword_coverage", "keywords"]

"""Keyword coverage: the share of a reference text's keywords that the output also has.

A keyword is a word (`engine.functions.words`) that is not a stopword of its language (the `stop-words` list) and
not a number, case folded; each counts once. The reference (`keyword-extractor` with its own
570-word list) splits on whitespace and strips some punctuation; here words are Unicode word runs,
and the longer stopword list drops more words (every word of the reference's list, and common ones
such as ``information``, ``system`` or ``work`` as well).
"""

from __future__ import annotations

from .rule_function import check_length, rule_function
from .words import COVERAGE_RESULT, coverage, fold, is_number, stopwords, tokens

#: Each text may have up to this many characters (about 0.3 s per million).
MAX_CHARS = 1_000_000


def keywords(text: str, language: str = "en") -> list[str]:
    """The keywords of `text` in `language` (an ISO 639-1 code), folded, each once, in the order
    they first occur: its words (segmented for Chinese, Japanese and Thai) less the language's
    stopwords and numbers."""
    stop = stopwords(language)
    seen: dict[str, None] = {}
    for word in tokens(text, language):
        folded = fold(word)
        if folded not in stop and not is_number(word):
            seen.setdefault(folded, None)
    return list(seen)


@rule_function(
    args={"reference": {"type": "string"}, "candidate": {"type": "string"},
          "language": {"type": "string", "pattern": "^[a-z]{2}$"}},
    result=COVERAGE_RESULT,
    limit=f"each text up to {MAX_CHARS:,} characters",
)
def keyword_coverage(reference: str, candidate: str, language: str = "en") -> dict:
    """The share of the reference's keywords found among the candidate's, both in `language` (an
    ISO 639-1 code: its stopword list; Chinese, Japanese and Thai segmented).

    Returns ``{"coverage": float in [0, 1], "total": int, "matched": [str], "missing": [str]}``:
    `total` keywords of the reference, `matched` those the candidate has and `missing` the others
    (both in the reference's order). A reference with no keywords (empty, or only stopwords and
    numbers) leaves nothing to cover: coverage 1.0 with total 0. Raises `ValueError` past
    `MAX_CHARS`.
    """
    check_length("keyword_coverage", "reference", reference, MAX_CHARS)
    check_length("keyword_coverage", "candidate", candidate, MAX_CHARS)
    return coverage(keywords(reference, language), keywords(candidate, language))


__all__ = ["MAX_CHARS", "keyword_coverage", "keywords"]

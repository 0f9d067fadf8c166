"""Words of a text, as the language rule functions see them: tokens, folding, stopwords.

A word is a run of letters, digits, underscores (Unicode ``\\w``) and combining marks, with inner
hyphens and apostrophes kept (``state-of-the-art``, ``don't``, ``GPT-4``, ``हिन्दी``). A text is
put in NFC before it is split, so ``café`` written with ``e`` and a combining accent is the same
one word as ``café`` written with ``é``. Chinese, Japanese and Thai, written without spaces
between words, are split by a dictionary segmenter instead (`tokens`, `engine.functions.segment`).
Words are compared folded: NFC, then Unicode case folding (``Straße`` and ``STRASSE`` fold alike).
The stopwords are the language's list of the `stop-words` package (English: 1,333 words; 33
languages, data inside the package: nothing is downloaded), Thai's from pythainlp, with
typographic apostrophes (``don’t``) read as plain ones; a language with no list has none.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_MARK_SPANS = ((0x0300, 0x1F000), (0xE0100, 0xE01F0))
"""Where Unicode puts combining marks (categories Mn, Mc, Me): none lies outside these spans."""


@lru_cache(maxsize=1)
def _word_pattern() -> re.Pattern[str]:
    """A word: ``\\w`` and the combining marks after it (which ``\\w`` leaves out: Devanagari vowel signs, a
    combining accent NFC has no composed letter for), inner hyphens and apostrophes kept. Built
    on first use (about 0.1 s: every code point of the mark spans is looked up once)."""
    marks = []
    for low, high in _MARK_SPANS:
        start = None
        for code in range(low, high + 1):
            mark = code < high and unicodedata.category(chr(code)).startswith("M")
            if mark and start is None:
                start = code
            elif not mark and start is not None:
                marks.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
                start = None
    part = "\\w[\\w" + "".join(marks) + "]*"  # a mark belongs to the letter before it
    return re.compile(f"{part}(?:[-'’]{part})*")


def words(text: str) -> list[str]:
    """The words of `text` in order, as written but in NFC (so a word's letters and accents are
    one word however they are encoded)."""
    return _word_pattern().findall(unicodedata.normalize("NFC", text))


def fold(word: str) -> str:
    """`word` as compared: NFC, case folded, typographic apostrophes made plain."""
    return unicodedata.normalize("NFC", word).casefold().replace("’", "'")


def is_number(word: str) -> bool:
    """Whether `word` is made of digits only (``2024``; not ``GPT-4``)."""
    return word.isdecimal()


def tokens(text: str, language: str = "en") -> list[str]:
    """The words of `text` in order for `language` (an ISO 639-1 code): segmented for Chinese,
    Japanese and Thai (`engine.functions.segment`), else as `words` splits."""
    from .segment import SEGMENTED, segment

    return segment(text, language) if language in SEGMENTED else words(text)


#: Codes whose `stop-words` list is filed under another code (Norwegian: Bokmål's list).
_STOPWORD_CODES = {"no": "nb"}


@lru_cache(maxsize=64)
def stopwords(language: str = "en") -> frozenset[str]:
    """The stopwords of `language` (an ISO 639-1 code), folded, read once: the `stop-words`
    package's list, pythainlp's for Thai; empty for a language with no list."""
    if language == "th":
        from .segment import _segmenter

        _segmenter("th")  # sets pythainlp's read-only, offline mode before it is imported
        from pythainlp.corpus import thai_stopwords

        return frozenset(fold(w) for w in thai_stopwords())
    from stop_words import LANGUAGE_MAPPING, get_stop_words

    code = _STOPWORD_CODES.get(language, language)
    if code not in LANGUAGE_MAPPING:
        return frozenset()
    return frozenset(fold(w) for w in get_stop_words(LANGUAGE_MAPPING[code]))



COVERAGE_RESULT = {
    "type": "object", "additionalProperties": False, "required": ["coverage", "total", "matched", "missing"],
    "properties": {"coverage": {"type": "number", "minimum": 0, "maximum": 1}, "total": {"type": "integer", "minimum": 0},
                   "matched": {"type": "array", "items": {"type": "string"}},
                   "missing": {"type": "array", "items": {"type": "string"}}},
}
"""The result schema of a coverage function (`coverage`)."""


def coverage(wanted: list[str], found: list[str]) -> dict:
    """How much of `wanted` (the reference's words, each once, in order) `found` has:
    ``{"coverage": matched / total in [0, 1], "total", "matched", "missing"}``, both lists in the
    reference's order; nothing wanted leaves nothing to cover: coverage 1.0 with total 0."""
    present = set(found)
    matched = [w for w in wanted if w in present]
    missing = [w for w in wanted if w not in present]
    return {"coverage": len(matched) / len(wanted) if wanted else 1.0, "total": len(wanted), "matched": matched,
            "missing": missing}

__all__ = ["COVERAGE_RESULT", "coverage", "fold", "is_number", "stopwords", "tokens", "words"]

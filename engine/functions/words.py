"""Words of a text, as the language rule functions see them: tokens, folding, stopwords.

A word is a run of letters, digits or underscores (Unicode ``\\w``), with inner hyphens and
apostrophes kept (``state-of-the-art``, ``don't``, ``GPT-4``). Words are compared folded: NFC,
then Unicode case folding (``Straße`` and ``STRASSE`` fold alike). The stopwords are the English
list of the `stop-words` package (1,333 words, data inside the package: nothing is downloaded),
with typographic apostrophes (``don’t``) read as plain ones.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORD = re.compile(r"\w+(?:[-'’]\w+)*")


def words(text: str) -> list[str]:
    """The words of `text` in order, as written."""
    return _WORD.findall(text)


def fold(word: str) -> str:
    """`word` as compared: NFC, case folded, typographic apostrophes made plain."""
    return unicodedata.normalize("NFC", word).casefold().replace("’", "'")


def is_number(word: str) -> bool:
    """Whether `word` is made of digits only (``2024``; not ``GPT-4``)."""
    return word.isdecimal()


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The English stopwords, folded (read from the `stop-words` package once)."""
    from stop_words import get_stop_words

    return frozenset(fold(w) for w in get_stop_words("english"))



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

__all__ = ["COVERAGE_RESULT", "coverage", "fold", "is_number", "stopwords", "words"]

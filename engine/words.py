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


__all__ = ["fold", "is_number", "stopwords", "words"]

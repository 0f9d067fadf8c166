"""Words of a text written without spaces between them: Chinese, Japanese and Thai.

`segment(text, language)` splits a text into words with a dictionary segmenter from a package
that ships its dictionary (nothing is downloaded), imported on first use:

- Chinese (``zh``): jieba's dictionary and its maximum-probability path, through rjieba (jieba
  compiled; about 0.1 s to load);
- Japanese (``ja``): janome, a morphological analyser with the IPADIC dictionary (about 0.2 s to
  load, then about 10,000 characters a second);
- Thai (``th``): pythainlp's ``newmm`` (maximal matching over its Thai word list; about 1 s to
  load), run read-only and offline (``PYTHAINLP_READ_ONLY``, ``PYTHAINLP_OFFLINE`` set unless the
  environment sets them) so it writes no data folder and fetches nothing.

Every other language is split at spaces and punctuation (`engine.functions.words.tokens`).
Tokens that hold no letter or digit (punctuation, spaces) are left out; a word keeps the case it
is written in.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Any, Callable

#: The languages `segment` splits with a dictionary segmenter.
SEGMENTED = ("ja", "th", "zh")

_lock = threading.Lock()


@lru_cache(maxsize=None)
def _segmenter(language: str) -> Callable[[str], list[str]]:
    """The segmenter of `language` (one of `SEGMENTED`), built once."""
    with _lock:
        if language == "zh":
            import rjieba

            return rjieba.cut
        if language == "ja":
            from janome.tokenizer import Tokenizer

            tokenizer: Any = Tokenizer(wakati=True)
            return lambda text: list(tokenizer.tokenize(text))
        os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
        os.environ.setdefault("PYTHAINLP_OFFLINE", "1")
        from pythainlp.tokenize import word_tokenize

        return lambda text: word_tokenize(text, engine="newmm", keep_whitespace=False)


def segment(text: str, language: str) -> list[str]:
    """The words of `text` in order, for `language` one of `SEGMENTED` (``zh``, ``ja``, ``th``),
    segmented with its dictionary (see the module docstring); `KeyError` for another language
    (`engine.functions.words.tokens` splits those)."""
    if language not in SEGMENTED:
        raise KeyError(f"no segmenter for {language!r}")
    return [token for token in _segmenter(language)(text) if any(ch.isalnum() for ch in token)]


__all__ = ["SEGMENTED", "segment"]

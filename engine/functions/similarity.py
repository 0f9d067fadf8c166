"""Content similarity: the Sørensen–Dice coefficient over character bigrams.

The same score as the reference (`string-similarity`'s ``compareTwoStrings`` after Mastra's case
and whitespace folding) on every pair and every option, except where Unicode normalisation
(NFC, on by default) changes a text: ``"café"`` written with one code point or with ``e`` and a
combining accent scores 1 here. Like the reference, texts are counted in UTF-16 code units, so
a character outside the Basic Multilingual Plane (an emoji) is two units and makes bigrams of its
own halves; whitespace is JavaScript's ``\\s`` set.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from array import array
from collections import Counter

from .rule_function import check_length, rule_function

#: Each text may have up to this many characters (counting bigrams is linear: about 0.7 s per
#: million characters).
MAX_CHARS = 1_000_000

# JavaScript's \s: what the reference's `\s+` folds and removes
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACE_RUNS = re.compile(f"[{re.escape(_JS_SPACE)}]+")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _units(text: str) -> array:
    """`text` as an array of its UTF-16 code units (lone surrogates kept as they are)."""
    units = array("H", text.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    return units


def _bmp(text: str) -> bool:
    """Whether every character of `text` is one UTF-16 unit (none outside the BMP)."""
    return _ASTRAL.search(text) is None


def dice(a: str, b: str) -> tuple[float, int, int, int]:
    """``(similarity, shared, bigrams of a, bigrams of b)``: 2 × shared / (bigrams of a +
    bigrams of b) over the UTF-16 code-unit bigrams of `a` and `b` with all whitespace removed,
    each bigram shared at most as often as it occurs in both. 1.0 when the two are equal after
    removing whitespace (two empty texts included); 0.0 when they differ and either has fewer
    than two units."""
    a, b = _SPACE_RUNS.sub("", a), _SPACE_RUNS.sub("", b)
    # characters are the units unless one text has a character outside the BMP (two units)
    ua, ub = (a, b) if _bmp(a) and _bmp(b) else (_units(a), _units(b))
    na, nb = max(len(ua) - 1, 0), max(len(ub) - 1, 0)
    if ua == ub:
        return 1.0, na, na, nb
    if na == 0 or nb == 0:
        return 0.0, 0, na, nb
    first = Counter(zip(ua, ua[1:]))
    second = Counter(zip(ub, ub[1:]))
    shared = sum((first & second).values())
    return 2.0 * shared / (na + nb), shared, na, nb


def fold_text(text: str, *, ignore_case: bool, ignore_whitespace: bool, normalize: bool) -> str:
    """`text` as compared: NFC when `normalize`, lower case when `ignore_case`, runs of
    whitespace made one space and the ends trimmed when `ignore_whitespace`."""
    if normalize:
        text = unicodedata.normalize("NFC", text)
    if ignore_case:
        text = text.lower()
    if ignore_whitespace:
        text = _SPACE_RUNS.sub(" ", text).strip(_JS_SPACE)
    return text


_TEXT = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}


@rule_function(
    args={"reference": _TEXT, "candidate": _TEXT, "ignore_case": {"type": "boolean"},
          "ignore_whitespace": {"type": "boolean"}, "normalize": {"type": "boolean"}},
    result={"type": "object", "additionalProperties": False,
            "required": ["similarity", "shared", "referenceBigrams", "candidateBigrams"],
            "properties": {"similarity": {"type": "number", "minimum": 0, "maximum": 1},
                           "shared": _COUNT, "referenceBigrams": _COUNT, "candidateBigrams": _COUNT}},
    limit=f"each text up to {MAX_CHARS:,} characters",
)
def content_similarity(reference: str, candidate: str, ignore_case: bool = True, ignore_whitespace: bool = True,
                       normalize: bool = True) -> dict:
    """Sørensen–Dice similarity of two texts over their character bigrams, whitespace removed.

    The texts are folded first (`fold_text`: NFC when `normalize`, lower case when
    `ignore_case`, whitespace runs made one space when `ignore_whitespace`; whitespace is removed
    before counting bigrams anyway, so that option changes no score), then compared with `dice`.

    Returns ``{"similarity": float in [0, 1], "shared": int, "referenceBigrams": int,
    "candidateBigrams": int}``: 1.0 for texts equal after folding (two empty texts included),
    0.0 when exactly one is empty. Raises `ValueError` when a text has more than `MAX_CHARS`
    characters.
    """
    check_length("content_similarity", "reference", reference, MAX_CHARS)
    check_length("content_similarity", "candidate", candidate, MAX_CHARS)
    options = {"ignore_case": ignore_case, "ignore_whitespace": ignore_whitespace, "normalize": normalize}
    similarity, shared, na, nb = dice(fold_text(reference, **options), fold_text(candidate, **options))
    return {"similarity": similarity, "shared": shared, "referenceBigrams": na, "candidateBigrams": nb}


__all__ = ["MAX_CHARS", "content_similarity", "dice", "fold_text"]

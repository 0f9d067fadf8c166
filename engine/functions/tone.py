"""Tone consistency: the output's sentiment against a reference tone, or its stability.

A sentence's sentiment is VADER's compound score (the `vaderSentiment` package, its lexicon
inside the package): a number in [-1, 1], negative to positive, with negation ("not good"),
intensifiers ("very") and punctuation emphasis taken into account; a text's is the mean over its
sentences. The reference (`sentiment`, AFINN-165)
scores the sum of word valences divided by the number of words, which is not bounded by 1, so
the two scales differ: scores rank texts alike but are not equal.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .rule_function import check_length, rule_function

#: The output (and the reference tone) may have up to this many characters (VADER is pure
#: Python: 0.1 to 1 s per 100,000 characters, read in pieces of `PIECE_WORDS` words).
MAX_CHARS = 100_000

_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")
PIECE_WORDS = 100
"""The most words VADER reads at once: its cost grows with the square of a piece's words (a
100,000-character run-on sentence would take minutes)."""


@lru_cache(maxsize=1)
def _analyzer() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def sentences(text: str) -> list[str]:
    """`text` cut after each run of ``.``, ``!`` or ``?`` (a last piece without one counts too),
    trimmed, blank pieces left out; a piece of more than `PIECE_WORDS` words is cut into pieces
    of that many."""
    out = []
    for sentence in _SENTENCE.findall(text):
        tokens = sentence.split()
        out.extend(" ".join(tokens[i:i + PIECE_WORDS]) for i in range(0, len(tokens), PIECE_WORDS))
    return out


def _compound(piece: str) -> float:
    return float(_analyzer().polarity_scores(piece)["compound"])


def sentiment(text: str) -> float:
    """The sentiment of `text` in [-1, 1]: VADER's compound score of each of its `sentences`,
    averaged (for one sentence, its compound score); 0.0 for a text with no words."""
    scores = [_compound(piece) for piece in sentences(text)]
    return sum(scores) / len(scores) if scores else 0.0


_NUMBER = {"type": "number"}
_MAYBE_NUMBER = {"type": ["number", "null"]}


@rule_function(
    args={"text": {"type": "string"}, "reference_tone": {"type": ["string", "null"]}},
    result={"type": "object", "additionalProperties": False,
            "required": ["consistency", "mode", "sentiment", "sentences", "variance", "referenceSentiment",
                         "difference"],
            "properties": {"consistency": {"type": "number", "minimum": 0, "maximum": 1},
                           "mode": {"enum": ["reference", "stability"]}, "sentiment": _NUMBER,
                           "sentences": {"type": "integer", "minimum": 0}, "variance": _MAYBE_NUMBER,
                           "referenceSentiment": _MAYBE_NUMBER, "difference": _MAYBE_NUMBER}},
    limit=f"the text and the reference tone up to {MAX_CHARS:,} characters each",
)
def tone_consistency(text: str, reference_tone: str | None = None) -> dict:
    """How consistent the tone of `text` is.

    With a `reference_tone` (a text such as ``"calm and friendly"``; empty or None means none):
    ``consistency = max(0, 1 - |sentiment(text) - sentiment(reference_tone)|)``, mode
    ``reference`` (`sentiment`: the mean compound score of the sentences). Without: the compound
    scores of the text's sentences, ``consistency = max(0, 1 -
    variance)`` (population variance), mode ``stability``; `sentiment` is their mean. A text with
    no sentence (empty or blank) is stable: consistency 1.0, sentiment 0.0.

    Returns ``{"consistency", "mode", "sentiment", "sentences", "variance", "referenceSentiment",
    "difference"}`` (the last two None in stability mode, `variance` None in reference mode).
    Raises `ValueError` past `MAX_CHARS`.
    """
    check_length("tone_consistency", "text", text, MAX_CHARS)
    parts = sentences(text)
    if reference_tone:
        check_length("tone_consistency", "reference_tone", reference_tone, MAX_CHARS)
        own, wanted = sentiment(text), sentiment(reference_tone)
        difference = abs(own - wanted)
        return {"consistency": max(0.0, 1.0 - difference), "mode": "reference", "sentiment": own,
                "sentences": len(parts), "variance": None, "referenceSentiment": wanted, "difference": difference}
    scores = [_compound(piece) for piece in parts]
    mean = sum(scores) / len(scores) if scores else 0.0
    variance = sum((s - mean) ** 2 for s in scores) / len(scores) if scores else 0.0
    return {"consistency": min(1.0, max(0.0, 1.0 - variance)), "mode": "stability", "sentiment": mean,
            "sentences": len(parts), "variance": variance, "referenceSentiment": None, "difference": None}


__all__ = ["MAX_CHARS", "sentences", "sentiment", "tone_consistency"]

"""Completeness: the share of a reference text's key elements that the output also has.

The key elements are its nouns and verbs, as lemmas (``children`` → ``child``, ``ran`` →
``run``), its numbers, and the named terms the English lexicon does not know (``Mastra``,
``London``, ``GPT-4``), each once, folded. Parts of speech and lemmas come from LemmInflect's
lexicon (data inside the package): a word the lexicon lists as a verb is taken as a verb, else as
a noun; a word it lists only as an adjective or adverb is not an element. Stopwords
(`engine.functions.words`) are not elements either, except those the lexicon lists only as verbs (``ran``,
``gave``, ``found``: the stopword list holds many such verbs, and verbs are half of what is
counted). There is no sentence context (no tagger): ``saw`` is the verb ``see`` wherever it
stands. The reference (`compromise`) tags words in context and counts every term, stopwords
included.

Lemmas and parts of speech exist for English only. In another language (``language``, an ISO
639-1 code) the key elements are its words as written (folded), each once, less the language's
stopwords (`engine.functions.words.stopwords`; numbers kept): Chinese, Japanese and Thai split
into words by their segmenters (`engine.functions.segment`), the others at spaces and punctuation.
"""

from __future__ import annotations

from functools import lru_cache

from .rule_function import check_length, rule_function
from .words import COVERAGE_RESULT, coverage, fold, is_number, stopwords, tokens, words

#: Each text may have up to this many characters (about 0.5 s per 100,000 once warm).
MAX_CHARS = 200_000


@lru_cache(maxsize=65_536)
def _element(word: str, stop: bool) -> str | None:
    """The element `word` stands for: its verb lemma, else its noun lemma, or itself folded when
    the lexicon does not know it; None when it is only an adjective, adverb or other word. A
    stopword (`stop`) is an element only when the lexicon knows it as a verb and nothing else."""
    from lemminflect import getAllLemmas

    if word.endswith(("'s", "’s")) and len(word) > 2:
        word = word[:-2]  # a possessive: the word it belongs to
    found = getAllLemmas(word) or (getAllLemmas(word.lower()) if word != word.lower() else {})
    if stop:
        return fold(found["VERB"][0]) if set(found) == {"VERB"} else None
    if not found:
        return fold(word)
    for pos in ("VERB", "NOUN", "PROPN"):
        if pos in found:
            return fold(found[pos][0])
    return None


def elements(text: str, language: str = "en") -> list[str]:
    """The key elements of `text` in `language`, folded, each once, in the order they first occur."""
    stop = stopwords(language)
    seen: dict[str, None] = {}
    if language != "en":
        for word in tokens(text, language):
            folded = fold(word)
            if folded not in stop or is_number(word):
                seen.setdefault(folded, None)
        return list(seen)
    for word in words(text):
        element = fold(word) if is_number(word) else _element(word, fold(word) in stop)
        if element is not None:
            seen.setdefault(element, None)
    return list(seen)


@rule_function(
    args={"reference": {"type": "string"}, "candidate": {"type": "string"},
          "language": {"type": "string", "pattern": "^[a-z]{2}$"}},
    result=COVERAGE_RESULT,
    limit=f"each text up to {MAX_CHARS:,} characters",
)
def completeness(reference: str, candidate: str, language: str = "en") -> dict:
    """The share of the reference's key elements (nouns and verbs as lemmas, numbers, named
    terms) found among the candidate's. `language`: the texts' ISO 639-1 code; outside English
    the elements are the words less the language's stopwords (no lemmas: see the module docstring).

    Returns ``{"coverage": float in [0, 1], "total": int, "matched": [str], "missing": [str]}``
    (elements in the reference's order). A reference with no elements leaves nothing to cover:
    coverage 1.0 with total 0. Raises `ValueError` past `MAX_CHARS`.
    """
    check_length("completeness", "reference", reference, MAX_CHARS)
    check_length("completeness", "candidate", candidate, MAX_CHARS)
    return coverage(elements(reference, language), elements(candidate, language))


__all__ = ["MAX_CHARS", "completeness", "elements"]

"""Regular expressions from specs, options and items: compiled with the problem's position,
searched in bounded time.

Patterns use the `regex` package (Python `re` syntax and more). A pattern that does not compile
raises `PatternError` naming the position; a search that backtracks past its time budget
(``(a|aa)+$`` on a long run of ``a`` followed by ``b``) raises `PatternError` instead of hanging
an eval. Patterns are at most `MAX_PATTERN_CHARS` characters.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .errors import UserError

MAX_PATTERN_CHARS = 10_000
SEARCH_SECONDS = 1.0
"""The default time budget of one search."""


class PatternError(UserError, ValueError):
    """A pattern that does not compile, is too long, or a search that ran out of time."""


@lru_cache(maxsize=128)
def compile_pattern(pattern: str, ignore_case: bool = False) -> Any:
    """`pattern` compiled by the `regex` package (case-insensitive when `ignore_case`).
    Raises `PatternError`: ``pattern '(a' does not compile: missing ) at position 2``."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern has {len(pattern):,} characters; patterns take at most "
                           f"{MAX_PATTERN_CHARS:,}")
    import regex

    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise PatternError(f"pattern {_quoted(pattern)} does not compile: {exc.msg}{where}") from None


def pattern_problem(pattern: str) -> str | None:
    """None when `pattern` compiles; else why not, with the position."""
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return str(exc)
    return None


def search(compiled: Any, text: str, *, exact: bool = False, seconds: float = SEARCH_SECONDS) -> Any:
    """The first match of `compiled` in `text` (the whole text when `exact`), or None. Raises
    `PatternError` when the search takes longer than `seconds`."""
    try:
        if exact:
            return compiled.fullmatch(text, timeout=seconds)
        return compiled.search(text, timeout=seconds)
    except TimeoutError:
        raise PatternError(f"pattern {_quoted(compiled.pattern)} did not finish within {seconds:g} s on a text of "
                           f"{len(text):,} characters (it backtracks catastrophically on this text)") from None


def _quoted(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 80 else pattern[:79] + "…")


__all__ = ["MAX_PATTERN_CHARS", "PatternError", "SEARCH_SECONDS", "compile_pattern", "pattern_problem", "search"]

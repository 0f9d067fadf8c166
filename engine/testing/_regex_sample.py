"""A short string a regular expression matches, for `engine.testing.schema_answers`.

Walks the parsed pattern (Python's own regex parser) taking, at each point, an
alternative (the first, else the next ones), the first character of a class and the fewest repeats; when the result is shorter
than a ``minLength`` it tries again with more repeats. Lookarounds, backreferences and
conditionals are not followed: the sample is then checked and may be None.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["sample_matching"]

_BRANCHES_TRIED = 4  # alternatives a|b|c tried: the n-th of each (the last when fewer)

_CATEGORY_CHARS = {"CATEGORY_DIGIT": "0", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_SPACE": " ",
                   "CATEGORY_NOT_SPACE": "a", "CATEGORY_WORD": "a", "CATEGORY_NOT_WORD": "-"}


def sample_matching(pattern: str, min_length: int = 0, max_length: int | None = None) -> str | None:
    """A string of `min_length` to `max_length` characters that ``re.search(pattern, …)``
    matches (JSON Schema's ``pattern`` is unanchored), or None when none is found this way."""
    try:
        parsed = _p.parse(pattern)
        compiled = re.compile(pattern)
    except (re.error, RecursionError):
        return None
    for extra in range(0, max(min_length, 0) + 1):
        for branch in range(_BRANCHES_TRIED):
            try:
                text = _emit(parsed, extra, branch)
            except _Unsupported:
                return None
            if len(text) < min_length and not _anchored_end(pattern):
                text += "a" * (min_length - len(text))
            fits = len(text) >= min_length and (max_length is None or len(text) <= max_length)
            if fits and compiled.search(text):
                return text
    return None


class _Unsupported(Exception):
    """A part of the pattern the sampler does not follow."""


def _anchored_end(pattern: str) -> bool:
    return pattern.endswith("$") or pattern.endswith(r"\Z")


def _emit(parsed: Any, extra: int, branch: int) -> str:
    """The text of a parsed (sub)pattern with the fewest repeats plus `extra` more of each
    unbounded or wide repeat, taking the `branch`-th alternative (or the last) of each choice."""
    out = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_class_char(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            count = low + extra if high == _c.MAXREPEAT else min(high, low + extra)
            out.append(_emit(body, extra, branch) * count)
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1], extra, branch))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(arg, extra, branch))
        elif name == "BRANCH":
            out.append(_emit(arg[1][min(branch, len(arg[1]) - 1)], extra, branch))
        elif name == "AT":
            continue
        else:
            raise _Unsupported(name)
    return "".join(out)


def _class_char(items: Any) -> str:
    """A character of a ``[...]`` class: its first literal, range start or category; for a
    negated class, a letter or digit it does not exclude."""
    if items and str(items[0][0]) == "NEGATE":
        excluded = re.compile("[" + "".join(_describe(op, arg) for op, arg in items[1:]) + "]")
        return next((ch for ch in "aA0 -_x" if not excluded.match(ch)), "\u00e9")
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    if name == "CATEGORY":
        return _CATEGORY_CHARS.get(str(arg), "a")
    raise _Unsupported(name)


def _describe(op: Any, arg: Any) -> str:
    """Class item back to regex text (for testing which characters a negated class excludes)."""
    name = str(op)
    if name == "LITERAL":
        return re.escape(chr(arg))
    if name == "RANGE":
        return f"{re.escape(chr(arg[0]))}-{re.escape(chr(arg[1]))}"
    if name == "CATEGORY":
        return {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
                "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}.get(str(arg), "")
    raise _Unsupported(name)

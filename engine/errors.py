"""Errors a spec author or a user can act on.

A `Problem` is one finding about a spec (data, not text); `SpecError` carries every problem
found in a file (or a directory) at once. Text is rendered only at the edge, as
``file:line:col: key.path: message (hint) [code]``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One problem in a spec.

    code: a stable identifier tests and tools match on (e.g. ``unknown-key``).
    file: the spec or template path as given; line/column are 1-based (0 when unknown).
    key_path: the dotted path to the offending key, e.g. ``stages[1].temperature``.
    """

    code: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    key_path: str = ""
    hint: str = ""

    def render(self) -> str:
        where = self.file or "<spec>"
        if self.line:
            where += f":{self.line}:{self.column or 1}"
        text = f"{where}: "
        if self.key_path:
            text += f"{self.key_path}: "
        text += self.message
        if self.hint:
            text += f" ({self.hint})"
        return f"{text} [{self.code}]"


class SpecError(Exception):
    """A spec (or several) failed to load; `problems` lists every finding, in file order."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: list[Problem] = sorted(
            problems, key=lambda p: (p.file, p.line, p.column, p.key_path, p.code)
        )
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)


class ScorerRunError(Exception):
    """Raised by the engine's internals when an item fails; turned into `ItemError` in results.

    kind: ``input`` (a missing required field), ``judge`` (no valid answer after the allowed
    re-asks), ``auth`` (the provider refused the credentials or the model's access: HTTP 401/403,
    not retried), ``truncated`` (the judge's answer was cut off by its token limit: never parsed,
    never a partial score), ``check`` (a stage check never passed), ``transport`` (the provider
    could not be reached after retries), ``expression`` (an expression raised), ``formula`` (NaN, infinite or
    out-of-range score), ``function`` (a rule function raised), ``target`` (the system under test
    raised), ``prompt_too_long`` (a prompt cannot fit the model's context window; no call was
    made, see `engine.window`).
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        stage: str | None = None,
        raw_answer: str | None = None,
        attempts: int = 0,
        usage: Any = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.stage = stage
        self.raw_answer = raw_answer
        self.attempts = attempts
        self.usage = usage  # an `engine.result.Usage` for the failed judge call, when known


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A hint naming the nearest candidate, or listing the valid ones; '' when none."""
    candidates = sorted(set(candidates))
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if candidates and len(candidates) <= 12:
        return "expected one of: " + ", ".join(candidates)
    return ""


@dataclass
class ProblemList:
    """Collects problems for one file with its position index."""

    file: str
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def add(self, code: str, key_path: str, message: str, hint: str = "", *, at: str | None = None) -> None:
        line, col = self.locate(at if at is not None else key_path)
        self.problems.append(Problem(code, message, self.file, line, col, key_path, hint))

    def locate(self, key_path: str) -> tuple[int, int]:
        """Line and column of the nearest indexed ancestor of `key_path`."""
        path = key_path
        while True:
            if path in self.positions:
                return self.positions[path]
            if not path:
                return (0, 0)
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""

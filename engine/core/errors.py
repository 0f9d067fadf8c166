"""Errors a spec author or a user can act on.

`UserError` is the base of every error whose message a user reads and can act on (a spec, a
data set, an option, a model string, a label, a price table, a report, a language, Ray, Phoenix,
OTLP, the store's version, a pattern): the command line prints its message and exits 2, and
prints anything else as an internal error. Each such class keeps its other base
(`ValueError`, `ImportError`, `ConnectionError`, …), so ``except ValueError`` still catches it.

A `Problem` is one finding about a spec (data, not text); `SpecError` carries every problem
found in a file (or a directory) at once. Text is rendered only at the edge, as
``file:line:col: key.path: message (hint) [code]`` — a warning as
``file:line:col: warning: message (hint) [code]``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

Severity = Literal["error", "warning"]
"""An error stops a spec from loading; a warning (``scorespec validate`` finds them: a field the
spec never reads) does not, unless ``validate --strict`` makes it one."""


@dataclass(frozen=True)
class Problem:
    """One problem in a spec.

    code: a stable identifier tests and tools match on (e.g. ``unknown-key``).
    file: the spec or template path as given; line/column are 1-based (0 when unknown).
    key_path: the dotted path to the offending key as the file holding the line writes it, e.g.
    ``stages[1].temperature`` (in a spec that extends another, the index within that file).
    severity: ``error`` (the default) or ``warning`` (`Severity`); a warning's message names
    what it is about, so its text leaves the key path out.
    """

    code: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    key_path: str = ""
    hint: str = ""
    severity: Severity = "error"

    def render(self) -> str:
        where = self.file or "<spec>"
        if self.line:
            where += f":{self.line}:{self.column or 1}"
        text = f"{where}: "
        if self.severity == "warning":
            text += "warning: "
        elif self.key_path:
            text += f"{self.key_path}: "
        text += self.message
        if self.hint:
            text += f" ({self.hint})"
        return f"{text} [{self.code}]"


class UserError(Exception):
    """An error the user can act on: bad input, a missing optional package, a server that cannot
    be reached. Its message says what is wrong and where (the file, line, key, item or flag); the
    command line prints it as ``error: MESSAGE`` and exits 2. A subclass also derives from the
    built-in error it has always been (``class DatasetError(UserError, ValueError)``)."""


class SpecError(UserError):
    """A spec (or several) failed to load; `problems` lists every finding, in file order."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: list[Problem] = sorted(
            problems, key=lambda p: (p.file, p.line, p.column, p.key_path, p.code)
        )
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)


ErrorKind = Literal[
    "input", "judge", "auth", "truncated", "content_filter", "check", "transport", "expression", "formula",
    "function", "target", "prompt_too_long", "unsupported", "not_found", "internal",
]
"""Why an item failed — a closed set:

- ``input``: a required field is missing, or empty where the scorer is given it (an input with no
  text), or a field cannot be read (messages, tool calls, a declared field failing its schema);
  no judge call was made;
- ``judge``: no valid answer after the allowed re-asks;
- ``auth``: the provider refused the credentials or the model's access (HTTP 401/403, not retried);
- ``truncated``: the answer was cut off by its token limit (never parsed, never a partial score);
- ``content_filter``: the provider's content filter stopped the answer (``finish_reason``
  ``content_filter``, Anthropic's ``stop_reason`` ``refusal``): never scored, even when what came
  back parses, and not asked again;
- ``check``: a stage check never passed;
- ``transport``: the provider could not be reached after retries;
- ``expression``: an expression or template raised;
- ``formula``: the score is NaN, infinite, not a number or outside [0, scale];
- ``function``: a rule function raised;
- ``target``: the system under test raised (batch runs with a target);
- ``prompt_too_long``: the prompt cannot fit the model's context window: found before the call
  (no call made; `engine.judge.window`), or the provider refused it as too long (an HTTP 400 saying
  so: ``context_length_exceeded``, "maximum context length", "prompt is too long"; not retried);
- ``unsupported``: the judge's server refused the structured-output mode's parameters (an HTTP
  400 naming ``tools``, ``tool_choice`` or ``response_format``): every call in that mode would be
  refused; not retried, and a batch run stops (`scorespec doctor` finds a mode that works);
- ``not_found``: the judge's server has no such path or model (HTTP 404: a ``--base-url`` without
  its ``/v1``, a misspelt model name): every call would fail the same way; not retried, and a batch
  run stops;
- ``internal``: a fault of the engine itself (a bug: please report it).
"""
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)


class ScorerRunError(Exception):
    """Raised by the engine's internals when an item fails; turned into `ItemError` in results.

    kind: one of `ErrorKind` (a `ValueError` for any other).
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        stage: str | None = None,
        raw_answer: str | None = None,
        attempts: int = 0,
        usage: Any = None,
    ):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}; expected one of {', '.join(ERROR_KINDS)}")
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.stage = stage
        self.raw_answer = raw_answer
        self.attempts = attempts
        self.usage = usage  # an `engine.core.result.Usage` for the failed judge call, when known


class LocalJudgeError(Exception):
    """The local judge cannot run: binding or model package missing, model file
    absent or corrupt, unknown model name, or a request it cannot serve."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A hint naming the nearest candidate, or listing the valid ones; '' when none."""
    candidates = sorted(set(candidates))
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if candidates and len(candidates) <= 12:
        return "expected one of: " + ", ".join(candidates)
    return ""

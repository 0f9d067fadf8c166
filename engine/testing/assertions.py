"""`assert_scores`: a scorer on a few cases inside a team's own pytest suite.

    from engine.testing import assert_scores

    def test_answers_stay_faithful():
        assert_scores("faithfulness", [
            {"id": "eiffel", "output": "The Eiffel Tower is in Paris.", "context": ["It stands in Paris."]},
            {"id": "made-up", "output": "It is in Rome.", "context": ["It stands in Paris."], "at_most": 0.2},
        ], at_least=0.8, model="openai/gpt-4o-mini")

Every case is scored (concurrently, with the judge-call cache on, so a
re-run of an unchanged case asks the judge nothing); the assertion fails when any case failed,
was not scorable (unless ``not_scorable_ok``), or scored outside its bounds, and its message
names each such case: its id, the score, the reason, the failure's stage, kind and message,
and every stage's answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.result import ScoreResult
from ..core.run_fields import RUN_FIELDS
from ..core.sync import run_sync

CASE_KEYS = ("id", "at_least", "at_most")
ANSWER_CHARS = 400


def assert_scores(scorer: Any, cases: Iterable[Mapping[str, Any]] | Mapping[Any, Mapping[str, Any]], *,
                  at_least: float | None = None, at_most: float | None = None, not_scorable_ok: bool = False,
                  model: str | None = None, cache: Any = True, concurrency: int = 4,
                  **load_options: Any) -> list[ScoreResult]:
    """Score `cases` with `scorer` and assert every result; returns the results, in case order.

    scorer: a `engine.interpret.scorer.Scorer`, or a spec id or path loaded with `engine.bind.load.load_scorer`
    (`model`, `cache` and `load_options` — ``judge=``, ``base_url=``, ``options=``, option
    shorthands — go to it; `cache`: True the default file, a path, or False). cases: dicts of run fields (``output``, ``input``,
    ``ground_truth``, ``context``) with an optional ``id`` (default: the 1-based position) and
    optional ``at_least`` / ``at_most`` overriding the bounds below for that case; or a mapping of
    id → such a dict. at_least / at_most: bounds every score must satisfy (inclusive, on the
    scorer's scale). not_scorable_ok: a not scorable case passes instead of failing.

    Raises `AssertionError` naming every case that failed, was not scorable or scored out of
    bounds; `ValueError` for an empty case list or a case with an unknown key.
    """
    __tracebackhide__ = True  # pytest shows the caller's line
    named = _named_cases(cases)
    loaded = _load(scorer, model, cache, load_options)
    results = run_sync(_score_all(loaded, named, concurrency), thread_name="scorespec-assert-scores")
    problems = []
    for (case_id, case), result in zip(named, results):
        low = case.get("at_least", at_least)
        high = case.get("at_most", at_most)
        problem = _problem(result, low, high, not_scorable_ok)
        if problem:
            problems.append(_describe(case_id, problem, result))
    if problems:
        bounds = ", ".join(f"{k}={v}" for k, v in (("at_least", at_least), ("at_most", at_most)) if v is not None)
        raise AssertionError(f"{len(problems)} of {len(named)} case(s) of {loaded.label}"
                             + (f" ({bounds})" if bounds else "") + " did not pass:\n\n" + "\n\n".join(problems))
    return results


def _named_cases(cases: Iterable[Mapping[str, Any]] | Mapping[Any, Mapping[str, Any]]) -> list[tuple[str, dict]]:
    if isinstance(cases, Mapping):
        pairs = [(str(k), dict(v)) for k, v in cases.items()]
    else:
        pairs = [(str(c.get("id", i)), dict(c)) for i, c in enumerate(cases, 1)]
    if not pairs:
        raise ValueError("assert_scores: no cases given")
    for case_id, case in pairs:
        unknown = [k for k in case if k not in RUN_FIELDS and k not in CASE_KEYS]
        if unknown:
            raise ValueError(f"assert_scores: case {case_id!r} has unknown key(s) {', '.join(map(repr, unknown))} "
                             f"(a case takes {', '.join(RUN_FIELDS + CASE_KEYS)})")
    return pairs


def _load(scorer: Any, model: str | None, cache: Any, load_options: dict[str, Any]) -> Any:
    if not isinstance(scorer, (str, Path)):
        if model is not None or load_options:
            raise ValueError("assert_scores: model= and load options apply only to a spec id or path, not to a Scorer")
        return scorer
    from ..bind.load import load_scorer

    return load_scorer(str(scorer), model=model, cache=cache, **load_options)


async def _score_all(scorer: Any, cases: list[tuple[str, dict]], concurrency: int) -> list[ScoreResult]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: dict) -> ScoreResult:
        async with gate:
            return await scorer.arun(**{k: v for k, v in case.items() if k in RUN_FIELDS})

    try:
        return list(await asyncio.gather(*(one(case) for _, case in cases)))
    finally:
        close = getattr(scorer, "aclose", None)
        if close is not None:
            await close()


def _problem(result: ScoreResult, low: float | None, high: float | None, not_scorable_ok: bool) -> str | None:
    if result.error is not None:
        e = result.error
        return f"failed{f' at stage {e.stage}' if e.stage else ''} ({e.kind}): {e.message}"
    if result.not_scorable is not None:
        return None if not_scorable_ok else f"not scorable: {result.not_scorable.reason}"
    score = result.score
    shown = "none" if score is None else f"{score:g}"
    if low is not None and (score is None or score < low):
        return f"score {shown} is below at_least={low:g}"
    if high is not None and (score is None or score > high):
        return f"score {shown} is above at_most={high:g}"
    return None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS - 1] + "…"


def _describe(case_id: str, problem: str, result: ScoreResult) -> str:
    lines = [f"case {case_id}: {problem}"]
    if result.score is not None and not problem.startswith("score"):
        lines.append(f"  score: {result.score:g}")
    if result.reason:
        lines.append(f"  reason: {_short(result.reason)}")
    for stage, record in result.stages.items():
        if record.skipped:
            lines.append(f"  stage {stage}: skipped")
        elif record.result is not None:
            lines.append(f"  stage {stage}: {_short(record.result)}")
    if result.error is not None and result.error.raw_answer:
        lines.append(f"  last raw answer: {_short(result.error.raw_answer)}")
    return "\n".join(lines)


__all__ = ["assert_scores"]

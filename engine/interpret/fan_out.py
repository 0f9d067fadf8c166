"""Questions asked together: the elements of a `for_each` stage as one fan-out.

The interpreter (`engine.interpret.scorer`) is a generator that yields `JudgeCall`s and receives
`JudgeAnswer`s. A `for_each` stage yields one `FanOut` instead: a generator per element, each
yielding that element's calls (a re-ask stays inside one call; the samples of a sampled question
come one after another) and returning the element's answer. The driver sends back one `Outcome`
per element, in order.

- `drive` (asyncio) asks up to `limit` elements at once: the judge's ``parallel_calls`` (the
  embedded judge's slots; 1, one element after another, for other judges). With ``lead_alone``
  the first element is asked alone before the others, so a judge with a prompt cache reads the
  prefix the elements share (instructions and context) once, and the others reuse it.
- Elements start in order. Once one fails no further element starts; those in flight finish.
  So every element before the first failed one has an outcome, as when asked one by one.
- `drive_sync` drives a generator without an event loop, asking each element in turn (what
  `Scorer.render` needs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ScorerRunError
from ..judge.call import JudgeAnswer, JudgeCall

__all__ = ["FanOut", "Outcome", "drive", "drive_part", "drive_sync", "parallel_calls"]

Part = Generator[JudgeCall, JudgeAnswer, Any]


@dataclass
class FanOut:
    """Elements to ask together: one generator per element (see the module)."""

    parts: list[Part]


@dataclass
class Outcome:
    """What became of one element: its `value`, or the `error` that failed it; `started` is
    False for an element never asked (one before it failed)."""

    value: Any = None
    error: ScorerRunError | None = None
    started: bool = False


@dataclass
class _Run:
    outcomes: list[Outcome] = field(default_factory=list)
    failed: bool = False


def parallel_calls(judge: Any) -> tuple[int, bool]:
    """(calls the judge serves at once, whether a fan-out's first element goes alone): its
    provider's ``parallel_calls`` and ``lead_alone`` (`engine.judge.call.JudgeLayer.provider`),
    else (1, False)."""
    provider = getattr(judge, "provider", judge)
    limit = getattr(provider, "parallel_calls", 1)
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1 else 1
    return limit, bool(getattr(provider, "lead_alone", False))


Ask = Callable[[JudgeCall], Awaitable[JudgeAnswer]]


async def drive_part(part: Part, ask: Ask) -> Any:
    """Run one generator (an element's, or a scorer's whole interpreter) to its end: each request
    it yields is asked with `ask` (which raises `ScorerRunError` for a failed call, thrown into the
    generator). Returns its value; raises what it raises."""
    try:
        call = next(part)
        while True:
            try:
                answer = await ask(call)
            except ScorerRunError as exc:
                call = part.throw(exc)
                continue
            call = part.send(answer)
    except StopIteration as stop:
        return stop.value


async def drive(fan: FanOut, ask: Ask, limit: int = 1, lead_alone: bool = False) -> list[Outcome]:
    """The outcome of each element of `fan`, asking up to `limit` at once (see the module)."""
    run = _Run([Outcome() for _ in fan.parts])
    gate = asyncio.Semaphore(max(1, limit))

    async def element(index: int) -> None:
        async with gate:  # a FIFO: elements start in order
            part = fan.parts[index]
            if run.failed:
                part.close()
                return
            outcome = run.outcomes[index]
            outcome.started = True
            try:
                outcome.value = await drive_part(part, ask)
            except ScorerRunError as exc:
                outcome.error = exc
                run.failed = True

    first = 0
    if lead_alone and limit > 1 and len(fan.parts) > 1:
        await element(0)
        first = 1
    if limit == 1:
        for index in range(first, len(fan.parts)):
            await element(index)
    else:
        await asyncio.gather(*(element(index) for index in range(first, len(fan.parts))))
    return run.outcomes


def drive_sync(gen: Generator[Any, Any, Any], answer: Callable[[JudgeCall], JudgeAnswer]) -> Any:
    """Run the interpreter's generator `gen` without an event loop: each call is answered by
    `answer` (which may raise `ScorerRunError`, thrown into the generator, or anything else,
    which ends the drive), a fan-out's elements one after another. Returns the generator's
    value."""
    try:
        request = next(gen)
        while True:
            if isinstance(request, FanOut):
                request = gen.send(_fan_out_sync(request, answer))
                continue
            try:
                reply = answer(request)
            except ScorerRunError as exc:
                request = gen.throw(exc)
                continue
            request = gen.send(reply)
    except StopIteration as stop:
        return stop.value


def _fan_out_sync(fan: FanOut, answer: Callable[[JudgeCall], JudgeAnswer]) -> list[Outcome]:
    outcomes = [Outcome() for _ in fan.parts]
    for part, outcome in zip(fan.parts, outcomes):
        outcome.started = True
        try:
            outcome.value = drive_sync(part, answer)
        except ScorerRunError as exc:
            outcome.error = exc
            break
    return outcomes

"""Where a run's items are scored: the `Executor` protocol and the local executor.

`engine.run.evals.arun_evals` builds the run around an executor — scorers, thresholds, the
store's run, resuming, the summary — and hands it one attempt as an `engine.run.attempt.Attempt`
(what it works with, where results go, what it reads). `LocalExecutor` scores the items in this
process (`engine.run.runner.Runner`); `engine.ray.runner.RayExecutor` implements the same
protocol on a Ray cluster (this package does not import it: `engine.api` resolves
``executor="ray"``).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from .attempt import Attempt
from .datasets import iter_items
from .items import DatasetProblem, Item
from .runner import Runner
from .settings import RunSettings

__all__ = ["Executor", "LocalExecutor", "executor_of"]


@runtime_checkable
class Executor(Protocol):
    """Scores a run's items somewhere. `name`: how the store records it (``"local"``, ``"ray"``).
    `check(settings)` raises `ValueError` for settings this executor cannot honour, before
    anything runs. `prepare(attempt)` is called before the run is recorded (so data unusable
    as a whole fails first) and returns the coroutine function that scores every item not done
    yet and returns whether a result of the earlier attempts was replaced."""

    name: str

    def check(self, settings: RunSettings) -> None: ...

    def prepare(self, attempt: Attempt) -> Callable[[], Awaitable[bool]]: ...


class LocalExecutor:
    """Items scored in this process by `engine.run.runner.Runner`, ``concurrency`` at once."""

    name = "local"

    def check(self, settings: RunSettings) -> None:
        if settings.ray is not None:
            raise ValueError("ray settings are for executor='ray'")

    def prepare(self, attempt: Attempt) -> Callable[[], Awaitable[bool]]:
        source = attempt.source
        items = _items(source.data, dict(source.fields), source.on_problem)
        if source.limit is not None:  # the first `limit` readable items, in the data's order
            items = itertools.islice(items, source.limit)

        async def run() -> bool:
            runner = Runner(attempt.context, attempt.to)
            await runner.run(items)
            return runner.rewrote

        return run


def executor_of(settings: RunSettings) -> Executor:
    """The executor `settings` name: `LocalExecutor` for None or ``"local"``, an `Executor`
    object as it is. Raises `ValueError` for another name (``"ray"`` is resolved by the facade,
    `engine.api`, or given as `engine.ray.runner.RayExecutor`) and what the executor's `check`
    raises."""
    chosen = settings.executor
    if chosen is None or chosen == "local":
        executor: Executor = LocalExecutor()
    elif isinstance(chosen, str):
        if chosen == "ray":
            raise ValueError("executor='ray' is resolved by engine.run_evals (engine.api); engine.run.evals takes "
                             "the executor object, engine.ray.runner.RayExecutor")
        raise ValueError(f"executor must be 'local' or 'ray', not {chosen!r}")
    elif isinstance(chosen, Executor):
        executor = chosen
    else:
        raise ValueError(f"executor: expected 'local', 'ray' or an Executor, not {type(chosen).__name__}")
    executor.check(settings)
    return executor


def _items(data: Any, field_map: dict[str, str], on_problem: Callable[[DatasetProblem], None]) -> Iterator[Item]:
    """The dataset's items, unreadable records told to `on_problem`. A file unusable as a whole
    fails here, before the run is recorded."""
    items = iter_items(data, field_map, on_problem)
    first = next(items, None)
    return itertools.chain([first], items) if first is not None else items

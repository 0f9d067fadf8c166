"""`engine.core.sync.run_sync`: the synchronous entry points (`Scorer.run`, `run_evals`, `calibrate`)
inside and outside a running event loop, values and exceptions alike."""

from __future__ import annotations

import asyncio
import threading

import pytest

from engine import calibrate, load_scorer, run_evals
from engine.core.sync import run_sync
from engine.run.items import DatasetError
from engine.testing import FakeJudge


class Boom(Exception):
    pass


class Interrupt(BaseException):
    """Not an `Exception`: the scorer's judge handling does not turn it into a failed item."""


async def _thread_name() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


async def _raise(exc: BaseException) -> None:
    await asyncio.sleep(0)
    raise exc


def test_outside_a_loop_the_coroutine_runs_in_this_thread():
    assert run_sync(_thread_name()) == threading.current_thread().name


def test_inside_a_running_loop_the_coroutine_runs_in_a_named_worker_thread():
    async def main() -> str:
        return run_sync(_thread_name(), thread_name="worker-x")

    assert asyncio.run(main()) == "worker-x"


@pytest.mark.parametrize("exc", [Boom("the judge caught fire"), KeyError("claims"), Interrupt("stop now")])
def test_the_threads_exception_reaches_the_caller_with_its_type_and_message(exc):
    async def main() -> None:
        run_sync(_raise(exc))

    with pytest.raises(type(exc)) as caught:
        asyncio.run(main())
    assert caught.value is exc and str(caught.value) == str(exc)


def test_outside_a_loop_the_exception_is_the_coroutines_too():
    with pytest.raises(Boom, match="^plain$"):
        run_sync(_raise(Boom("plain")))


class _ClosingFails(FakeJudge):
    async def aclose(self) -> None:
        raise Boom("could not close the judge's connections")


def _verdicts(call):
    return {"verdict": "yes", "reason": "stated"}


def test_scorer_run_inside_a_running_loop_scores():
    judge = FakeJudge({"preprocess": {"claims": ["Paris is in France."]}, "analyze": _verdicts})
    scorer = load_scorer("faithfulness", judge=judge, options={"context": ["Paris is in France."]})

    async def main():
        return scorer.run(output="Paris is in France.")

    result = asyncio.run(main())
    assert (result.status, result.score) == ("scored", 1.0)


def test_scorer_run_inside_a_running_loop_raises_the_threads_exception():
    judge = _ClosingFails({"preprocess": {"claims": ["a"]}, "analyze": _verdicts})
    scorer = load_scorer("faithfulness", judge=judge, options={"context": ["a"]})

    async def main():
        return scorer.run(output="a")

    with pytest.raises(Boom, match="^could not close the judge's connections$"):
        asyncio.run(main())


def test_scorer_run_inside_a_running_loop_raises_a_base_exception_from_the_judge():
    scorer = load_scorer("faithfulness", judge=FakeJudge({"preprocess": Interrupt("user stop")}),
                         options={"context": ["a"]})

    async def main():
        return scorer.run(output="a")

    with pytest.raises(Interrupt, match="^user stop$"):
        asyncio.run(main())


def test_run_evals_and_calibrate_inside_a_running_loop_raise_their_errors(tmp_path):
    missing = tmp_path / "nope.jsonl"

    async def evals():
        return run_evals(str(missing), ["textual_difference"], store=False)

    async def calib():
        return calibrate("textual_difference", [{"output": "a", "input": "a"}], label_field="grade", store=False)

    with pytest.raises(DatasetError, match="nope.jsonl: no such file$"):
        asyncio.run(evals())
    with pytest.raises(ValueError, match="no item has a usable label in 'grade'"):
        asyncio.run(calib())

"""What a run's progress counts: a failed judge call is no judge answer (it is counted apart), and
a stage's seconds include the waits between transport retries."""

from __future__ import annotations

import asyncio

from engine.cli.output import ConsoleReporter
from engine.core.result import Usage
from engine.judge.call import JudgeAnswer, JudgeCall, TransportFailure
from engine.judge.contract import AnswerContract
from engine.judge.retries import RetryingJudge, RetryPolicy
from engine.run.reporting import RunState, StderrReporter
from engine.run.summary import ScorerStats


def _state() -> RunState:
    return RunState("r1", ["faithfulness"], {"faithfulness": ScorerStats("faithfulness")}, total=6, out=None,
                    store=None)


def test_a_failed_judge_call_is_counted_apart_from_the_answers():
    run = _state()
    run.answers, run.failed_calls = 7, 2
    assert StderrReporter._line(run) == ("0/6 item(s) done · 7 judge answer(s) · 2 failed judge call(s) · "
                                         "faithfulness —")
    run.answers, run.failed_calls = 1, 1
    assert ConsoleReporter(quiet=True)._means(run) == "1 judge answer · 1 failed judge call · faithfulness —"


def test_the_runner_does_not_count_a_failed_call_as_an_answer():
    from engine.run.runner import Runner as RunnerClass  # the hook the judge stack calls per answer

    counted = RunnerClass.__new__(RunnerClass)
    counted.state, counted.reporter, counted.opened = _state(), StderrReporter(), asyncio.Event()
    answer = JudgeAnswer({"verdict": "yes"}, "{}", usage=Usage(calls=1))
    counted._answered(None, answer)
    counted._answered(None, None)
    assert (counted.state.answers, counted.state.failed_calls) == (1, 1)


class _Flaky:
    def __init__(self, failures: int):
        self.failures = failures

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        if self.failures:
            self.failures -= 1
            raise TransportFailure("HTTP 503", retry_after=2.5, usage=Usage(calls=1, seconds=0.25))
        return JudgeAnswer({"verdict": "yes"}, "{}", usage=Usage(calls=1, seconds=0.5))


def test_a_stages_seconds_include_the_waits_between_retries():
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    judge = RetryingJudge(_Flaky(2), RetryPolicy(max_retries=3), sleep=record)
    call = JudgeCall("s", [{"role": "user", "content": "q"}], AnswerContract({"type": "object"}))
    answer = asyncio.run(judge.ask(call))
    assert waits == [2.5, 2.5]  # the server's Retry-After, twice
    assert answer.usage.seconds == 0.25 + 0.25 + 2.5 + 2.5 + 0.5 and answer.usage.transport_retries == 2

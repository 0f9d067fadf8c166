"""A `for_each` stage's elements asked together (`engine.interpret.fan_out`), claims said twice judged once,
a judge copying the prompt's example re-asked, and progress per judge answer (issue 23)."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine import load_scorer
from engine.core.errors import ScorerRunError
from engine.core.result import Usage
from engine.judge.call import JudgeAnswer, JudgeCall
from engine import run_evals
from engine.run.reporting import EvalReporter
from engine.testing import FakeJudge


def claim_of(call: JudgeCall) -> str:
    return call.messages[-1]["content"].split("CLAIM:\n<<<\n", 1)[1].split("\n>>>", 1)[0]


class SlotJudge:
    """A judge serving `parallel_calls` calls at once (as the embedded judge's slots): each
    answer takes `delay` seconds; it records the calls in flight over time. Claims listed in
    `fail` fail their call; `verdicts` maps a claim to its verdict (default yes)."""

    model = "fake/slots"

    def __init__(self, claims_by_output: dict[str, list[str]], *, parallel_calls: int = 1, lead_alone: bool = False,
                 delay: float = 0.02, fail: tuple[str, ...] = (), verdicts: dict[str, str] | None = None):
        self.claims_by_output = claims_by_output
        self.parallel_calls = parallel_calls
        self.lead_alone = lead_alone
        self.delay = delay
        self.fail = fail
        self.verdicts = verdicts or {}
        self.in_flight: list[str] = []
        self.peak = 0
        self.started: list[str] = []  # claims, in the order their calls started
        self.overlaps: list[tuple[str, ...]] = []  # what was in flight whenever a call started

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        if call.stage == "preprocess":
            text = call.messages[-1]["content"].split("TEXT:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
            return JudgeAnswer({"claims": self.claims_by_output[text]}, "", 1, Usage(calls=1))
        claim = claim_of(call)
        self.started.append(claim)
        self.in_flight.append(claim)
        self.overlaps.append(tuple(self.in_flight))
        self.peak = max(self.peak, len(self.in_flight))
        try:
            await asyncio.sleep(0 if claim in self.fail else self.delay)  # a failure comes at once
            if claim in self.fail:
                raise ScorerRunError("judge", f"no answer for {claim!r}", stage=call.stage, usage=Usage(calls=1))
            return JudgeAnswer({"verdict": self.verdicts.get(claim, "yes"), "reason": "r"}, "", 1, Usage(calls=1))
        finally:
            self.in_flight.remove(claim)


CLAIMS = ["A.", "B.", "C.", "D.", "E."]


def score(judge, output="A. B. C. D. E."):
    scorer = load_scorer("faithfulness", judge=judge)
    return asyncio.run(scorer.arun(output=output, context=["A, B, C, D and E."]))


def test_a_judge_of_one_call_at_a_time_is_asked_element_by_element():
    judge = SlotJudge({"A. B. C. D. E.": CLAIMS})
    result = score(judge)
    assert judge.peak == 1
    assert judge.started == CLAIMS
    assert result.score == 1


def test_elements_are_asked_as_many_at_once_as_the_judge_serves_and_kept_in_order():
    judge = SlotJudge({"A. B. C. D. E.": CLAIMS}, parallel_calls=3,
                      verdicts={"A.": "yes", "B.": "no", "C.": "unsure", "D.": "no", "E.": "yes"})
    result = score(judge)
    assert judge.peak == 3
    assert judge.started == CLAIMS  # started in order
    assert [v["verdict"] for v in result.analyze_step_result] == ["yes", "no", "unsure", "no", "yes"]
    assert result.score == 0.4
    prompts = result.stages["analyze"].prompt
    assert [prompts.index(f"[{i}]\n") for i in range(5)] == sorted(prompts.index(f"[{i}]\n") for i in range(5))
    assert result.stages["analyze"].usage.calls == 5
    assert json.loads(result.stages["analyze"].raw_answer) == ["", "", "", "", ""]


def test_the_first_element_goes_alone_when_the_judge_asks_for_it():
    judge = SlotJudge({"A. B. C. D. E.": CLAIMS}, parallel_calls=3, lead_alone=True)
    score(judge)
    assert judge.overlaps[0] == ("A.",)  # alone: the shared prefix is read once
    assert judge.overlaps[1] == ("B.",)  # A ended before B started
    assert judge.peak == 3


def test_a_failed_element_fails_the_item_and_no_later_element_starts():
    judge = SlotJudge({"A. B. C. D. E.": CLAIMS}, parallel_calls=2, fail=("B.",))
    result = score(judge)
    assert result.status == "failed"
    assert (result.error.stage, result.error.kind) == ("analyze", "judge")
    assert result.error.message.startswith("element 1: no answer for 'B.'")
    assert judge.started == ["A.", "B."]  # A, in flight beside B, finished; C, D and E never started
    assert result.stages["analyze"].usage.calls == 2
    assert result.stages["analyze"].prompt.count("CLAIM:") == 2


def test_claims_of_several_items_are_in_flight_together():
    outputs = {"A. B.": ["A.", "B."], "C. D.": ["C.", "D."]}
    judge = SlotJudge(outputs, parallel_calls=2, delay=0.05)
    scorer = load_scorer("faithfulness", judge=judge)
    items = [{"id": str(i), "output": text, "context": ["A, B, C and D."]} for i, text in enumerate(outputs)]
    summary = run_evals(items, [scorer], concurrency=2, store=False)
    assert summary.scorers["faithfulness"].scored == 2
    assert judge.peak >= 3  # the claims of both items at once (each item 2 at a time)
    assert any({"A.", "C."} <= set(o) or {"B.", "D."} <= set(o) or {"A.", "D."} <= set(o) or {"B.", "C."} <= set(o)
               for o in judge.overlaps)


def test_render_still_shows_every_element_prompt():
    scorer = load_scorer("faithfulness", judge=FakeJudge({}))
    shown = scorer.render(output="A. B.", context=["A."],
                          answers={"preprocess": {"claims": ["A.", "B."]},
                                   "analyze": {"verdict": "yes", "reason": "r"}})
    assert [stage for stage, _ in shown] == ["preprocess", "analyze", "analyze"]
    assert "CLAIM:\n<<<\nB.\n>>>" in shown[2][1]


# --- the same claim twice, and the prompt's example copied ----------------------------------------


def test_a_claim_said_twice_is_judged_and_counted_once():
    judge = FakeJudge({"preprocess": {"claims": ["The sky is blue.", "the  sky is BLUE. ", "Grass is green.",
                                                 "The sky is blue."]},
                       "analyze": [{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]})
    scorer = load_scorer("faithfulness", judge=judge)
    result = scorer.run(output="The sky is blue. Grass is green.", context=["The sky is blue; grass is red."])
    assert result.preprocess_step_result == ["The sky is blue.", "Grass is green."]
    assert len(judge.prompts("analyze")) == 2
    assert result.score == 0.5
    assert result.reason.count('"The sky is blue."') == 1


EXAMPLE = ["The city library opened in 1921.", "The speaker thinks the city library is the best library in town."]


def test_the_extract_prompt_shows_the_example_claims_the_check_knows():
    scorer = load_scorer("faithfulness", judge=FakeJudge({}))
    (_, prompt), = scorer.render(output="x", context=["y"])
    assert json.dumps({"claims": EXAMPLE}) in prompt  # the spec's example_claims, word for word


def test_a_judge_that_copies_the_example_is_asked_again():
    judge = FakeJudge({"preprocess": [{"claims": [EXAMPLE[0]] * 25},
                                      {"claims": ["Nickelback sold 50 million albums."]}],
                       "analyze": {"verdict": "yes", "reason": "r"}})
    scorer = load_scorer("faithfulness", judge=judge)
    result = scorer.run(output="Nickelback sold 50 million albums!", context=["Nickelback sold 50 million albums."])
    assert result.status == "scored"
    assert result.stages["preprocess"].attempts == 2
    assert "repeats the example of the instructions" in judge.calls[1].messages[-1]["content"]
    assert result.preprocess_step_result == ["Nickelback sold 50 million albums."]


def test_a_judge_that_keeps_copying_the_example_fails_the_item():
    judge = FakeJudge({"preprocess": {"claims": [" the city library  opened in 1921."]}})
    result = load_scorer("faithfulness", judge=judge).run(output="Nickelback sold 50 million albums!",
                                                          context=["Nickelback sold 50 million albums."])
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "check", "preprocess")
    assert result.score is None
    assert len(judge.calls) == 3  # asked, then re-asked twice (max_reasks)


def test_an_output_that_says_the_example_itself_keeps_its_claim():
    judge = FakeJudge({"preprocess": {"claims": [EXAMPLE[0]]}, "analyze": {"verdict": "yes", "reason": "r"}})
    result = load_scorer("faithfulness", judge=judge).run(output="The city library opened in 1921.",
                                                          context=["It opened in 1921."])
    assert result.status == "scored" and result.stages["preprocess"].attempts == 1


@pytest.mark.parametrize(("values", "kept"), [
    (["a b", "A  B", " a b ", "c"], ["a b", "c"]),
    ([1, 1.0, "1", {"k": [1]}, {"k": [1]}], [1, 1.0, "1", {"k": [1]}]),
    ([], []),
])
def test_distinct_folds_case_and_spacing(values, kept):
    from engine.spec.expressions import _distinct

    assert _distinct(values) == kept


# --- progress per judge answer ----------------------------------------------------------------------


class Recorder(EvalReporter):
    def __init__(self):
        self.events: list[tuple[str, int, int]] = []
        self.answers = self.cached = 0

    def judge_answered(self, run):
        self.events.append(("answer", run.answers, run.done_items))
        self.answers, self.cached = run.answers, run.cached_answers

    def item_done(self, run, item, results):
        self.events.append(("item", run.answers, run.done_items))


def test_a_run_reports_each_judge_answer_before_its_item_ends():
    judge = FakeJudge({"preprocess": {"claims": ["A.", "B.", "C."]}, "analyze": {"verdict": "yes", "reason": "r"}})
    scorer = load_scorer("faithfulness", judge=judge)
    reporter = Recorder()
    items = [{"id": "1", "output": "A. B. C.", "context": ["A."]}, {"id": "2", "output": "A. B. C.", "context": ["A."]}]
    run_evals(items, [scorer], concurrency=1, store=False, progress=reporter)
    assert reporter.events == [("answer", 1, 0), ("answer", 2, 0), ("answer", 3, 0), ("answer", 4, 0),
                               ("item", 4, 1),
                               ("answer", 5, 1), ("answer", 6, 1), ("answer", 7, 1), ("answer", 8, 1),
                               ("item", 8, 2)]


def test_the_plain_progress_line_counts_judge_answers():
    from engine.run.reporting import RunState, StderrReporter
    from engine.run.summary import ScorerStats

    run = RunState("r1", ["faithfulness"], {"faithfulness": ScorerStats("faithfulness")}, total=6, out=None, store=None)
    run.answers = 7
    assert StderrReporter._line(run) == "0/6 item(s) done · 7 judge answer(s) · faithfulness —"


def test_the_progress_counts_answers_from_the_cache_apart():
    from engine.cli.output import ConsoleReporter
    from engine.run.reporting import RunState, StderrReporter
    from engine.run.summary import ScorerStats

    run = RunState("r1", ["faithfulness"], {"faithfulness": ScorerStats("faithfulness")}, total=6, out=None, store=None)
    run.answers, run.cached_answers = 15, 15
    assert StderrReporter._line(run) == "0/6 item(s) done · 15 judge answer(s) (15 from the cache) · faithfulness —"
    assert ConsoleReporter(quiet=True)._means(run) == "15 judge answers (15 from the cache) · faithfulness —"
    run.cached_answers = 0
    assert ConsoleReporter(quiet=True)._means(run) == "15 judge answers · faithfulness —"


def test_a_run_counts_the_answers_its_cache_gave(fake_server, tmp_path):
    from engine.testing.schema_answers import schema_reply

    fake_server.reply = schema_reply
    items = [{"id": str(i), "output": f"Answer {i}.", "input": f"Question {i}?"} for i in range(3)]

    def state_after() -> tuple[int, int]:
        reporter = Recorder()
        scorer = load_scorer("answer_relevancy", model="openai/x", base_url=fake_server.base_url, api_key="t",
                             cache=tmp_path / "cache.sqlite")
        run_evals(items, [scorer], store=False, progress=reporter)
        return reporter.answers, reporter.cached

    asked = state_after()
    assert asked[0] > 0 and asked[1] == 0
    assert state_after() == (asked[0], asked[0])  # every answer of the second run from the cache

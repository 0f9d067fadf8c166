"""Batch evaluation: run_evals / scorespec eval — failure isolation (C18), statistics, thresholds,
concurrency, targets, streaming, and nothing lost (out file + store, resume after a kill)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval, runs, show)
from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.cli.main import app
from engine.judge.rate_limit import RateLimiter
from engine import run_evals
from engine.run.evals import arun_evals
from engine.run.summary import Threshold
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

SPECS = Path(__file__).resolve().parent / "specs"
NUMERIC = str(SPECS / "numeric.yaml")  # rule-only: score = the output read as a number
CLAIMS = str(SPECS / "claims.yaml")    # one prompt stage: score = claims extracted / 4


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.chdir(tmp_path)


def http_judge(server: FakeOpenAIServer):
    return make_judge("openai/test-model", base_url=server.base_url, api_key="test",
                      retry=RetryPolicy(max_retries=2, base_s=0.01))


def marker(request: dict) -> str:
    """The ITEM-n marker of the item a judge request is about."""
    text = " ".join(m["content"] for m in request["messages"] if isinstance(m.get("content"), str))
    start = text.find("ITEM-")
    return text[start:start + 7].rstrip(":. ") if start >= 0 else ""


def faithfulness_reply(failing: set[str] = frozenset(), half: set[str] = frozenset()):
    """A fake provider for faithfulness: 2 claims per item, both supported (items in `half`:
    the first only), HTTP 500 on every call for items in `failing`. Each verify call is about
    one claim."""

    def reply(request: dict):
        item = marker(request)
        if item in failing:
            return Fault.status(500)
        stage = request["tools"][0]["function"]["name"]
        if stage == "preprocess":
            return {"claims": [f"{item}: the sky is blue", f"{item}: grass is green"]}
        if stage == "analyze":
            second = "grass is green\n>>>" in request["messages"][-1]["content"]
            return {"verdict": "no" if second and item in half else "yes", "reason": "checked"}
        return {"reason": f"{item} explained"}

    return reply


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def store_rows(path: Path, run_id: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute("SELECT item_id, scorer_id, status, score FROM results WHERE run_id=?", (run_id,)))
    finally:
        db.close()


# --- C18: failure isolation, through the real HTTP path ------------------------------------------


def test_a_failing_item_never_stops_the_others(tmp_path):
    """Field case C18 (shared/cases/handed.md)."""
    data = [{"id": i, "output": f"ITEM-{i}: the sky is blue and grass is green.",
             "context": "The sky is blue. Grass is green."} for i in (1, 2, 3)]
    seen: dict = {}
    with FakeOpenAIServer(faithfulness_reply(failing={"ITEM-2"}, half={"ITEM-3"})) as server:
        scorer = load_scorer("faithfulness", judge=http_judge(server))
        summary = run_evals(data, [scorer], concurrency=3, out=tmp_path / "out.jsonl",
                            on_item_complete=lambda item, results: seen.update({item["id"]: results}))
        item2_requests = sum(1 for r in server.requests if marker(r) == "ITEM-2")
    s = summary.scorers["faithfulness"]
    assert (s.scored, s.not_scorable, s.failed) == (2, 0, 1)
    assert (s.mean, s.min, s.median, s.max) == (0.75, 0.5, 0.75, 1.0)  # over items 1 and 3 only
    assert summary.scores == {"faithfulness": 0.75}
    assert summary.verdict == "errors" and summary.exit_code == 2
    assert seen[1]["faithfulness"].score == 1.0 and seen[3]["faithfulness"].score == 0.5
    error = seen[2]["faithfulness"].error
    assert (error.kind, error.stage) == ("transport", "preprocess")
    assert seen[2]["faithfulness"].score is None
    assert item2_requests == 3  # the first try and 2 transport retries, then the item fails alone
    lines = lines_of(tmp_path / "out.jsonl")
    assert sorted((line["id"], line["scorer"], line["score"]) for line in lines) == [
        (1, "faithfulness", 1.0), (2, "faithfulness", None), (3, "faithfulness", 0.5)]
    assert all(line["runId"] == summary.run_id for line in lines)
    assert next(line for line in lines if line["id"] == 2)["error"]["kind"] == "transport"
    assert store_rows(tmp_path / "store.sqlite", summary.run_id) == [
        ("1", "faithfulness", "scored", 1.0), ("2", "faithfulness", "failed", None),
        ("3", "faithfulness", "scored", 0.5)]


# --- statistics and thresholds ---------------------------------------------------------------------


def numeric_items(*outputs):
    return [{"output": o} for o in outputs]


def test_summary_statistics_are_values_over_scored_items_only():
    summary = run_evals(numeric_items("0.7", "0.9", "n/a", "0.2", None, "1.5"), [NUMERIC], store=False)
    s = summary.scorers["numeric"]
    assert (s.scored, s.not_scorable, s.failed) == (3, 1, 2)
    assert (s.mean, s.min, s.median, s.max) == (0.6, 0.2, 0.7, 0.9)
    assert summary.items == 6 and summary.verdict == "errors"


def test_means_are_exact_on_decimal_scores_and_never_nan():
    # 0.7 and 0.9 average to exactly 0.8 (a float sum would give 0.7999999999999999)
    summary = run_evals(numeric_items("0.7", "0.9"), [NUMERIC], thresholds={"numeric": 0.8}, store=False)
    assert summary.scorers["numeric"].mean == 0.8 and summary.scorers["numeric"].median == 0.8
    assert summary.verdict == "passed"
    empty = run_evals(numeric_items("n/a", "n/a"), [NUMERIC], thresholds={"numeric": 0.1}, store=False)
    s = empty.scorers["numeric"]
    assert (s.mean, s.min, s.median, s.max, s.threshold_met) == (None, None, None, None, False)
    assert empty.verdict == "below_threshold"
    assert json.loads(json.dumps(empty.to_json_dict(), allow_nan=False))["scores"] == {"numeric": None}


@pytest.mark.parametrize("threshold, verdict", [
    (0.5, "passed"), (0.51, "below_threshold"), ((0.4, 0.5), "passed"), ((None, 0.45), "below_threshold"),
    ("0.2:0.6", "passed"), (Threshold(0.6, None), "below_threshold"),
])
def test_threshold_verdicts(threshold, verdict):
    summary = run_evals(numeric_items("0.25", "0.75"), [NUMERIC], thresholds={"numeric": threshold}, store=False)
    assert summary.verdict == verdict
    assert summary.scorers["numeric"].threshold_met is (verdict == "passed")


def test_threshold_for_an_unknown_scorer_is_rejected():
    with pytest.raises(ValueError, match="'faithfulnes'.*not among the scorers"):
        run_evals(numeric_items("1"), [NUMERIC], thresholds={"faithfulnes": 0.5}, store=False)


def write_jsonl(path: Path, rows: list, extra: bytes = b"") -> Path:
    path.write_bytes("".join(json.dumps(r) + "\n" for r in rows).encode() + extra)
    return path


def invoke(*args: str):
    return CliRunner().invoke(app, ["eval", *args])


def test_cli_exit_codes_follow_the_verdict(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", numeric_items("0.25", "0.75"))
    assert invoke(NUMERIC, "--data", str(good), "--threshold", "numeric=0.5", "--quiet").exit_code == 0
    assert invoke(NUMERIC, "--data", str(good), "--threshold", "numeric=0.6", "--quiet").exit_code == 1
    assert invoke(NUMERIC, "--data", str(good), "--threshold", "numeric=0.1:0.4", "--quiet").exit_code == 1
    failing = write_jsonl(tmp_path / "failing.jsonl", numeric_items("0.25", "7"))
    result = invoke(NUMERIC, "--data", str(failing), "--threshold", "numeric=0.1", "--quiet")
    assert result.exit_code == 2
    assert "item 2: numeric failed (formula)" in result.stderr
    assert invoke(NUMERIC, "--data", str(good), "--threshold", "nope=0.5").exit_code == 2  # usage error


def test_cli_reports_malformed_lines_and_scores_the_rest(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", numeric_items("0.5"), b'{"output": \n' + b'{"output": "0.25"}\n')
    result = invoke(NUMERIC, "--data", str(data), "--quiet", "--json", "--out", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 2
    assert f"{data}:2: invalid JSON: Expecting value (column 12)" in result.stderr
    summary = json.loads(result.stdout)  # --json: stdout holds only the summary
    assert summary["verdict"] == "errors" and summary["datasetProblems"] == 1
    assert summary["scorers"]["numeric"]["scored"] == 2 and summary["scores"] == {"numeric": 0.375}
    assert [line["id"] for line in lines_of(tmp_path / "out.jsonl")] == [1, 3]


def test_cli_options_fields_runs_and_show(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", [{"qid": "a", "answer": "0.5"}, {"qid": "b", "answer": "1"}])
    result = invoke(NUMERIC, "--data", str(data), "--field", "output=answer", "--field", "id=qid",
                    "--option", "numeric.scale=10", "--json", "--quiet", "--run-id", "my-run")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["numeric"]["mean"] == 7.5  # the option reached the scorer
    runner = CliRunner()
    runs = runner.invoke(app, ["runs", "--json"])
    assert [r["runId"] for r in json.loads(runs.stdout)] == ["my-run"]
    shown = runner.invoke(app, ["show", "my-", "--results"])
    assert [(line["id"], line["score"]) for line in map(json.loads, shown.stdout.splitlines())] == [
        ("a", 5.0), ("b", 10.0)]
    table = runner.invoke(app, ["show", "my-run"])
    assert table.exit_code == 0 and "numeric" in table.stdout and "finished" in table.stdout
    bad = invoke(NUMERIC, "--data", str(data), "--option", "numeric.scael=2")
    assert bad.exit_code == 2 and "unknown option 'scael'" in bad.stderr


def test_runs_counts_results_apart_from_items(tmp_path):
    data = write_jsonl(tmp_path / "data.jsonl", [{"id": i, "output": o} for i, o in
                                                   (("a", "0.5"), ("b", "n/a"), ("c", "1"))])
    result = invoke(NUMERIC, "textual_difference", "--data", str(data), "--quiet", "--run-id", "two-scorers")
    assert result.exit_code == 0, result.output
    runner = CliRunner()
    (run,) = json.loads(runner.invoke(app, ["runs", "--json"]).stdout)
    assert (run["items"], run["results"]) == (3, 6)
    assert run["counts"] == {"scored": 5, "not_scorable": 1, "failed": 0}
    lines = runner.invoke(app, ["runs"], env={"COLUMNS": "250"}).stdout.splitlines()
    header = lines[0].split()
    assert header[5:10] == ["items", "results", "scored", "not", "scorable"]
    row = lines[1].split()
    assert row[0] == "two-scorers" and row[row.index("numeric,") + 2:][:5] == ["3", "6", "5", "1", "0"]


# --- concurrency, targets, rate limits, streaming ----------------------------------------------------


class SlowJudge:
    """A judge answering every stage after `delay_s`, recording how many calls overlap."""

    model = "fake/slow"

    def __init__(self, answers: dict, delay_s: float = 0.05):
        self.inner = FakeJudge(answers)
        self.delay_s = delay_s
        self.active = 0
        self.peak = 0
        self.calls = 0

    async def ask(self, call):
        self.active += 1
        self.calls += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.delay_s)
            return await self.inner.ask(call)
        finally:
            self.active -= 1


def test_items_and_scorers_run_concurrently_within_the_bound():
    judge = SlowJudge({"preprocess": {"claims": ["a", "b"]}})
    claims = load_scorer(CLAIMS, judge=judge)
    summary = run_evals(numeric_items(*["0.5"] * 12), [claims, NUMERIC], concurrency=4, store=False)
    assert judge.peak == 4 and judge.calls == 12  # four calls in flight at once, never more
    assert summary.scores == {"claims": 0.5, "numeric": 0.5}

    both = SlowJudge({"preprocess": {"claims": ["a"]}, "analyze": {"verdict": "yes", "reason": "r"},
                      "reason": {"reason": "fine"}})
    run_evals([{"output": "x", "context": "y"}], [load_scorer(CLAIMS, judge=both),
                                                 load_scorer("faithfulness", judge=both)], store=False)
    assert both.peak == 2  # one item's two scorers run at the same time


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_target_produces_the_output_and_its_errors_fail_only_its_item(kind):
    def produce(question):
        if question == "boom":
            raise RuntimeError("agent crashed")
        return {"output": question.split("=")[1], "context": "retrieved"}

    async def aproduce(question):
        await asyncio.sleep(0)
        return produce(question)

    seen = {}
    summary = run_evals([{"input": "x=0.25"}, {"input": "boom"}, {"input": "x=0.75"}], [NUMERIC],
                        target=produce if kind == "sync" else aproduce, store=False,
                        on_item_complete=lambda item, results: seen.update({item["id"]: (item, results)}))
    assert summary.scorers["numeric"].mean == 0.5 and summary.scorers["numeric"].failed == 1
    item, results = seen[1]
    assert item["output"] == "0.25" and item["context"] == ["retrieved"]
    error = seen[2][1]["numeric"].error
    assert (error.kind, error.message) == ("target", "the target raised RuntimeError: agent crashed")


def test_items_are_streamed_not_loaded_at_once():
    pulled = []
    first_done_at = []

    def items():
        for i in range(1000):
            pulled.append(i)
            yield {"output": "0.5"}

    run_evals(items(), [NUMERIC], concurrency=4, store=False,
              on_item_complete=lambda item, results: first_done_at.append(len(pulled)))
    assert len(pulled) == 1000
    assert first_done_at[0] <= 4 + 4 + 2  # the queue is bounded: workers + queue, not the whole dataset


class VirtualClock:
    """Stands for `time` and `asyncio` inside engine.judge.rate_limit: `monotonic()` reads a clock that moves
    only when `sleep` is awaited, so a rate limiter's waits are counted, not timed."""

    Lock = asyncio.Lock

    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def virtual_clock(monkeypatch) -> VirtualClock:
    import engine.judge.rate_limit

    clock = VirtualClock()
    monkeypatch.setattr(engine.judge.rate_limit, "time", clock)
    monkeypatch.setattr(engine.judge.rate_limit, "asyncio", clock)
    return clock


def test_rate_limiter_lets_a_burst_through_then_spaces_requests(virtual_clock):
    async def acquire(limiter, n):
        started = []
        for _ in range(n):
            await limiter.acquire()
            started.append(round(virtual_clock.now, 6))
        return started

    assert asyncio.run(acquire(RateLimiter(100, burst=5), 5)) == [0.0] * 5
    assert virtual_clock.sleeps == []  # a burst within the bucket never waits
    # a burst of 10 (the default bucket: the rate), then one request every 0.1 s
    assert asyncio.run(acquire(RateLimiter(10), 15)) == [0.0] * 10 + [0.1, 0.2, 0.3, 0.4, 0.5]
    assert len(virtual_clock.sleeps) == 5


def test_rate_limit_takes_a_token_per_judge_call_and_restores_the_judge(monkeypatch):
    import engine.run.runner

    taken = []

    class CountingLimiter(RateLimiter):
        async def acquire(self):
            taken.append(self.rate)
            await super().acquire()

    monkeypatch.setattr(engine.run.runner, "RateLimiter", CountingLimiter)
    judge = SlowJudge({"preprocess": {"claims": ["a"]}}, delay_s=0)
    claims = load_scorer(CLAIMS, judge=judge)
    run_evals(numeric_items(*["x"] * 15), [claims], concurrency=15, rate_limit=1000, store=False)
    assert judge.calls == 15 and taken == [1000.0] * 15
    assert claims.judge is judge


def test_callback_errors_stop_the_run_and_keep_what_was_saved(tmp_path):
    out = tmp_path / "out.jsonl"

    def callback(item, results):
        if item["id"] == 3:
            raise KeyError("bug in the callback")

    with pytest.raises(KeyError):
        run_evals(numeric_items(*["0.5"] * 5), [NUMERIC], concurrency=1, out=out, on_item_complete=callback,
                  run_id="r1")
    assert [line["id"] for line in lines_of(out)] == [1, 2, 3]
    db = sqlite3.connect(tmp_path / "store.sqlite")
    assert db.execute("SELECT status FROM runs WHERE run_id='r1'").fetchone() == ("interrupted",)


# --- results keyed by a label ------------------------------------------------------------------------


def two_labels():
    """One spec twice in one run: under its own scale and ten times it."""
    return [load_scorer(NUMERIC, label="unit"), load_scorer(NUMERIC, label="tenfold", scale=10)]


def label_rows(path: Path, run_id: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute("SELECT item_id, label, scorer_id, status, score FROM results WHERE run_id=?",
                                 (run_id,)))
    finally:
        db.close()


def test_one_spec_under_two_labels_is_scored_twice_and_resumed_by_label(tmp_path):
    out = tmp_path / "out.jsonl"
    data = numeric_items("0.5", "0.25")
    first = run_evals(data, two_labels(), out=out, run_id="two", thresholds={"tenfold": 5})
    assert first.scores == {"unit": 0.375, "tenfold": 3.75} and first.verdict == "below_threshold"
    tenfold = first.scorers["tenfold"]
    assert (tenfold.scorer, tenfold.label, tenfold.threshold_met) == ("numeric", "tenfold", False)
    assert tenfold.spec_hash == first.scorers["unit"].spec_hash == load_scorer(NUMERIC).plan.hash
    assert sorted((line["id"], line["label"], line["scorer"], line["score"]) for line in lines_of(out)) == [
        (1, "tenfold", "numeric", 5.0), (1, "unit", "numeric", 0.5),
        (2, "tenfold", "numeric", 2.5), (2, "unit", "numeric", 0.25)]
    assert label_rows(tmp_path / "store.sqlite", "two") == [
        ("1", "tenfold", "numeric", "scored", 5.0), ("1", "unit", "numeric", "scored", 0.5),
        ("2", "tenfold", "numeric", "scored", 2.5), ("2", "unit", "numeric", "scored", 0.25)]

    asked = []
    again = run_evals(data, two_labels(), out=out, resume=True,
                      on_item_complete=lambda item, results: asked.append((item["id"], sorted(results))))
    assert asked == [] and again.resumed == 2 and again.scores == first.scores  # both labels were done

    lines = lines_of(out)  # item 1's tenfold result failed instead: only it is asked again
    failed = next(line for line in lines if (line["id"], line["label"]) == (1, "tenfold"))
    failed.update(score=None, error={"kind": "judge", "message": "no answer"})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    retried = run_evals(data, two_labels(), out=out, resume=True,
                        on_item_complete=lambda item, results: asked.append((item["id"], sorted(results))))
    assert asked == [(1, ["tenfold"])] and retried.resumed == 1 and retried.scores == first.scores
    assert len(lines_of(out)) == 4 and label_rows(tmp_path / "store.sqlite", "two")[0][3:] == ("scored", 5.0)


def test_two_scorers_under_one_label_are_refused():
    with pytest.raises(ValueError, match="scorer label 'n' is given twice"):
        run_evals(numeric_items("1"), [load_scorer(NUMERIC, label="n"), load_scorer("textual_difference", label="n")],
                  store=False)
    with pytest.raises(ValueError, match="scorer label 'numeric' is given twice"):
        run_evals(numeric_items("1"), [NUMERIC, NUMERIC], store=False)
    with pytest.raises(ValueError, match="threshold for 'numeric', which is not among the scorers \\(unit, tenfold\\)"):
        run_evals(numeric_items("1"), two_labels(), thresholds={"numeric": 0.5}, store=False)
    for bad in ("", " padded", "a=b", 7):
        with pytest.raises(ValueError, match="scorer label .*: give a non-empty name without '='"):
            load_scorer(NUMERIC, label=bad)


def test_a_scorer_under_another_label_labels_its_results():
    scorer = load_scorer(NUMERIC)
    v2 = scorer.with_label("numeric-v2")
    assert (scorer.label, v2.label, v2.id) == ("numeric", "numeric-v2", "numeric")
    assert (scorer.run(output="0.5").label, v2.run(output="0.5").label) == ("numeric", "numeric-v2")
    seen = {}
    summary = run_evals(numeric_items("0.5"), [scorer, v2], store=False,
                        on_item_complete=lambda item, results: seen.update(results))
    assert sorted(seen) == ["numeric", "numeric-v2"] and seen["numeric-v2"].label == "numeric-v2"
    assert summary.to_json_dict()["scorers"]["numeric-v2"]["label"] == "numeric-v2"


# --- nothing lost: resume -----------------------------------------------------------------------------


def test_out_file_is_never_overwritten(tmp_path):
    out = tmp_path / "out.jsonl"
    run_evals(numeric_items("0.5"), [NUMERIC], out=out)
    with pytest.raises(FileExistsError, match="resume"):
        run_evals(numeric_items("0.5"), [NUMERIC], out=out)


def test_resume_skips_done_retries_failed_repairs_a_torn_line_and_compacts(tmp_path):
    out = tmp_path / "out.jsonl"
    data = [{"id": i, "output": f"ITEM-{i}: the sky is blue.", "context": "The sky is blue."} for i in range(1, 7)]
    with FakeOpenAIServer(faithfulness_reply(failing={"ITEM-2", "ITEM-5"})) as server:
        judge = http_judge(server)
        first = run_evals(data, [load_scorer("faithfulness", judge=judge)], concurrency=2, out=out)
        assert first.scorers["faithfulness"].failed == 2
        # a kill mid-write leaves a torn last line: drop item 6's line, append half of it
        lines = out.read_bytes().splitlines(keepends=True)
        torn = next(line for line in lines if json.loads(line)["id"] == 6)
        out.write_bytes(b"".join(line for line in lines if line is not torn) + torn[: len(torn) // 2])
        server.reply = faithfulness_reply()  # the provider is healthy again
        before = len(server.requests)
        second = run_evals(data, [load_scorer("faithfulness", judge=judge)], concurrency=3, out=out, resume=True)
        retried = {marker(r) for r in server.requests[before:]}
    assert retried == {"ITEM-2", "ITEM-5", "ITEM-6"}  # done items are not asked again
    assert second.run_id == first.run_id
    s = second.scorers["faithfulness"]
    assert (s.scored, s.failed, s.mean) == (6, 0, 1.0)  # the whole run, earlier results included
    assert second.resumed == 3 and second.verdict == "passed"
    final = lines_of(out)
    assert sorted(line["id"] for line in final) == [1, 2, 3, 4, 5, 6]  # exactly one line each
    assert all(line["error"] is None for line in final)
    assert store_rows(tmp_path / "store.sqlite", first.run_id) == [
        (str(i), "faithfulness", "scored", 1.0) for i in range(1, 7)]


def test_resume_from_the_store_without_an_out_file(tmp_path):
    outputs = ["0.5", "7", "0.25"]
    first = run_evals(numeric_items(*outputs), [NUMERIC], run_id="store-run")
    assert first.scorers["numeric"].failed == 1
    outputs[1] = "0.75"  # fixed in the dataset; only the failed item is scored again
    calls = []
    second = run_evals(numeric_items(*outputs), [NUMERIC], run_id="store-run", resume=True,
                       on_item_complete=lambda item, results: calls.append(item["id"]))
    assert calls == [2]
    assert second.scorers["numeric"].mean == 0.5 and second.verdict == "passed"
    assert store_rows(tmp_path / "store.sqlite", "store-run") == [
        ("1", "numeric", "scored", 0.5), ("2", "numeric", "scored", 0.75), ("3", "numeric", "scored", 0.25)]
    with pytest.raises(ValueError, match="no run 'missing'"):
        run_evals(numeric_items("1"), [NUMERIC], run_id="missing", resume=True)


def test_resume_of_a_run_killed_before_its_first_line_keeps_its_run_id(tmp_path):
    from engine.run.store import Store

    out = tmp_path / "out.jsonl"
    first = run_evals(numeric_items("0.5", "0.25"), [NUMERIC], out=out)
    out.write_bytes(b"")  # as a kill before the first result line leaves it
    second = run_evals(numeric_items("0.5", "0.25"), [NUMERIC], out=out, resume=True)
    assert second.run_id == first.run_id and second.resumed == 0
    assert [(line["id"], line["score"]) for line in lines_of(out)] == [(1, 0.5), (2, 0.25)]
    with Store(tmp_path / "store.sqlite") as db:
        assert [(r["run_id"], r["status"], r["counts"]["scored"]) for r in db.list_runs()] == [
            (first.run_id, "finished", 2)]


@pytest.mark.slow  # three engine processes: about 12 s
def test_resume_after_sigkill_equals_an_uninterrupted_run(tmp_path):
    n = 45
    data = write_jsonl(tmp_path / "data.jsonl", [
        {"id": f"q{i}", "output": f"ITEM-{i:02d}: the sky is blue.", "context": "The sky is blue."}
        for i in range(n)])
    half = {f"ITEM-{i:02d}" for i in range(0, n, 3)}
    env = {**os.environ, "SCORESPEC_STORE": str(tmp_path / "store.sqlite"), "OPENAI_API_KEY": "test"}

    # the killed run's calls are answered up to 10 items' worth (3 calls an item), then held
    # until it is killed: it is killed mid-run however fast or slow the machine is
    answer, answered, killed = faithfulness_reply(half=half), itertools.count(), threading.Event()

    def held(request: dict):
        if next(answered) >= 30:
            killed.wait()
        return answer(request)

    with FakeOpenAIServer(held, latency_s=0.03) as server:
        def command(out: Path, *extra: str) -> list[str]:
            # (not `-m engine.cli.main`: there the commands register on engine.cli.main's app, not __main__'s)
            return [sys.executable, "-c", "from engine.cli.main import main; main()", "eval", "faithfulness",
                    "--data", str(data),
                    "--model", "openai/test-model", "--base-url", server.base_url, "--out", str(out),
                    "--quiet", *extra]

        out = tmp_path / "killed.jsonl"
        proc = subprocess.Popen(command(out, "--concurrency", "2"), env=env, cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while proc.poll() is None and not (out.exists() and out.read_bytes().count(b"\n") >= 8):
                time.sleep(0.01)
            assert proc.poll() is None  # waiting for its 31st answer
            proc.send_signal(signal.SIGKILL)
            assert proc.wait() == -signal.SIGKILL
        finally:
            killed.set()
        written = out.read_bytes().count(b"\n")
        assert 8 <= written <= 10  # killed mid-run

        resumed = subprocess.run(command(out, "--resume", "--concurrency", "6", "--json"), env=env, cwd=tmp_path,
                                 capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        summary = json.loads(resumed.stdout)
        assert summary["resumed"] >= written - 2  # (a line may have been torn)

        whole = tmp_path / "whole.jsonl"
        full = subprocess.run(command(whole, "--concurrency", "8", "--json"), env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert full.returncode == 0, full.stderr

    def key_fields(path: Path) -> list[tuple]:
        return sorted((line["id"], line["scorer"], line["score"], line["reason"], line["error"] is None)
                      for line in lines_of(path))

    assert key_fields(out) == key_fields(whole)
    assert len(lines_of(out)) == n == len({line["id"] for line in lines_of(out)})
    assert {line["runId"] for line in lines_of(out)} == {summary["runId"]}
    assert summary["scorers"] == json.loads(full.stdout)["scorers"]
    assert summary["scores"]["faithfulness"] == pytest.approx((30 * 1.0 + 15 * 0.5) / 45)
    assert store_rows(tmp_path / "store.sqlite", summary["runId"]) == sorted(
        (line["id"], "faithfulness", "scored", line["score"]) for line in lines_of(out))


def test_progress_true_prints_plain_lines_on_stderr(capsys):
    summary = run_evals(numeric_items("0.25", "0.5"), [NUMERIC], store=False, progress=True, run_id="plain")
    assert capsys.readouterr().err.splitlines() == [
        "run plain · scorers numeric · 2 item(s)", "2/2 item(s) done · numeric 0.375"]
    assert summary.scores == {"numeric": 0.375}


def test_run_evals_works_inside_a_running_event_loop():
    async def inside():
        return run_evals(numeric_items("0.5"), [NUMERIC], store=False), await arun_evals(
            numeric_items("0.25"), [NUMERIC], store=False)

    sync_summary, async_summary = asyncio.run(inside())
    assert sync_summary.scores == {"numeric": 0.5} and async_summary.scores == {"numeric": 0.25}
    assert threading.active_count() >= 1


def test_limit_scores_only_the_first_items(tmp_path):
    from typer.testing import CliRunner

    from engine.cli.main import app

    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"id": {i}, "output": "a", "ground_truth": "a"}}\n' for i in range(5)))
    summary = run_evals(str(data), ["textual_difference"], store=False, limit=2)
    assert (summary.items, summary.scorers["textual_difference"].scored) == (2, 2)
    result = CliRunner().invoke(app, ["eval", "textual_difference", "--data", str(data), "--limit", "3", "--json",
                                      "--no-cache", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["items"] == 3


def test_cli_prints_a_failed_result_once_and_the_item_line_only_for_what_scored(tmp_path):
    failing = write_jsonl(tmp_path / "failing.jsonl", numeric_items("0.25", "7"))
    result = invoke(NUMERIC, "--data", str(failing), "--out", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert sum("numeric failed" in line for line in lines) == 1
    assert [line for line in lines if line.startswith(("1: ", "2: "))] == ["1: numeric 0.25"]

"""Reliability under faults and kills (issue 7): nothing lost, nothing duplicated, every
failure explained.

    python tests/reliability/run.py [--items 300] [--seed 7] [--trials 5] [--kill-items 60]

1. **Fault injection.** A faithfulness eval of ``--items`` items through the real openai +
   instructor path against `FakeOpenAIServer`, with `FaultInjector` replacing about one judge
   request in five with a fault (429 with and without Retry-After, 500/502/503, connection
   resets, timeouts, unreadable bodies, malformed JSON, JSON of the wrong shape, answers cut off
   by the token limit, plain-text refusals; seeded, so a run is reproducible). Then the run is
   resumed, faults still on, until no item is failed. Every item is designed with a known
   answer (2-4 claims, k supported; every 20th item has none: not scorable), so each score is
   checked against its expected value: a partial or misread answer would show.
2. **SIGKILL trials.** ``python -m engine eval`` subprocesses against the fake server (50 ms
   latency) killed with SIGKILL at seeded random moments (twice per trial: the run, then its
   first resume; a moment is "after k more result lines, plus 0-50 ms", k drawn from 0 to the
   items left), then resumed to the end, compared with an uninterrupted run.

After each part: lost (expected (item, scorer) pairs missing from the JSONL), duplicated (extra
lines), unreadable lines, and whether the SQLite store holds exactly the JSONL's results.
Prints markdown tables. `tests/test_reliability.py` runs the same at a smaller size and asserts
the values.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.bind.load import load_scorer
from engine import run_evals  # noqa: E402
from engine.bind.stack import make_judge  # noqa: E402
from engine.judge.retries import RetryPolicy  # noqa: E402
from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.testing.faults import FaultInjector  # noqa: E402

# About one request in five is faulted: a provider having a bad day.
RATES = {
    "rate_limit": 0.04, "rate_limit_no_retry_after": 0.02, "server_error_500": 0.015, "bad_gateway_502": 0.01,
    "unavailable_503": 0.015, "reset": 0.015, "timeout": 0.01, "unreadable_body": 0.01, "malformed_json": 0.015,
    "wrong_shape": 0.015, "truncated": 0.015, "refusal": 0.015,
}
LABELS = {
    "rate_limit": "429 with Retry-After", "rate_limit_no_retry_after": "429 without Retry-After",
    "server_error_500": "500", "bad_gateway_502": "502", "unavailable_503": "503", "reset": "connection reset",
    "timeout": "timeout", "unreadable_body": "unreadable response body", "malformed_json": "malformed JSON answer",
    "wrong_shape": "valid JSON, wrong shape", "truncated": "cut off by the token limit",
    "refusal": "plain-text refusal",
}
TIMEOUT_S = 2.0          # the judge's per-call timeout; a `timeout` fault answers 0.5 s after it
RETRY = RetryPolicy(max_retries=3, base_s=0.01, max_wait_s=0.2)  # short waits; Retry-After (0.05 s) honoured
SCORER = "faithfulness"


# --- the dataset and the judge's designed answers ---------------------------------------------------


def design(i: int) -> tuple[int, int]:
    """(claims, supported) of item i: every 20th item makes no claim (not scorable)."""
    if i % 20 == 19:
        return 0, 0
    claims = 2 + i % 3
    return claims, (i * 7) % (claims + 1)


def expected(i: int) -> tuple[str, float | None]:
    claims, supported = design(i)
    return ("not_scorable", None) if claims == 0 else ("scored", round(supported / claims, 2))


def make_items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i:04d}", "output": f"ITEM-{i:04d}: the sky is blue and grass is green.",
             "context": ["The sky is blue.", "Grass is green."]} for i in range(n)]


_MARKER = re.compile(r"ITEM-(\d{4})")
_CLAIM = re.compile(r"CLAIM:\s*<<<\s*ITEM-\d{4} claim (\d+)")


def answer(request: dict) -> dict:
    """The healthy judge: the designed claims of the item the request is about, or the designed
    verdict of the one claim an analyze request asks about (claim c is supported when c < supported)."""
    text = " ".join(m["content"] for m in request["messages"] if isinstance(m.get("content"), str))
    i = int(_MARKER.search(text).group(1))  # type: ignore[union-attr]
    claims, supported = design(i)
    stage = (request.get("tools") or [{}])[0].get("function", {}).get("name")
    if stage == "preprocess":
        return {"claims": [f"ITEM-{i:04d} claim {c}" for c in range(claims)]}
    if stage == "analyze":
        c = int(_CLAIM.search(text).group(1))  # type: ignore[union-attr]
        return {"verdict": "yes" if c < supported else "no", "reason": "checked"}
    raise ValueError(f"unexpected stage {stage!r}")


# --- checking an out file against the store ------------------------------------------------------------


@dataclass
class Check:
    """An out file and the store compared with the expected (item, scorer) pairs."""

    lines: int = 0
    unreadable: int = 0
    lost: int = 0
    duplicated: int = 0
    store_rows: int = 0
    store_agrees: bool = False
    wrong_scores: int = 0
    outcomes: collections.Counter = field(default_factory=collections.Counter)  # scored / not_scorable / failed
    failures: collections.Counter = field(default_factory=collections.Counter)  # "stage/kind"
    unexplained: int = 0  # failed lines without stage, kind, message or attempts
    records: dict[tuple[str, str], dict] = field(default_factory=dict)


def check(out: Path, store: Path, run_id: str, ids: list[str], *, designed: bool = True) -> Check:
    c = Check()
    raw = out.read_bytes()
    for line in raw.splitlines():
        c.lines += 1
        try:
            record = json.loads(line)
        except ValueError:
            c.unreadable += 1
            continue
        key = (str(record["id"]), record["scorer"])
        if key in c.records:
            c.duplicated += 1
        c.records[key] = record
    if raw and not raw.endswith(b"\n"):
        c.unreadable += 1  # a torn last line
    wanted = {(i, SCORER) for i in ids}
    c.lost = len(wanted - set(c.records))
    for (item_id, _), record in c.records.items():
        status = "failed" if record.get("error") else "not_scorable" if record.get("notScorable") else "scored"
        c.outcomes[status] += 1
        if status == "failed":
            e = record["error"]
            c.failures[f"{e.get('stage')}/{e.get('kind')}"] += 1
            if not (e.get("stage") and e.get("kind") and e.get("message") and e.get("attempts", 0) >= 1):
                c.unexplained += 1
        elif designed:
            want = expected(int(item_id[1:]))
            if (status, record.get("score")) != want:
                c.wrong_scores += 1
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT item_id, scorer_id, result FROM results WHERE run_id=?", (run_id,)).fetchall()
    finally:
        db.close()
    c.store_rows = len(rows)
    stored = {(item_id, scorer_id): json.loads(result) for item_id, scorer_id, result in rows}
    in_file = {key: {k: v for k, v in record.items() if k != "id"} for key, record in c.records.items()}
    c.store_agrees = stored == in_file and c.duplicated == 0
    return c


# --- 1. fault injection ---------------------------------------------------------------------------------


@dataclass
class FaultReport:
    items: int
    seed: int
    requests: int = 0
    injected: collections.Counter = field(default_factory=collections.Counter)
    rounds: list[Check] = field(default_factory=list)  # the run, then each resume
    injected_per_round: list[collections.Counter] = field(default_factory=list)
    run_ids: set = field(default_factory=set)
    seconds: float = 0.0

    @property
    def final(self) -> Check:
        return self.rounds[-1]


def fault_eval(workdir: Path, n: int = 300, *, seed: int = 7, concurrency: int = 16, max_resumes: int = 5,
               rates: dict[str, float] | None = None) -> FaultReport:
    """Run the faithfulness eval of `n` designed items with faults injected, then resume it
    (faults still on) until nothing is failed or `max_resumes` resumes were made."""
    injector = FaultInjector(answer, rates or RATES, seed=seed, retry_after_s=0.05,
                             timeout_delay_s=TIMEOUT_S + 0.5)
    items = make_items(n)
    ids = [item["id"] for item in items]
    out, store = workdir / "faults.jsonl", workdir / "faults.sqlite"
    report = FaultReport(n, seed)
    started = time.perf_counter()
    with FakeOpenAIServer(injector) as server:
        judge = make_judge("openai/fake-model", base_url=server.base_url, api_key="test", timeout_s=TIMEOUT_S,
                           retry=RETRY)
        for attempt in range(max_resumes + 1):
            before = collections.Counter(injector.injected)
            summary = run_evals(items, [load_scorer(SCORER, judge=judge)], concurrency=concurrency, out=out,
                                store=store, resume=attempt > 0)
            report.run_ids.add(summary.run_id)
            report.injected_per_round.append(injector.injected - before)
            report.rounds.append(check(out, store, summary.run_id, ids))
            if summary.scorers[SCORER].failed == 0:
                break
    report.requests = injector.requests
    report.injected = collections.Counter(injector.injected)
    report.seconds = time.perf_counter() - started
    return report


# --- 2. SIGKILL trials --------------------------------------------------------------------------------


@dataclass
class Trial:
    kills: list[tuple[float, int, bool]] = field(default_factory=list)  # (seconds, lines written, torn last line)
    finished_early: int = 0  # kill moments that came after the process had ended
    same_as_uninterrupted: bool = False
    check: Check | None = None
    runs_for_out: int = 0


@dataclass
class KillReport:
    items: int
    seed: int
    uninterrupted_s: float = 0.0  # the in-process uninterrupted run
    trials: list[Trial] = field(default_factory=list)


def _command(data: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    # --no-cache: every killed and resumed run asks the judge (and none touches the user's cache)
    return [sys.executable, "-m", "engine", "eval", SCORER, "--data", str(data), "--model", "openai/fake-model",
            "--base-url", base_url, "--out", str(out), "--concurrency", "4", "--quiet", "--no-cache", *extra]


def _key_fields(path: Path) -> list[tuple]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return sorted((line["id"], line["scorer"], line["score"], line["reason"], bool(line["error"]),
                   bool(line["notScorable"])) for line in lines)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def sigkill_trials(workdir: Path, n: int = 60, *, trials: int = 3, seed: int = 7, kills_per_trial: int = 2,
                   latency_s: float = 0.05) -> KillReport:
    """Kill `python -m engine eval` with SIGKILL at seeded random moments, resume it, and
    compare with an uninterrupted run of the same data."""
    items = make_items(n)
    ids = [item["id"] for item in items]
    data = workdir / "kill-data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    store = workdir / "kill.sqlite"
    env = {**os.environ, "SCORESPEC_STORE": str(store), "OPENAI_API_KEY": "test",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    report = KillReport(n, seed)
    rng = random.Random(seed)
    with FakeOpenAIServer(answer, latency_s=latency_s) as server:
        # the uninterrupted run, in this process (the same engine, without a process start)
        whole = workdir / "uninterrupted.jsonl"
        started = time.perf_counter()
        judge = make_judge("openai/fake-model", base_url=server.base_url, api_key="test")
        run_evals(str(data), [load_scorer(SCORER, judge=judge)], concurrency=4, out=whole,
                  store=workdir / "uninterrupted.sqlite")
        report.uninterrupted_s = time.perf_counter() - started
        baseline = _key_fields(whole)
        for t in range(trials):
            trial = Trial()
            out = workdir / f"killed-{t}.jsonl"
            for k in range(kills_per_trial):
                # the kill moment: once `after` more result lines were written (0: during
                # start-up), plus a random 0-50 ms, so some kills land mid-write
                start_lines = _lines(out)
                after = rng.randint(0, max(0, n - start_lines - 1))
                jitter = rng.uniform(0.0, 0.05)
                proc = subprocess.Popen(_command(data, out, server.base_url, *(["--resume"] if k else [])),
                                        env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                started = time.perf_counter()
                while proc.poll() is None and _lines(out) < start_lines + after:
                    time.sleep(0.005)
                time.sleep(jitter)
                if proc.poll() is not None:
                    trial.finished_early += 1
                    continue
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                raw = out.read_bytes() if out.exists() else b""
                trial.kills.append((round(time.perf_counter() - started, 2), raw.count(b"\n"),
                                    bool(raw) and not raw.endswith(b"\n")))
            final = subprocess.run(_command(data, out, server.base_url, "--resume", "--json"), env=env, cwd=workdir,
                                   capture_output=True, text=True, timeout=300)
            if final.returncode != 0:
                raise RuntimeError(f"trial {t}: the final resume failed ({final.returncode}): {final.stderr[-2000:]}")
            run_id = json.loads(final.stdout)["runId"]
            trial.check = check(out, store, run_id, ids)
            trial.same_as_uninterrupted = _key_fields(out) == baseline
            db = sqlite3.connect(store)
            try:
                trial.runs_for_out = db.execute("SELECT count(*) FROM runs WHERE out=?",
                                                (str(out.resolve()),)).fetchone()[0]
            finally:
                db.close()
            report.trials.append(trial)
    return report


# --- the tables ----------------------------------------------------------------------------------------


def _outcome_text(c: Check) -> str:
    failed = ", ".join(f"{k} {v}" for k, v in sorted(c.failures.items()))
    return (f"{c.outcomes['scored']} scored · {c.outcomes['not_scorable']} not scorable · "
            f"{c.outcomes['failed']} failed" + (f" ({failed})" if failed else ""))


def fault_table(r: FaultReport) -> str:
    rows = ["| fault injected | count |", "| --- | ---: |"]
    for kind in RATES:
        rows.append(f"| {LABELS[kind]} | {r.injected[kind]} |")
    rows.append(f"| **total** | **{sum(r.injected.values())}** of {r.requests} judge requests |")
    rows += ["", "| pass | faults | outcome | lost | duplicated | unreadable lines | wrong scores | store = JSONL |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for i, c in enumerate(r.rounds):
        name = "run" if i == 0 else f"resume {i}"
        rows.append(f"| {name} | {sum(r.injected_per_round[i].values())} | {_outcome_text(c)} | {c.lost} | "
                    f"{c.duplicated} | {c.unreadable} | {c.wrong_scores} | {'yes' if c.store_agrees else 'NO'} |")
    return "\n".join(rows)


def kill_table(r: KillReport) -> str:
    rows = ["| trial | killed with N lines written | final outcome | same as uninterrupted | lost | "
            "duplicated | unreadable lines | store = JSONL | runs for the out file |",
            "| ---: | --- | --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for t, trial in enumerate(r.trials):
        c = trial.check
        assert c is not None
        kills = ", ".join(f"{lines}{' (torn)' if torn else ''}" for _at, lines, torn in trial.kills)
        if trial.finished_early:
            kills += f" ({trial.finished_early} ended before its kill)"
        rows.append(f"| {t + 1} | {kills} | {_outcome_text(c)} | {'yes' if trial.same_as_uninterrupted else 'NO'} | "
                    f"{c.lost} | {c.duplicated} | {c.unreadable} | {'yes' if c.store_agrees else 'NO'} | "
                    f"{trial.runs_for_out} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300, help="items in the fault-injection eval")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--trials", type=int, default=5, help="SIGKILL trials")
    parser.add_argument("--kill-items", type=int, default=60, help="items in each SIGKILL trial")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="scorespec-reliability-") as tmp:
        faults = fault_eval(Path(tmp), args.items, seed=args.seed)
        print(f"## Fault injection: {faults.items} items, faithfulness, seed {faults.seed} "
              f"({faults.seconds:.1f} s)\n")
        print(fault_table(faults))
        kills = sigkill_trials(Path(tmp), args.kill_items, trials=args.trials, seed=args.seed)
        print(f"\n## SIGKILL: {kills.items} items, {len(kills.trials)} trials, seed {kills.seed} "
              f"(uninterrupted run {kills.uninterrupted_s:.1f} s)\n")
        print(kill_table(kills))
    bad = faults.final.outcomes["failed"] or any(
        c.lost or c.duplicated or c.unreadable or c.wrong_scores or not c.store_agrees or c.unexplained
        for c in faults.rounds) or any(
        not t.same_as_uninterrupted or t.check is None or t.check.lost or t.check.duplicated
        or t.check.unreadable or not t.check.store_agrees for t in kills.trials)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

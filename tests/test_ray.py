"""The Ray executor on a real local Ray cluster (127.0.0.1), against the fake OpenAI-compatible
server: the same results as one process, item by item; an actor killed mid-run and a driver
stopped mid-run lose and duplicate nothing; a shared Redis cache makes each judge call once; a
run that starts its own Ray stops it. (The parts that need no cluster: `test_ray_parts.py`.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, require_redis
from ray_local import processes_naming

from engine.api import run_evals
from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.ray.cluster import RayOptions
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.faults import FaultInjector

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]

MODEL = "openai/fake-model"
RETRY = RetryPolicy(max_retries=3, base_s=0.01, max_wait_s=0.2)
# about one judge request in twelve is a fault: retried, re-asked, or (cut off) a failed item
RATES = {"rate_limit": 0.02, "server_error_500": 0.01, "unavailable_503": 0.01, "reset": 0.01,
         "malformed_json": 0.01, "wrong_shape": 0.01, "truncated": 0.01, "refusal": 0.005}


# --- designed items: each judge answer, and so each score, is known --------------------------------


def design(i: int) -> tuple[int, int]:
    """(claims, supported) of item i: 0 to 2 claims (none: not scorable)."""
    claims = i % 3
    return claims, (i * 7) % (claims + 1)


def expected_faithfulness(i: int) -> tuple[str, float | None]:
    claims, supported = design(i)
    return ("not_scorable", None) if claims == 0 else ("scored", round(supported / claims, 2))


def make_items(n: int, *, copies_of: int | None = None) -> list[dict[str, Any]]:
    """`n` items, each with its own ground truth (a result on the wrong item would show). With
    `copies_of`, item i says what item i % copies_of says (its judge calls are the same)."""
    items = []
    for i in range(n):
        j = i if copies_of is None else i % copies_of
        items.append({"id": f"r{i:05d}", "output": f"ITEM-{j:05d}: the sky is blue and grass is green.",
                      "context": ["The sky is blue.", "Grass is green."],
                      "ground_truth": f"ITEM-{j:05d}: the sky is {'blue' if i % 2 else 'grey'}, grass {i % 97}."})
    return items


_MARKER = re.compile(r"ITEM-(\d{5})")
_CLAIM = re.compile(r"CLAIM:\s*<<<\s*ITEM-\d{5} claim (\d+)")


def answer(request: dict) -> dict:
    """The healthy judge: the designed claims of the item asked about, or a claim's verdict."""
    text = " ".join(m["content"] for m in request["messages"] if isinstance(m.get("content"), str))
    i = int(_MARKER.search(text).group(1))  # type: ignore[union-attr]
    claims, supported = design(i)
    stage = (request.get("tools") or [{}])[0].get("function", {}).get("name")
    if stage == "preprocess":
        return {"claims": [f"ITEM-{i:05d} claim {c}" for c in range(claims)]}
    c = int(_CLAIM.search(text).group(1))  # type: ignore[union-attr]
    return {"verdict": "yes" if c < supported else "no", "reason": "checked"}


def calls_of(i: int) -> int:
    """Judge calls faithfulness makes on item i without faults: the claims, then one per claim."""
    return 1 + design(i)[0]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def scorers(server: FakeOpenAIServer, cache: Any = None) -> list[Any]:
    judge = make_judge(MODEL, base_url=server.base_url, api_key="test", timeout_s=5, retry=RETRY, cache=cache)
    return [load_scorer("faithfulness", judge=judge), load_scorer("textual_difference")]


# --- reading what a run left --------------------------------------------------------------------------


def _timeless(value: Any) -> Any:
    """`value` without the seconds the judge took (the one field two runs may not share)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def out_lines(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The out file's lines by (item id, label), each without its run id and timings; fails
    the test on a duplicated or unreadable line."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        key = (line["id"], line["label"])
        assert key not in found, f"{key} is in {path.name} twice"
        found[key] = _timeless({k: v for k, v in line.items() if k != "runId"})
    return found


def stored_lines(store: Path, run_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    from engine.run.store import Store

    with Store(store) as db:
        return {(line["id"], line["label"]): _timeless({k: v for k, v in line.items() if k != "runId"})
                for line in db.results(run_id)}


def assert_designed(lines: dict[tuple[str, str], dict[str, Any]], n: int) -> None:
    """Every item's faithfulness result is the designed one (or a failure that says why)."""
    for i in range(n):
        line = lines[(f"r{i:05d}", "faithfulness")]
        if line.get("error"):
            assert line["error"]["kind"] and line["error"]["message"], line
            continue
        status = "not_scorable" if line.get("notScorable") else "scored"
        assert (status, line.get("score")) == expected_faithfulness(i), (i, line)


# --- the tests ------------------------------------------------------------------------------------------


def test_two_thousand_items_through_two_actors_equal_a_one_process_run(ray_cluster, tmp_path):
    n = 2000
    data = write_jsonl(tmp_path / "items.jsonl", make_items(n))
    runs = {}
    for executor in ("local", "ray"):
        injector = FaultInjector(answer, RATES, seed=11, retry_after_s=0.05)
        with FakeOpenAIServer(injector) as server:
            extra = {"executor": "ray", "ray": RayOptions(actors=2), "concurrency": 8} if executor == "ray" \
                else {"concurrency": 16}
            summary = run_evals(data, scorers(server), out=tmp_path / f"{executor}.jsonl",
                                store=tmp_path / f"{executor}.sqlite", **extra)
        runs[executor] = (summary, dict(injector.injected))
    (local, local_faults), (ray_run, ray_faults) = runs["local"], runs["ray"]
    assert sum(local_faults.values()) > 100 and ray_faults == local_faults  # the same faults, in the same calls
    ours, theirs = out_lines(tmp_path / "local.jsonl"), out_lines(tmp_path / "ray.jsonl")
    assert len(ours) == 2 * n
    assert theirs == ours  # item by item, every field but the run id and the seconds
    assert stored_lines(tmp_path / "ray.sqlite", ray_run.run_id) == theirs
    assert_designed(theirs, n)
    failed = [line for line in theirs.values() if line.get("error")]
    assert failed and {line["error"]["kind"] for line in failed} == {"truncated"}  # faults reached items
    for label in ("faithfulness", "textual_difference"):
        a, b = local.scorers[label], ray_run.scorers[label]
        assert (b.scored, b.not_scorable, b.failed, b.mean) == (a.scored, a.not_scorable, a.failed, a.mean)
    assert (ray_run.items, ray_run.verdict, ray_run.exit_code) == (n, "errors", 2)  # truncated answers fail items
    assert ray_run.judge_calls == local.judge_calls
    assert not (tmp_path / "ray.jsonl.shards").exists()  # merged, then removed


def test_an_actor_killed_mid_run_loses_and_duplicates_nothing(ray_cluster, tmp_path):
    n = 400
    data = write_jsonl(tmp_path / "items.jsonl", make_items(n))
    with FakeOpenAIServer(answer) as server:
        summary = run_evals(data, scorers(server)[:1], out=tmp_path / "out.jsonl", store=tmp_path / "store.sqlite",
                            executor="ray", ray=RayOptions(actors=2, kill_after=60), concurrency=4)
        requests = len(server.requests)
    lines = out_lines(tmp_path / "out.jsonl")
    assert set(lines) == {(f"r{i:05d}", "faithfulness") for i in range(n)}
    assert not any(line.get("error") for line in lines.values())
    assert_designed(lines, n)
    assert stored_lines(tmp_path / "store.sqlite", summary.run_id) == lines
    stats = summary.scorers["faithfulness"]
    assert (summary.items, summary.dataset_problems, stats.scored + stats.not_scorable, stats.failed) == (n, 0, n, 0)
    # the killed actor's unfinished items were scored again: more requests than one pass needs
    assert requests > sum(calls_of(i) for i in range(n))


def _command(data: Path, out: Path, base_url: str, address: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "engine", "eval", "faithfulness", "--data", str(data), "--model", MODEL,
            "--base-url", base_url, "--out", str(out), "--no-cache", "--quiet", "--json", "--executor", "ray",
            "--ray-address", address, "--actors", "2", "--concurrency", "4", *extra]


def _shard_lines(folder: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in folder.glob("*.jsonl")) if folder.is_dir() else 0


def test_resume_after_the_driver_is_stopped_completes_the_run(ray_cluster, tmp_path):
    n = 300
    data = write_jsonl(tmp_path / "items.jsonl", make_items(n))
    out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
    env = {**os.environ, **ray_cluster.driver_environment(), "SCORESPEC_STORE": str(store),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with FakeOpenAIServer(answer, latency_s=0.02) as server:
        command = _command(data, out, server.base_url, ray_cluster.address)
        with open(tmp_path / "first.log", "wb") as log:
            driver = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 300
            while driver.poll() is None and _shard_lines(out.with_name("out.jsonl.shards")) < 60 \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            assert driver.poll() is None, (tmp_path / "first.log").read_text()
            driver.send_signal(signal.SIGKILL)  # the driver stops at once, mid-run
            driver.wait(60)
        kept = out.read_bytes().count(b"\n") if out.exists() else 0
        assert kept < n
        resumed = subprocess.run([*command, "--resume"], env=env, cwd=tmp_path, capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert b"Unclosed" not in resumed.stderr  # the actors closed their judges' connections as they ended
    summary = json.loads(resumed.stdout)
    assert summary["items"] == n and summary["resumed"] > 0  # the second attempt scored only what was left
    lines = out_lines(out)
    assert set(lines) == {(f"r{i:05d}", "faithfulness") for i in range(n)}
    assert_designed(lines, n)
    assert stored_lines(store, summary["runId"]) == lines
    assert not out.with_name("out.jsonl.shards").exists()


def test_two_actors_sharing_a_redis_cache_make_each_judge_call_once(ray_cluster, redis_url, tmp_path):
    require_redis()
    distinct, n = 60, 180  # items i, i + 60 and i + 120 ask the same calls, far apart in the data
    data = write_jsonl(tmp_path / "items.jsonl", make_items(n, copies_of=distinct))
    with FakeOpenAIServer(answer) as server:
        summary = run_evals(data, scorers(server)[:1], store=False, cache=redis_url, executor="ray",
                            ray=RayOptions(actors=2, batch_size=2), concurrency=2)
        asked = [json.dumps(r["messages"], sort_keys=True) for r in server.requests]
    calls = sum(calls_of(i) for i in range(distinct))
    assert len(asked) == len(set(asked)) == calls  # each distinct call reached the judge once
    usage = summary.usage["faithfulness"]
    assert (usage.calls, usage.cache_misses, usage.cache_hits) == (calls, calls, 2 * calls)
    stats = summary.scorers["faithfulness"]
    assert stats.scored + stats.not_scorable == n and stats.failed == 0


def test_one_rate_limit_for_the_cluster_and_each_node_s_sqlite_cache(ray_cluster, tmp_path):
    n, rate = 60, 20.0
    data = write_jsonl(tmp_path / "items.jsonl", make_items(n))
    cache = tmp_path / "judge-cache.sqlite"  # a path: that file on every node (here, one node)
    started: list[float] = []

    def timed(request: dict) -> dict:  # when each request reached the judge
        started.append(time.monotonic())
        return answer(request)

    with FakeOpenAIServer(timed) as server:
        first = run_evals(data, scorers(server, cache=cache)[:1], store=False, executor="ray", rate_limit=rate,
                          ray=RayOptions(actors=2), concurrency=8)
        limited = list(started)
        again = run_evals(data, scorers(server, cache=cache)[:1], store=False, executor="ray",
                          ray=RayOptions(actors=2), concurrency=8)
        requests = len(server.requests)
    calls = sum(calls_of(i) for i in range(n))
    assert len(limited) == calls == first.judge_calls
    # one bucket for both actors: any 2 s hold at most its burst (rate) and 2 × rate more requests, give or
    # take a few that reach the server together (a bucket per actor would let through twice as many)
    assert max(sum(1 for t in limited if t0 <= t < t0 + 2.0) for t0 in limited) <= 3 * rate + 10
    assert requests == calls and again.judge_calls == 0  # the second run: every answer from the node's file
    assert again.usage["faithfulness"].cache_hits == calls and again.scores == first.scores


def test_the_cli_starts_its_own_ray_reads_csv_and_parquet_and_stops_it(tmp_path):
    from conftest import require_ray

    require_ray()
    import pandas as pd

    items = make_items(40)
    folder = tmp_path / "data"
    folder.mkdir()
    pd.DataFrame(items[:20]).drop(columns=["context"]).to_csv(folder / "a.csv", index=False)
    pd.DataFrame(items[20:]).to_parquet(folder / "b.parquet")
    ray_tmp = Path(tempfile.mkdtemp(prefix="ssr-"))  # short: Ray's socket paths must stay short
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-m", "engine", "eval", "textual_difference", "--data", str(folder),
                           "--out", str(tmp_path / "out.jsonl"), "--quiet", "--json", "--executor", "ray",
                           "--actors", "1", "--threshold", "textual_difference=0.1"],
                          env=env, cwd=tmp_path, capture_output=True, timeout=600)
    try:
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        assert any(ray_tmp.rglob("raylet.out"))  # a Ray did run there
        assert processes_naming(str(ray_tmp)) == []  # and it is gone, every process of it
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    summary = json.loads(done.stdout)
    assert (summary["items"], summary["verdict"]) == (40, "passed")
    ray_lines = out_lines(tmp_path / "out.jsonl")
    local = run_evals(items, ["textual_difference"], out=tmp_path / "local.jsonl", store=False)
    assert local.items == 40 and ray_lines == out_lines(tmp_path / "local.jsonl")


def test_traces_are_scored_on_ray_as_in_one_process(ray_cluster, tmp_path):
    from otel_spans import captured, openinference_trace, write_otlp

    from engine.traces.assemble import TraceOptions
    from engine.traces.source import TraceSource

    with captured() as (tracer, exporter):
        for n in range(12):
            openinference_trace(tracer, answer="Paris is the capital of France." if n % 3 else "Lyon.")
        spans = list(exporter.get_finished_spans())
    path = write_otlp(tmp_path / "traces.jsonl", [spans])
    rows = {}
    for executor in ("local", "ray"):
        extra = {"executor": "ray", "ray": RayOptions(actors=1)} if executor == "ray" else {}
        summary = run_evals(TraceSource(str(path), TraceOptions("span", ("LLM", "TOOL"))),
                            [load_scorer("includes", options={"expected": "Paris"})],
                            out=tmp_path / f"{executor}.jsonl", store=tmp_path / f"{executor}.sqlite", **extra)
        rows[executor] = out_lines(tmp_path / f"{executor}.jsonl")
        assert summary.items == 24  # an LLM and a TOOL span a trace
    assert rows["ray"] == rows["local"] and len(rows["ray"]) == 24

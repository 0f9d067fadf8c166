"""Batch-evaluation throughput (issue 5): `run_evals` with faithfulness against a fake
OpenAI-compatible server answering after 50 ms, and the peak memory of a large rule-only eval.
Its functions serve the suite (`tests/bench/run.py`); run alone, it prints its own table, and
with ``--profile 32`` where the CPU of a judge call goes:

    python tests/bench/bench_eval.py [--items 300] [--concurrency 1,8,32,128] [--rss-items 10000]
                                     [--profile 32]

The fake server runs in a child process (this script, ``--serve``), so the CPU measured here is
the engine's own: prompt rendering, the openai client and instructor, validation, the store and
the out file. Each faithfulness item makes 3 judge calls (preprocess, then analyze once per
claim for its 2 claims; the reason is written from the verdicts; the server answers by the tool
name instructor sends, which is the stage id, and an analyze call by the claim it asks about),
so the ideal rate at concurrency c is c / (3 × 0.05 s) items/s (the calls per item are
measured, not assumed). Prints a markdown table.

Columns: items/s; share of ideal = items/s ÷ (c / (calls per item × 0.05 s)); CPU ms per judge call = process CPU
time (user + system, this process only) ÷ judge calls. Peak RSS: VmHWM of a child process
running a 10,000-item textual_difference eval (JSONL in, JSONL out, store on), and of the same
child after loading only (the baseline), so the growth with the dataset is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # this checkout's engine, also in the child processes
    sys.path.insert(0, str(ROOT))

LATENCY_S = 0.05


def reply(request: dict) -> dict:
    """The judge's answer, chosen by the stage (the tool's name) and, for analyze (one claim per
    call), by the claim asked about."""
    tools = request.get("tools") or [{}]
    stage = tools[0].get("function", {}).get("name", "")
    if stage == "preprocess":
        return {"claims": ["The Eiffel Tower is in Paris.", "It was completed in 1889."]}
    if stage == "analyze":
        claim = request["messages"][-1]["content"].split("CLAIM:", 1)[-1]
        if "1889" in claim:
            return {"verdict": "unsure", "reason": "No date in the context."}
        return {"verdict": "yes", "reason": "The context says so."}
    return {"reason": "One of the two claims is supported by the context; the date cannot be verified."}


def serve() -> None:
    """Child process: run the fake server, print its URL, stop when stdin closes."""
    from engine.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(reply, latency_s=LATENCY_S) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def fake_server() -> Iterator[str]:
    """The fake server in a child process (this script, ``--serve``); yields its base URL."""
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        yield server.stdout.readline().strip()
    finally:
        server.stdin.close()
        server.wait(timeout=10)


def items(n: int) -> list[dict]:
    return [{"id": i, "input": "Tell me about the Eiffel Tower.",
             "output": f"The Eiffel Tower is in Paris. It was completed in 1889. (answer {i})",
             "context": ["The Eiffel Tower is a wrought-iron lattice tower in Paris, France."]}
            for i in range(n)]


async def one_level(base_url: str, n: int, concurrency: int, profile: bool = False) -> dict:
    from engine.bind.load import load_scorer
    from engine.bind.stack import make_judge
    from engine.judge.retries import RetryPolicy
    from engine.run.evals import arun_evals

    judge = make_judge("openai/test-model", base_url=base_url, api_key="test",
                       retry=RetryPolicy(max_retries=2, base_s=0.01))
    scorer = load_scorer("faithfulness", judge=judge)
    with tempfile.TemporaryDirectory() as tmp:
        # warm up: connections, templates, response models
        await arun_evals(items(min(concurrency, 16)), [scorer], concurrency=concurrency, store=False)
        out = Path(tmp) / "out.jsonl"
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpu0, t0 = time.process_time(), time.perf_counter()
        summary = await arun_evals(items(n), [scorer], concurrency=concurrency, out=out,
                                   store=Path(tmp) / "store.sqlite")
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if profiler is not None:
            profiler.disable()
            print_profile(profiler, summary.judge_calls)
    s = summary.scorers["faithfulness"]
    assert s.scored == n and s.failed == 0, summary.to_json_dict()
    calls = summary.judge_calls
    rate = n / wall
    ideal = concurrency / (calls / n * LATENCY_S)  # judge calls per item, as measured
    return {"concurrency": concurrency, "items": n, "seconds": wall, "items_s": rate, "share": rate / ideal,
            "cpu_ms_call": cpu * 1000 / calls, "calls": calls}


async def warm_rerun(n: int, concurrency: int) -> dict:
    """The faithfulness throughput eval (out file and store written) with a judge-call cache on an
    SQLite file: run once to fill it, then again through a new judge and cache object, as a new
    process would. The fake server runs in this process here, to count the requests the re-run
    makes (it should make none). Returns the first run's requests and seconds, and the re-run's."""
    from engine.bind.load import load_scorer
    from engine.bind.stack import make_judge
    from engine.judge.retries import RetryPolicy
    from engine.run.evals import arun_evals
    from engine.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(reply, latency_s=LATENCY_S) as server, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "judge-cache.sqlite"

        async def run(name: str) -> tuple[Any, float, int]:
            judge = make_judge("openai/test-model", base_url=server.base_url, api_key="test",
                               retry=RetryPolicy(max_retries=2, base_s=0.01), cache=cache)
            before, t0 = len(server.requests), time.perf_counter()
            summary = await arun_evals(items(n), [load_scorer("faithfulness", judge=judge)], concurrency=concurrency,
                                       out=Path(tmp) / f"{name}.jsonl", store=Path(tmp) / "store.sqlite")
            return summary, time.perf_counter() - t0, len(server.requests) - before

        cold, cold_s, cold_requests = await run("cold")
        warm, warm_s, warm_requests = await run("warm")
    s = warm.scorers["faithfulness"]
    assert s.scored == n and s.failed == 0 and warm.scores == cold.scores, warm.to_json_dict()
    assert warm.usage["faithfulness"].cache_hits == 3 * n, warm.usage
    return {"items": n, "concurrency": concurrency, "cold_s": cold_s, "cold_requests": cold_requests,
            "warm_s": warm_s, "warm_requests": warm_requests}


def cached_item_us(n: int) -> float:
    """Engine time (µs) per faithfulness item whose every judge call is a cache hit: `Scorer.arun`
    over the cache layer on an SQLite file, above an instant judge (`bench_engine.InstantJudge`),
    after one pass over the `n` items filled the cache; the timed pass never calls the judge
    (each hit: key, lookup, checksum, the answer validated again against its stage)."""
    from bench_engine import FAITHFULNESS, InstantJudge

    from engine.bind.load import load_scorer
    from engine.judge.cache.layer import CachedJudge
    from engine.judge.cache.sqlite_backend import SQLiteJudgeCache
    from engine.judge.identity import provider_identity

    instant = InstantJudge(FAITHFULNESS)
    instant.cache_identity = provider_identity("bench/instant", mode="tool_call")  # cached like a hosted judge
    rows = [dict(output=f"The tower is in Paris. It opened in 1889. ({i})", input="Tell me about the tower.",
                 context=["The Eiffel Tower, in Paris, opened in 1889."]) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp, SQLiteJudgeCache(Path(tmp) / "judge-cache.sqlite") as cache:
        scorer = load_scorer("faithfulness", judge=CachedJudge(instant, cache))

        async def one_pass() -> list:
            return [await scorer.arun(**row) for row in rows]

        asyncio.run(one_pass())  # fills the cache (and warms templates, validators, the connection)
        instant.calls = 0
        start = time.perf_counter()
        results = asyncio.run(one_pass())
        elapsed = time.perf_counter() - start
    assert instant.calls == 0 and all(r.usage.cache_hits == 4 and r.score is not None for r in results)
    return elapsed / n * 1e6


# Functions whose inclusive time is reported by --profile: where the CPU of one judge call goes.
PROFILE_SPOTS = {
    ("templating.py", "handle_templating"): "instructor: messages rendered as Jinja templates (context= given)",
    ("response_model.py", "prepare_response_model"): "instructor: response model / tool schema, per call",
    ("_transform.py", "async_transform"): "openai: request params transformed by their TypedDicts",
    ("_base_client.py", "_build_request"): "openai: building the HTTP request",
    ("_base_client.py", "_process_response"): "openai: parsing the response into models",
    ("_base_client.py", "_send_request"): "openai: sending through the HTTP client (its transport)",
    ("openai_path.py", "post"): "engine: the request through the SDK's aiohttp session, response parsed (WirePost)",
    ("openai_path.py", "_parse"): "engine: the response read into the SDK's ChatCompletion",
    ("async_validators.py", "reject_async_validators"): "instructor: its async-validator check of the model",
    ("retry.py", "retry_async_v2"): "instructor: the call with re-ask loop (inclusive)",
    ("retry.py", "_initialize_usage"): "instructor: usage accounting (new total, snapshot, sum)",
    ("retry.py", "_usage_snapshot"): "instructor: usage accounting (new total, snapshot, sum)",
    ("usage.py", "update_total_usage"): "instructor: usage accounting (new total, snapshot, sum)",
    ("retries.py", "ask"): "engine: the transport-retry layer (inclusive)",
    ("interpreter.py", "run"): "engine: interpreter (render prompts, expressions, validation)",
    ("language.py", "item_language"): "engine: the item's language detected",
    ("sink.py", "save"): "engine: out-file line + store commit per result",
}


def print_profile(profiler, calls: int) -> None:
    """Per-package own time and a few inclusive hot spots, in ms per judge call (under cProfile,
    which inflates everything about 2-3x; compare shares, not absolute numbers)."""
    import collections
    import pstats
    import re

    stats = pstats.Stats(profiler)
    groups: collections.Counter = collections.Counter()
    total = 0.0
    spots = {}
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (filename, _line, name), (_cc, _nc, own, inclusive, _callers) in entries:
        total += own
        found = re.search(r"site-packages/([^/]+)/", filename)
        group = found.group(1) if found else ("engine" if "/engine/" in filename else "stdlib/builtins")
        groups[group] += own
        key = (os.path.basename(filename), name)
        if key in PROFILE_SPOTS:
            spots[PROFILE_SPOTS[key]] = spots.get(PROFILE_SPOTS[key], 0.0) + inclusive
    out = sys.stderr
    print(f"\n## profile: {total * 1000 / calls:.1f} ms CPU per judge call under cProfile\n", file=out)
    print("| package (own time) | share | ms/call |\n|---|---:|---:|", file=out)
    for group, own in groups.most_common(12):
        print(f"| {group} | {own / total * 100:.0f}% | {own * 1000 / calls:.2f} |", file=out)
    print("\n| hot spot (inclusive) | ms/call |\n|---|---:|", file=out)
    for label, inclusive in sorted(spots.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {inclusive * 1000 / calls:.2f} |", file=out)


def rss_child(n: int, load_only: bool) -> None:
    """Child process: a textual_difference eval over `n` generated items; prints peak RSS (KiB)."""
    from engine.bind.load import load_scorer
    from engine import run_evals

    scorer = load_scorer("textual_difference")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.jsonl"
        with open(data, "w", encoding="utf-8") as f:
            for i in range(n):
                f.write(json.dumps({"id": i, "output": f"The quick brown fox {i} jumps over the lazy dog " * 4,
                                    "ground_truth": f"The quick brown fox {i} jumped over a lazy dog " * 4}) + "\n")
        if not load_only:
            t0 = time.perf_counter()
            summary = run_evals(str(data), [scorer], concurrency=32, out=Path(tmp) / "out.jsonl",
                                store=Path(tmp) / "store.sqlite")
            assert summary.scorers["textual_difference"].scored == n
            print(f"# {n} items in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    print(peak_rss_self_kib())


def peak_rss_self_kib() -> int:
    """This process's peak RSS in KiB: VmHWM (Linux; reset by exec, unlike ru_maxrss, which a
    child inherits from the forked parent), else ru_maxrss."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_kib(n: int, load_only: bool = False) -> int:
    cmd = [sys.executable, __file__, "--rss-child", str(n)] + (["--load-only"] if load_only else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    sys.stderr.write(done.stderr)
    return int(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300, help="items per concurrency level (default 300)")
    parser.add_argument("--concurrency", default="1,8,32,128")
    parser.add_argument("--rss-items", type=int, default=10_000)
    parser.add_argument("--profile", type=int, default=0, help="profile (cProfile) the run at this concurrency")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.rss_child:
        rss_child(args.rss_child, args.load_only)
        return

    rows = []
    with fake_server() as base_url:
        for c in (int(x) for x in args.concurrency.split(",")):
            n = args.items if c > 1 else max(20, args.items // 10)
            row = asyncio.run(one_level(base_url, n, c, profile=args.profile == c))
            rows.append(row)
            print(f"# c={c}: {row['items_s']:.1f} items/s", file=sys.stderr, flush=True)

    print(f"faithfulness, fake server at {LATENCY_S * 1000:.0f} ms/call, {rows[-1]['calls'] / rows[-1]['items']:.0f} calls/item, "
          f"{os.cpu_count()} CPU(s), Python {sys.version.split()[0]}\n")
    print("| concurrency | items | items/s | share of ideal | CPU ms / judge call |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['items']} | {r['items_s']:.1f} | {r['share'] * 100:.0f}% "
              f"| {r['cpu_ms_call']:.1f} |")
    if args.rss_items:
        base = peak_rss_kib(args.rss_items, load_only=True)
        peak = peak_rss_kib(args.rss_items)
        print(f"\ntextual_difference, {args.rss_items:,} items (JSONL in and out, store on): "
              f"peak RSS {peak / 1024:.0f} MiB (after loading only: {base / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()

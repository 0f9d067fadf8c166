#!/usr/bin/env python3
"""The benchmark suite: scorespec side by side with the reference (Mastra's scorers, on Node).

Also beside Python's difflib, in one run, as one markdown table. The reference is installed from
`tests/bench/reference/` (see below).

    python tests/bench/run.py            # full run, about 5-8 minutes on 2 cores
    python tests/bench/run.py --quick    # tiny sizes, a smoke run (about 30 s): figures mean nothing
    python tests/bench/run.py --only throughput   # sections 3 and 4 (CPU per call) beside the reference

Speed claims count only as ratios measured here, side by side, in this one run. Every figure is
a median of several runs (whole processes where a process is what is measured). Sections:

1. textual difference: pairs/s at 500 characters; time and peak RSS for one 10,000-character
   pair (a fresh process per run) — scorespec, the reference's scorer, `difflib.SequenceMatcher`.
2. engine overhead per item: every shipped spec through `Scorer.arun` with an instant
   in-process judge (LLM specs) or alone (rule specs): the interpreter's own cost.
3. throughput: faithfulness through the real openai + instructor path against a fake
   OpenAI-compatible server answering after 50 ms, beside the reference's `runEvals`
   (`bench_runevals.mjs`, its own fake server at the same latency).
4. judge calls per item, and client CPU per judge call at concurrency 8, 128 and the highest ≤ 32
   where the reference ran (the target: at most 0.11 of the reference's CPU per call).
5. spec load + compile of the whole catalogue and the CLI's cold start (`python -m engine`,
   which is what the `scorespec` console script runs), whole processes.
6. peak RSS of a rule-scorer eval (textual_difference, JSONL in and out, store on) at two
   dataset sizes, and after loading only.
7. the judge-call cache: the faithfulness throughput eval re-run with a warm cache (the requests
   it made, counted by the fake server, and its seconds), and the engine time per fully cached
   faithfulness item. ``--only cache`` runs these rows alone, without the reference.
8. the Ray executor (`bench_ray.py`): faithfulness items/s on a local Ray cluster vs one process
   at the same total concurrency. ``--only ray`` runs these rows alone (they need Ray, so the
   full run leaves them out).
9. the embedded judge before and after (``--only local``, never part of the full suite: it needs
   the model and an older checkout, ``--old PATH|COMMIT``): the README's main job and a BEGIN
   slice through `scorespec eval` on `local`, old and new alternating, and one job against two
   at once (`bench_local.py`). ``--quick`` runs one item of each on `local-tiny`, one round.

The reference must be there: on first use it is installed with `npm ci` into a cache folder
(`reference.py`: `--reference-dir`, ``$SCORESPEC_BENCH_REFERENCE_DIR``, else
``~/.cache/scorespec/bench-reference``). Without node or npm, or when the install fails, the suite
stops and says why (it never prints a table without the reference column).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_engine  # noqa: E402  (puts this checkout's engine first on sys.path)
import bench_eval  # noqa: E402
import bench_local  # noqa: E402
import bench_ray  # noqa: E402
import bench_textual  # noqa: E402
import reference  # noqa: E402

from engine.spec.catalog import builtin_specs_dir, is_abstract  # noqa: E402
from engine.spec.compile import compile_file  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    runs: int  # repetitions of each measurement (medians)
    chars: int  # textual: characters per pair for pairs/s
    long_chars: int  # textual: characters of the long pair
    pairs: int  # textual pairs per run: scorespec
    difflib_pairs: int
    node_pairs: int
    difflib_long_runs: int  # difflib takes seconds per 10,000-character pair
    overhead_items: int
    levels: tuple[int, ...]  # throughput concurrency levels
    items: int  # throughput items per level
    items_c1: int  # at concurrency 1
    ref_items: int  # the reference's items per run
    ref_items_c1: int  # at concurrency 1
    rss_items: tuple[int, int]  # two dataset sizes for the memory rows
    cached_items: int  # engine time per fully cached item: items per run


FULL = Sizes(runs=5, chars=500, long_chars=10_000, pairs=5000, difflib_pairs=300, node_pairs=300,
             difflib_long_runs=3, overhead_items=2000, levels=(1, 8, 32, 128), items=300, items_c1=30, ref_items=96,
             ref_items_c1=24, rss_items=(1_000, 10_000), cached_items=1000)
QUICK = Sizes(runs=1, chars=500, long_chars=2_000, pairs=200, difflib_pairs=20, node_pairs=20,
              difflib_long_runs=1, overhead_items=50, levels=(1, 8), items=16, items_c1=4, ref_items=8, ref_items_c1=8,
              rss_items=(100, 1_000), cached_items=50)


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def median_of(runs: int, measure) -> float:
    return statistics.median(measure() for _ in range(runs))


# --- 1. textual difference ----------------------------------------------------------------------


def textual(sz: Sizes, ref_dir: Path) -> dict:
    seed = 1
    out: dict = {}
    for impl, n in (("scorespec", sz.pairs), ("difflib", sz.difflib_pairs)):
        pairs = bench_textual.make_pairs(n, sz.chars, seed)
        out[impl] = {"pps": median_of(sz.runs, lambda: bench_textual.throughput(impl, pairs)[0])}
        long_runs = sz.runs if impl == "scorespec" else min(sz.runs, sz.difflib_long_runs)
        longs = [bench_textual.long_pair(impl, sz.long_chars, seed + run, 1) for run in range(long_runs)]
        out[impl]["ms"] = statistics.median(r["ms"] for r in longs)
        out[impl]["peak_mb"] = statistics.median(r["peak_mb"] for r in longs)
        log(f"textual {impl}: {out[impl]}")
    node_runs = max(1, min(sz.runs, 3))
    pps = [bench_textual.node_bench(ref_dir, sz.node_pairs, sz.chars, seed)["pairsPerSec"] for _ in range(node_runs)]
    longs = [bench_textual.node_bench(ref_dir, 1, sz.long_chars, seed + run) for run in range(node_runs)]
    out["reference"] = {"pps": statistics.median(pps), "ms": statistics.median(r["msPerPair"] for r in longs),
                        "peak_mb": statistics.median(r["peakRssMB"] for r in longs)}
    log(f"textual reference: {out['reference']}")
    return out


# --- 2 and 4. engine overhead, judge calls per item ---------------------------------------------


def overhead(sz: Sizes) -> list[dict]:
    rows = []
    for path in sorted(builtin_specs_dir().glob("*.yaml")):
        if is_abstract(path):  # a base for other specs, not run
            continue
        spec_id = path.stem
        compiled = compile_file(path)
        uses_judge = compiled.uses_judge
        per_element = [stage.id for stage in compiled.stages if getattr(stage, "for_each", None)]
        if uses_judge and spec_id not in bench_engine.ANSWERS:
            raise SystemExit(f"LLM spec {spec_id!r} has no canned judge answers: add them to "
                             f"tests/bench/bench_engine.py ANSWERS")
        answers = bench_engine.ANSWERS.get(spec_id) if uses_judge else None
        runs = [bench_engine.per_item_us(spec_id, answers, sz.overhead_items) for _ in range(sz.runs)]
        rows.append({"id": spec_id, "judge": uses_judge, "ms": statistics.median(us for us, _ in runs) / 1000,
                     "calls": runs[0][1], "per_element": per_element})
        log(f"overhead {rows[-1]}")
    return rows


# --- 3. throughput ------------------------------------------------------------------------------


def throughput(sz: Sizes) -> dict[int, dict]:
    out = {}
    with bench_eval.fake_server() as base_url:
        for c in sz.levels:
            n = sz.items if c > 1 else sz.items_c1
            runs = [asyncio.run(bench_eval.one_level(base_url, n, c)) for _ in range(sz.runs)]
            out[c] = {key: statistics.median(r[key] for r in runs) for key in ("items_s", "share", "cpu_ms_call")}
            out[c]["calls_item"] = runs[0]["calls"] / runs[0]["items"]
            log(f"throughput c={c}: {out[c]}")
    return out


def reference_throughput(sz: Sizes, ref_dir: Path) -> dict[int, dict]:
    """The reference's runEvals (workflow mode: a precomputed output, no target call), one node
    process per level; a level where it fails is recorded with its error, not hidden."""
    with tempfile.TemporaryDirectory(prefix="scorespec-bench-") as tmp:
        return _reference_levels(sz, ref_dir, Path(tmp) / "runevals.json")


def _reference_levels(sz: Sizes, ref_dir: Path, result: Path) -> dict[int, dict]:
    out = {}
    for c in sz.levels:
        n = sz.ref_items_c1 if c == 1 else sz.ref_items
        result.unlink(missing_ok=True)
        cmd = ["node", "bench_runevals.mjs", "--n", str(n), "--latency-ms", str(int(bench_eval.LATENCY_S * 1000)),
               "--concurrency", str(c), "--repeats", str(min(sz.runs, 3)), "--modes", "workflow",
               "--warmup", str(min(8, n)), "--json", str(result)]
        for _attempt in range(2):  # under load its fake server may drop a reused connection: once more
            done = subprocess.run(cmd, cwd=ref_dir, capture_output=True, text=True, timeout=900)
            if done.returncode == 0:
                break
            log(f"reference runEvals c={c} failed: {done.stderr[-1500:]}")
        if done.returncode != 0:
            errors = [line.strip() for line in done.stderr.splitlines() if "Error" in line] or ["no message"]
            out[c] = {"failed": errors[0].rsplit("]: ", 1)[-1][:80]}
            continue
        s = json.loads(result.read_text())["summary"][0]
        if s["badScores"] or s["unmatchedReplies"]:
            raise SystemExit(f"reference runEvals scored wrongly: {s}")
        out[c] = {"items_s": s["itemsPerS_median"], "share": s["share_median"], "calls_item": s["judgeCallsPerItem"],
                  "cpu_ms_call": s["cpuMsPerItem_median"] / s["judgeCallsPerItem"]}
        log(f"reference runEvals c={c}: {out[c]}")
    return out


# --- 5. load + compile, cold start --------------------------------------------------------------

#: What `validate` cannot start without: the libraries it imports (typer parses a path argument
#: through a pydantic TypeAdapter), as the floor its cold start is read against.
LIBRARIES = "import pydantic, typer, jinja2.sandbox, yaml, jsonschema_rs; pydantic.TypeAdapter(list[str])"


def startup(sz: Sizes) -> dict:
    runs = max(3, sz.runs * 2) if sz is FULL else 1
    load_s, n_specs = bench_engine.load_compile_s(runs)
    return {"load_s": load_s, "specs": n_specs, "runs": runs,
            "python": bench_engine.whole_process([sys.executable, "-c", "pass"], runs)["s"],
            "libraries": bench_engine.whole_process([sys.executable, "-c", LIBRARIES], runs)["s"],
            "help": bench_engine.whole_process(bench_engine.cli("--help"), runs)["s"],
            "validate": bench_engine.whole_process(bench_engine.cli("validate"), runs)["s"]}


# --- 6. memory ----------------------------------------------------------------------------------


def memory(sz: Sizes) -> dict:
    small, large = sz.rss_items
    return {"load": bench_eval.peak_rss_kib(large, load_only=True) / 1024,
            small: bench_eval.peak_rss_kib(small) / 1024, large: bench_eval.peak_rss_kib(large) / 1024}


# --- 7. the judge-call cache ---------------------------------------------------------------------


def cache_rows(sz: Sizes) -> dict:
    """The throughput eval at the highest level ≤ 32 run twice on one cache (medians of the
    re-run), and the engine time per fully cached faithfulness item."""
    level = max(c for c in sz.levels if c <= 32)
    runs = [asyncio.run(bench_eval.warm_rerun(sz.items, level)) for _ in range(sz.runs)]
    out = {"level": level, "items": sz.items, "requests": max(r["warm_requests"] for r in runs),
           "cold_requests": runs[0]["cold_requests"],
           "warm_s": statistics.median(r["warm_s"] for r in runs),
           "cold_s": statistics.median(r["cold_s"] for r in runs),
           "cached_item_ms": median_of(sz.runs, lambda: bench_eval.cached_item_us(sz.cached_items)) / 1000}
    log(f"judge cache: {out}")
    return out


def cache_note(ca: dict) -> str:
    return (f"Judge-call cache: the first run of the {ca['items']:,}-item eval made {ca['cold_requests']:,} judge "
            f"requests in {ca['cold_s']:.2f} s (the items share their claims, so it already hits on them); the re-run "
            f"is served from an SQLite cache file through a new judge, as a new process would be.")


def cache_table_rows(ca: dict) -> list[tuple[str, ...]]:
    n, level = ca["items"], ca["level"]
    return [
        ("7", f"faithfulness eval of {n:,} items re-run with a warm judge-call cache: judge requests",
         f"{ca['requests']:,}", "—", "—", "", target("0", ca["requests"] == 0)),
        ("7", f"faithfulness eval of {n:,} items re-run with a warm judge-call cache: seconds at concurrency {level}",
         num(ca["warm_s"], 2), "—", "—", "", ""),
        ("7", "engine time ms per fully cached faithfulness item (4 cache hits)", num(ca["cached_item_ms"], 2), "—",
         "—", "", target("≤ 1 ms", ca["cached_item_ms"] <= 1)),
    ]


# --- the table ----------------------------------------------------------------------------------

HEADER = ["| # | measure | scorespec | reference (Mastra, Node) | Python alternative (difflib) "
          "| scorespec vs reference | target |",
          "|---|---|---:|---:|---:|---:|---|"]


def num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


def target(text: str, met: bool) -> str:
    return f"{text} {'✓' if met else '✗'}"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = " ".join(line.split(":", 1)[1].split())
                break
        mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
        ram = f"{mem_kib / 1024 ** 2:.0f} GiB RAM"
    except OSError:
        ram = "RAM unknown"
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{cpu}, {os.cpu_count()} cores, {ram}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, Node {node.lstrip('v')}")


def table(sz: Sizes, tx: dict, oh: list[dict], tp: dict, ref_tp: dict, st: dict, mem: dict, ca: dict) -> list[str]:
    s, r, d = tx["scorespec"], tx["reference"], tx["difflib"]
    lc = f"{sz.long_chars:,}"
    pps_ratio, ms_ratio = s["pps"] / r["pps"], r["ms"] / s["ms"]
    rows = [
        ("1", f"textual difference: pairs/s, {sz.chars} chars", num(s["pps"]), num(r["pps"], 1), num(d["pps"], 1),
         f"{times(pps_ratio)} faster", target("≥ 40×", pps_ratio >= 40)),
        ("1", f"textual difference: ms per pair, {lc} chars", num(s["ms"], 1), num(r["ms"]), num(d["ms"]),
         f"{times(ms_ratio)} faster", target("≥ 300×", ms_ratio >= 300)),
        ("1", f"textual difference: peak RSS MB, {lc} chars", num(s["peak_mb"]), num(r["peak_mb"]),
         num(d["peak_mb"]), f"{times(r['peak_mb'] / s['peak_mb'])} less", target("≤ 100 MB", s["peak_mb"] <= 100)),
    ]
    for o in oh:
        kind = f"{o['calls']} judge calls, instant judge" if o["judge"] else "rule spec"
        rows.append(("2", f"engine overhead ms/item: {o['id']} ({kind})", num(o["ms"], 2), "—", "—", "",
                     target("≤ 1 ms", o["ms"] <= 1) if o["judge"] else ""))
    rows += speed_rows(sz, tp, ref_tp)
    level = max(c for c in sz.levels if c <= 32 and "failed" not in ref_tp[c])
    for o in oh:
        if o["judge"]:
            ref_calls = {"faithfulness": num(ref_tp[level]["calls_item"]),
                         "answer_similarity": "3 (from its source)"}.get(o["id"], "—")  # the others: not measured
            varies = f" (varies: `for_each` stage {', '.join(o['per_element'])} asks once per element)" \
                if o["per_element"] else ""
            rows.append(("4", f"judge calls per item: {o['id']}{varies}", str(o["calls"]), ref_calls, "—", "", ""))
    rows += cpu_rows(sz, tp, ref_tp)
    rows += [
        ("5", f"load + compile all {st['specs']} shipped specs, imports included (ms)", num(st["load_s"] * 1000),
         "—", "—", "", target("< 1 s", st["load_s"] < 1)),
        ("5", "CLI cold start: `scorespec --help` (ms)", num(st["help"] * 1000), "—", "—", "",
         target("< 1 s", st["help"] < 1)),
        ("5", "CLI cold start: `scorespec validate`, whole catalogue (ms)", num(st["validate"] * 1000), "—", "—", "",
         target("< 1 s", st["validate"] < 1)),
    ]
    small, large = sz.rss_items
    growth = mem[large] - mem[small]
    rows += [
        ("6", "peak RSS MiB: rule-scorer eval, after loading only", num(mem["load"]), "—", "—", "", ""),
        ("6", f"peak RSS MiB: rule-scorer eval of {small:,} items", num(mem[small]), "—", "—", "", ""),
        ("6", f"peak RSS MiB: rule-scorer eval of {large:,} items", num(mem[large]), "—", "—", "",
         target(f"flat: {growth:+.0f} MiB over {small:,} items", growth <= 10)),
    ]
    rows += cache_table_rows(ca)
    return HEADER + ["| " + " | ".join(row) + " |" for row in rows]


def speed_rows(sz: Sizes, tp: dict, ref_tp: dict) -> list[tuple[str, ...]]:
    """Section 3: faithfulness items/s at each concurrency level, beside the reference."""
    rows: list[tuple[str, ...]] = []
    for c in sz.levels:
        mine, ref = tp[c], ref_tp[c]
        if "failed" in ref:
            rows.append(("3", f"faithfulness items/s at concurrency {c} (share of ideal), 50 ms server",
                         f"{mine['items_s']:.1f} ({mine['share']:.0%})", f"fails: {ref['failed']}", "—", "", ""))
            continue
        ratio = mine["items_s"] / ref["items_s"]
        rows.append(("3", f"faithfulness items/s at concurrency {c} (share of ideal), 50 ms server",
                     f"{mine['items_s']:.1f} ({mine['share']:.0%})", f"{ref['items_s']:.1f} ({ref['share']:.0%})", "—",
                     f"{times(ratio)} faster", target("≥ 6×", ratio >= 6) if c == 32 else ""))
    return rows


def cpu_rows(sz: Sizes, tp: dict, ref_tp: dict) -> list[tuple[str, ...]]:
    """Section 4: client CPU per judge call at concurrency 8, 128 and the highest ≤ 32 where the
    reference ran, beside the reference's."""
    rows: list[tuple[str, ...]] = []
    level = max(c for c in sz.levels if c <= 32 and "failed" not in ref_tp[c])
    for c in sorted({level, *(c for c in (8, 128) if c in sz.levels)}):
        mine, ref = tp[c]["cpu_ms_call"], ref_tp[c].get("cpu_ms_call")
        share = mine / ref if ref else None  # the target: our CPU as a share of the reference's
        rows.append(("4", f"client CPU ms per judge call (faithfulness, concurrency {c})", num(mine, 2),
                     num(ref, 1) if ref else f"fails: {ref_tp[c]['failed']}", "—",
                     f"{times(ref / mine)} less" if ref else "",
                     target("≤ 0.11 of the reference's", share <= 0.11) if c == level and share else ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run, figures mean nothing")
    parser.add_argument("--only", choices=["throughput", "cache", "ray", "local"], default=None,
                        help="run only these rows (throughput: sections 3 and 4's CPU rows, beside the reference; the "
                             "others without it: cache: section 7, the judge-call cache; "
                             "ray: section 8, the Ray executor; local: section 9, the embedded judge before and after)")
    parser.add_argument("--old", default="03eeb59",
                        help="--only local: the code to compare with, a checkout folder or a commit of this repository "
                             "(default 03eeb59, main before issue 23)")
    parser.add_argument("--old-python", default=sys.executable,
                        help="--only local: the Python that runs the old code (e.g. another virtual environment's)")
    parser.add_argument("--begin-items", type=int, default=100, help="--only local: BEGIN items per job (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="--only local: main-job rounds, before and after (default 3)")
    parser.add_argument("--no-old-pair", action="store_true",
                        help="--only local: run one job alone and two at once on this checkout only (the old code's pair is "
                             "the slowest part)")
    parser.add_argument("--reference-dir", type=Path, default=None,
                        help="where the reference is installed (default $SCORESPEC_BENCH_REFERENCE_DIR, else "
                             "$SCORESPEC_CACHE/bench-reference, else ~/.cache/scorespec/bench-reference)")
    parser.add_argument("--page", type=Path, default=None,
                        help="also write the result as a dated Markdown page to this file (e.g. "
                             "docs/benchmarks/measured/full-suite.md, which the docs site's Performance page includes)")
    args = parser.parse_args(argv)
    lines = suite(args)
    if lines is None:
        return 2
    print("\n".join(lines))
    if args.page is not None:
        write_page(args.page, lines, argv if argv is not None else sys.argv[1:])
    return 0


def suite(args: argparse.Namespace) -> list[str] | None:
    """The run the arguments ask for, as Markdown lines (None: it could not run; the reason is on stderr)."""
    sz, out = (QUICK if args.quick else FULL), []
    if args.only == "ray":
        started = time.perf_counter()
        rows = bench_ray.ray_rows(200 if args.quick else 2000, [(2, 4)] if args.quick else [(1, 32), (2, 16)],
                                  1 if args.quick else 3)
        out.append(f"Machine: {machine()}; {(time.perf_counter() - started) / 60:.1f} min; only the Ray executor rows"
              f"{'; --quick: tiny sizes, the figures mean nothing' if args.quick else ''}.\n")
        out.append("\n".join(HEADER + ["| " + " | ".join(row) + " |" for row in bench_ray.table_rows(rows)]))
        out.append("\nRay: a local cluster of 2 CPUs on 127.0.0.1, ½ CPU per actor, started once for every run (a warm-up "
              "run first); the fake server (50 ms) in a child process. The Python-alternative column is one process "
              "at the same total concurrency. Medians of the runs.")
        return out
    if args.only == "local":
        return local_rows(args)
    if args.only == "cache":
        started = time.perf_counter()
        ca = cache_rows(sz)
        out.append(f"Machine: {machine()}; {(time.perf_counter() - started) / 60:.1f} min; only the judge-call cache rows"
              f"{'; --quick: tiny sizes, the figures mean nothing' if args.quick else ''}.\n")
        out.append("\n".join(HEADER + ["| " + " | ".join(row) + " |" for row in cache_table_rows(ca)]))
        out.append("\n" + cache_note(ca))
        return out

    try:
        ref_dir = reference.install(args.reference_dir)
    except reference.ReferenceUnavailable as exc:
        print(f"error: the reference is needed for a side-by-side run and is not usable: {exc}", file=sys.stderr)
        return None
    load_start, started = os.getloadavg()[0], time.perf_counter()
    if args.only == "throughput":
        tp, ref_tp = throughput(sz), reference_throughput(sz, ref_dir)
        out.append(f"Machine: {machine()}. Load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the "
                   f"end; {(time.perf_counter() - started) / 60:.1f} min; only the throughput rows"
                   f"{'; --quick: tiny sizes, the figures mean nothing' if args.quick else ''}.\n")
        out.append("\n".join(HEADER + ["| " + " | ".join(row) + " |"
                                        for row in speed_rows(sz, tp, ref_tp) + cpu_rows(sz, tp, ref_tp)]))
        return out
    tx = textual(sz, ref_dir)
    oh = overhead(sz)
    tp = throughput(sz)
    ref_tp = reference_throughput(sz, ref_dir)
    st = startup(sz)
    mem = memory(sz)
    ca = cache_rows(sz)
    minutes = (time.perf_counter() - started) / 60

    out.append(f"Machine: {machine()}. Load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"{minutes:.1f} min{'; --quick: tiny sizes, the figures mean nothing' if args.quick else ''}.\n")
    out.append("\n".join(table(sz, tx, oh, tp, ref_tp, st, mem, ca)))
    out.append(f"\nMedians of {sz.runs} run(s). Textual pairs: {sz.pairs:,} (scorespec), {sz.difflib_pairs:,} (difflib), "
          f"{sz.node_pairs:,} (reference) per run; the {sz.long_chars:,}-character pair in a fresh process per run "
          f"({min(sz.runs, sz.difflib_long_runs)} run(s) for difflib). Throughput: {sz.items} items per level "
          f"(the reference {sz.ref_items}; fewer at concurrency 1). Cold start: `python -m engine` from this "
          f"checkout; a bare `python -c pass` takes {st['python'] * 1000:.0f} ms here and importing the libraries "
          f"`validate` needs (pydantic, typer, Jinja, PyYAML, jsonschema-rs) {st['libraries'] * 1000:.0f} ms. Memory: VmHWM of a child "
          f"process. The reference's answer-similarity call count is read from its source, not measured. {cache_note(ca)}")
    return out


LOCAL_HEADER = ["| # | measure | before | after | after vs before | target |", "|---|---|---:|---:|---:|---|"]


def local_rows(args: argparse.Namespace) -> list[str] | None:
    """Section 9 alone: the embedded judge, the `--old` code against this checkout."""
    quick = dict(rounds=1, begin_items=1, main_items=1, model="local-tiny") if args.quick else \
        dict(rounds=args.rounds, begin_items=args.begin_items, main_items=6, model="local")
    started = time.perf_counter()
    try:
        m = bench_local.measure(args.old, old_python=args.old_python, pair_before=not args.no_old_pair, **quick)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    return [f"Machine: {machine()}; {(time.perf_counter() - started) / 60:.1f} min; the embedded judge `{m['model']}` "
            f"before ({args.old}) and after (this checkout, its defaults)"
            f"{'; --quick: one item on local-tiny, the figures mean nothing' if args.quick else ''}.\n",
            "\n".join(LOCAL_HEADER + ["| " + " | ".join(row) + " |" for row in bench_local.rows(m)]),
            f"\nJobs, in the order run: {bench_local.loads(m)}."]


def write_page(path: Path, lines: list[str], argv: list[str]) -> None:
    """`lines` as a dated Markdown page: the date (UTC), the command that measured it, then the
    machine line, the table and its notes exactly as printed."""
    command = " ".join(["python tests/bench/run.py", *argv])
    when = time.strftime("%Y-%m-%d", time.gmtime())
    text = "\n".join([f"Measured on {when} with `{command}` (the load averages say how busy the machine was):",
                      "", *lines, ""])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark: scorespec's textual_difference vs difflib vs Mastra's JS scorer.

Not a pytest test. Run from anywhere:

    python tests/bench/bench_textual.py            # full run (a few minutes)
    python tests/bench/bench_textual.py --quick    # tiny sizes, no node (seconds)

Columns:

- scorespec: ``engine.functions.text.textual_difference`` (rapidfuzz Indel
  alignment: ratio, changes, lengthDiff, confidence).
- difflib: ``difflib.SequenceMatcher(None, a, b, autojunk=False)`` with
  ``ratio()`` + ``get_opcodes()``. autojunk is off because with it every
  letter of a long English-like text counts as "popular junk" and the ratio is
  meaningless. difflib's ratio is Ratcliff/Obershelp, not a true LCS, so its
  mean ratio is slightly lower.
- mastra: ``node bench_textual.mjs N CHARS SEED`` from the reference folder
  (``../shared/anchors/mastra`` beside the clone, override with ``--mastra-dir``), i.e. the
  real ``@mastra/evals`` scorer's ``.run()`` (its pipeline overhead included;
  the tiny-pair overhead is printed below the table). Installed once with
  ``npm ci`` into ``~/.cache/scorespec-bench/mastra``. Skipped with a note if
  node/npm are missing or with ``--quick`` / ``--no-node``.

Pairs are the JS script's: a random word text of CHARS characters and a copy
with ~10% of its words replaced, drawn from mulberry32(SEED), reimplemented
here bit for bit so every column sees the same pairs (the "mean ratio" row
checks it: scorespec and Mastra compute the same LCS ratio).

Rows: pairs/s on CHARS-character pairs (one process, after a warm-up); time
per pair and peak memory on one pair of LONG-character texts, each measured in
a fresh subprocess (Python: ``resource.getrusage`` ru_maxrss; Node: its
``process.resourceUsage().maxRSS``), shown as peak RSS and, in brackets, the
increase over the same process's RSS before the comparison (Python) or over a
10-character run (Node). Every figure is the median of ``--runs`` runs. The
ratio columns are scorespec / reference (for pairs/s above 1 means scorespec
is faster; for time and memory below 1 means scorespec is cheaper).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.functions.text import textual_difference  # noqa: E402

DEFAULT_MASTRA = REPO.parent / "shared" / "anchors" / "mastra"  # ../shared beside the clone
MASTRA_FILES = ("package-lock.json", "lib.mjs", "bench_textual.mjs", "bench_runevals.mjs", "fake_openai_server.mjs")
CACHE = Path.home() / ".cache" / "scorespec-bench" / "mastra"

WORDS = ("the quick brown fox jumps over lazy dog while agents evaluate scores across many "
         "different inputs and outputs with care").split(" ")


# -- the JS script's pair generator, bit for bit -------------------------------
def _imul(a: int, b: int) -> int:
    return (a * b) & 0xFFFFFFFF


class Mulberry32:
    """mulberry32 PRNG as in bench_textual.mjs; ``rand()`` in [0, 1)."""

    def __init__(self, seed: int):
        self.state = seed & 0xFFFFFFFF

    def rand(self) -> float:
        self.state = (self.state + 0x6D2B79F5) & 0xFFFFFFFF
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296


def make_pairs(n: int, chars: int, seed: int) -> list[tuple[str, str]]:
    """The first ``n`` pairs bench_textual.mjs builds for (chars, seed)."""
    rng = Mulberry32(seed)

    def pick() -> str:
        return WORDS[int(rng.rand() * len(WORDS))]

    pairs = []
    for _ in range(n):
        words, total = [], 0
        while total < chars:
            w = pick()
            words.append(w)
            total += len(w) + 1
        a = " ".join(words)[:chars]
        b = " ".join(pick() if rng.rand() < 0.1 else w for w in a.split(" "))
        pairs.append((a, b))
    return pairs


# -- the Python implementations ---------------------------------------------------
def run_scorespec(a: str, b: str) -> float:
    return textual_difference(a, b)["ratio"]


def run_difflib(a: str, b: str) -> float:
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ratio = sm.ratio()
    sm.get_opcodes()
    return ratio


IMPLS = {"scorespec": run_scorespec, "difflib": run_difflib}


def throughput(impl: str, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """(pairs/s, mean ratio) over ``pairs`` after a short warm-up."""
    fn = IMPLS[impl]
    for a, b in pairs[:3]:
        fn(a, b)
    t0 = time.perf_counter()
    total = 0.0
    for a, b in pairs:
        total += fn(a, b)
    secs = time.perf_counter() - t0
    return len(pairs) / secs, total / len(pairs)


def child_long(impl: str, chars: int, seed: int, count: int) -> None:
    """Subprocess body: ``count`` long pairs (seeds seed..), prints
    {"ms": median ms per pair, "peak_mb": peak RSS, "delta_mb": peak RSS minus
    the RSS before the first comparison}."""
    pairs = [make_pairs(1, chars, seed + i)[0] for i in range(count)]
    fn = IMPLS[impl]
    for a, b in make_pairs(2, 100, seed):  # warm the code paths, not the memory
        fn(a, b)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    times = []
    for a, b in pairs:
        t0 = time.perf_counter()
        fn(a, b)
        times.append((time.perf_counter() - t0) * 1000)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ms": statistics.median(times), "peak_mb": peak / 1024,
                      "delta_mb": (peak - before) / 1024}))


def long_pair(impl: str, chars: int, seed: int, count: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child-long", impl, str(chars), str(seed), str(count)],
        check=True, capture_output=True, text=True, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- Mastra (node) ----------------------------------------------------------------
def prepare_mastra(src: Path) -> tuple[Path | None, str]:
    """Copy the reference folder to the cache, ``npm ci`` it once per package-lock.json, and
    refresh its scripts on every call.

    Returns (folder, note); folder is None when node/npm or the sources are
    missing or the install fails.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None, "node/npm not found: Mastra column skipped"
    missing = [f for f in MASTRA_FILES if not (src / f).exists()]
    if missing:
        return None, f"{src} lacks {', '.join(missing)}: Mastra column skipped"
    digest = hashlib.sha256((src / "package-lock.json").read_bytes()).hexdigest()
    stamp = CACHE / ".scorespec-installed"
    note = "cached install"
    if not (stamp.exists() and stamp.read_text().strip() == digest and (CACHE / "node_modules").is_dir()):
        if CACHE.exists():
            shutil.rmtree(CACHE)
        CACHE.mkdir(parents=True)
        _copy_scripts(src)
        print(f"npm ci in {CACHE} (once)...", file=sys.stderr, flush=True)
        res = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                             cwd=CACHE, capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            return None, f"npm ci failed ({res.returncode}): Mastra column skipped; {res.stderr.strip()[-300:]}"
        stamp.write_text(digest)
        note = "fresh install"
    _copy_scripts(src)
    return CACHE, note


def _copy_scripts(src: Path) -> None:
    """The reference folder's files (not node_modules) into the cache, writable (the source is
    read-only)."""
    for f in src.iterdir():
        if f.is_file():
            target = CACHE / f.name
            target.write_bytes(f.read_bytes())
            target.chmod(0o644)


def node_bench(folder: Path, n: int, chars: int, seed: int) -> dict:
    out = subprocess.run(["node", "bench_textual.mjs", str(n), str(chars), str(seed)],
                         cwd=folder, check=True, capture_output=True, text=True, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- table ------------------------------------------------------------------------
def fmt(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "—"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "—"
    r = a / b
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 0.1:
        return f"{r:.3g}×"
    return f"{r:.2g}× (1/{1 / r:,.0f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, 2 runs, no node")
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (median taken)")
    ap.add_argument("--chars", type=int, default=500)
    ap.add_argument("--long-chars", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=5000, help="pairs per run for scorespec")
    ap.add_argument("--difflib-pairs", type=int, default=500)
    ap.add_argument("--node-pairs", type=int, default=300)
    ap.add_argument("--node-runs", type=int, default=3)
    ap.add_argument("--no-node", action="store_true")
    ap.add_argument("--mastra-dir", type=Path, default=DEFAULT_MASTRA)
    ap.add_argument("--long-pairs", type=int, default=5, help="long pairs per scorespec subprocess")
    ap.add_argument("--difflib-long-runs", type=int, default=3, help="difflib takes seconds per long pair")
    ap.add_argument("--child-long", nargs=4, metavar=("IMPL", "CHARS", "SEED", "COUNT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child_long:
        impl, chars, seed, count = args.child_long
        child_long(impl, int(chars), int(seed), int(count))
        return 0
    if args.quick:
        args.runs, args.chars, args.long_chars = 2, 100, 1000
        args.pairs, args.difflib_pairs, args.long_pairs, args.no_node = 300, 50, 2, True

    notes = []
    pps: dict[str, list[float]] = {k: [] for k in ("scorespec", "difflib", "mastra")}
    mean_ratio: dict[str, float] = {}
    long_ms: dict[str, list[float]] = {k: [] for k in pps}
    long_peak: dict[str, list[float]] = {k: [] for k in pps}
    long_delta: dict[str, list[float]] = {k: [] for k in pps}

    n_pairs = {"scorespec": args.pairs, "difflib": args.difflib_pairs}
    pair_sets = {k: make_pairs(n, args.chars, args.seed) for k, n in n_pairs.items()}
    for run in range(args.runs):
        for impl in ("scorespec", "difflib"):
            rate, mr = throughput(impl, pair_sets[impl])
            pps[impl].append(rate)
            mean_ratio[impl] = mr
            if impl == "difflib" and run >= args.difflib_long_runs:
                continue
            count = args.long_pairs if impl == "scorespec" else 1
            r = long_pair(impl, args.long_chars, args.seed + run * count, count)
            long_ms[impl].append(r["ms"])
            long_peak[impl].append(r["peak_mb"])
            long_delta[impl].append(r["delta_mb"])

    node_info = None
    if args.no_node:
        notes.append("Mastra column skipped (--quick/--no-node).")
    else:
        folder, note = prepare_mastra(args.mastra_dir)
        if folder is None:
            notes.append(note)
        else:
            base = node_bench(folder, 1, 10, args.seed)
            for run in range(args.node_runs):
                r = node_bench(folder, args.node_pairs, args.chars, args.seed)
                pps["mastra"].append(r["pairsPerSec"])
                mean_ratio["mastra"] = r["meanScore"]
                node_info = r
                r = node_bench(folder, 1, args.long_chars, args.seed + run)
                long_ms["mastra"].append(r["msPerPair"])
                long_peak["mastra"].append(r["peakRssMB"])
                long_delta["mastra"].append(r["peakRssMB"] - base["peakRssMB"])
            notes.append(
                f"Mastra: node {node_info['node']}, {args.node_pairs} pairs/run, {args.node_runs} runs; "
                f"its .run() pipeline alone costs {node_info['tinyPairOverheadMs']} ms/pair on a 2-character pair; "
                f"its ratio is over UTF-16 units (same as code points here: ASCII).")

    med = {k: (statistics.median(v) if v else None) for k, v in pps.items()}
    ms = {k: (statistics.median(v) if v else None) for k, v in long_ms.items()}
    peak = {k: (statistics.median(v) if v else None) for k, v in long_peak.items()}
    delta = {k: (statistics.median(v) if v else None) for k, v in long_delta.items()}
    # mean ratio of the first node_pairs pairs, for a like-for-like check with Mastra
    k = min(args.node_pairs, args.pairs, args.difflib_pairs)
    mr_prefix = statistics.fmean(run_scorespec(a, b) for a, b in pair_sets["scorespec"][:k])

    def mem(impl: str) -> str:
        if peak[impl] is None:
            return "—"
        return f"{peak[impl]:,.0f} (+{delta[impl]:,.1f})"

    c, lc = args.chars, args.long_chars
    rows = [
        ("| measure | scorespec | difflib | Mastra (node) | scorespec / difflib | scorespec / Mastra |"),
        ("|---|---:|---:|---:|---:|---:|"),
        (f"| pairs/s, {c} chars | {fmt(med['scorespec'])} | {fmt(med['difflib'])} | {fmt(med['mastra'], 1)} "
         f"| {ratio(med['scorespec'], med['difflib'])} | {ratio(med['scorespec'], med['mastra'])} |"),
        (f"| ms per pair, {lc:,} chars | {fmt(ms['scorespec'], 2)} | {fmt(ms['difflib'], 1)} | {fmt(ms['mastra'], 0)} "
         f"| {ratio(ms['scorespec'], ms['difflib'])} | {ratio(ms['scorespec'], ms['mastra'])} |"),
        (f"| peak RSS MB (+ over baseline), {lc:,} chars | {mem('scorespec')} | {mem('difflib')} | {mem('mastra')} "
         f"| {ratio(peak['scorespec'], peak['difflib'])} | {ratio(peak['scorespec'], peak['mastra'])} |"),
        (f"| mean ratio, {c} chars (first {k} pairs) | {mr_prefix:.4f} | "
         f"{statistics.fmean(run_difflib(a, b) for a, b in pair_sets['difflib'][:k]):.4f} | "
         f"{fmt(mean_ratio.get('mastra'), 4)} | | |"),
    ]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    import rapidfuzz

    print(f"## textual difference: scorespec vs difflib vs Mastra (seed {args.seed}, "
          f"median of {args.runs} runs{', quick' if args.quick else ''})\n")
    print("\n".join(rows))
    print()
    print(f"- Python {platform.python_version()}, rapidfuzz {rapidfuzz.__version__}, {os.cpu_count()} cores, "
          f"load average {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} at the end.")
    print(f"- Pairs/s: scorespec {args.pairs} pairs/run, difflib {args.difflib_pairs} pairs/run (same seed, "
          f"the first pairs of one stream). Long pairs: a fresh subprocess per run, {args.long_pairs} pairs in each for "
          f"scorespec (median), 1 for difflib ({min(args.runs, args.difflib_long_runs)} runs) and Mastra.")
    for note in notes:
        print(f"- {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

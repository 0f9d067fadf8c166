#!/usr/bin/env python3
"""Textual-difference measurements for the suite (`tests/bench/run.py`): scorespec's
textual_difference vs `difflib.SequenceMatcher` vs the reference's JavaScript scorer.

- scorespec: ``engine.functions.text.textual_difference`` (rapidfuzz Indel alignment: ratio,
  changes, lengthDiff, confidence).
- difflib: ``difflib.SequenceMatcher(None, a, b, autojunk=False)`` with ``ratio()`` +
  ``get_opcodes()``. autojunk is off because with it every letter of a long English-like text
  counts as "popular junk" and the ratio is meaningless. difflib's ratio is Ratcliff/Obershelp,
  not a true LCS, so its ratio is slightly lower.
- the reference: ``node bench_textual.mjs N CHARS SEED`` in the folder `reference.install()`
  returns (``tests/bench/reference/`` installed once with ``npm ci`` into a cache folder), i.e.
  the real ``@mastra/evals`` scorer's ``.run()``, its pipeline overhead included.

Pairs are the JS script's: a random word text of CHARS characters and a copy with ~10% of its
words replaced, drawn from mulberry32(SEED), reimplemented here bit for bit so every column sees
the same pairs. Long pairs are timed in a fresh process each (this file run as a script), whose
peak RSS (``ru_maxrss``) is reported.
"""

from __future__ import annotations

import difflib
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.functions.text import textual_difference  # noqa: E402

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
        [sys.executable, __file__, impl, str(chars), str(seed), str(count)],
        check=True, capture_output=True, text=True, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the reference (Mastra on Node) ----------------------------------------------------
def node_bench(folder: Path, n: int, chars: int, seed: int) -> dict:
    """``bench_textual.mjs`` in `folder` (an installed reference): its JSON line, with
    ``pairsPerSec``, ``msPerPair`` and ``peakRssMB``."""
    out = subprocess.run(["node", "bench_textual.mjs", str(n), str(chars), str(seed)],
                         cwd=folder, check=True, capture_output=True, text=True, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":  # the child process of `long_pair`: IMPL CHARS SEED COUNT
    child_long(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))

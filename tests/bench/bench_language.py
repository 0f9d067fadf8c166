#!/usr/bin/env python3
"""What settling the item's language costs a rule scorer: `textual_difference` through
`Scorer.run` on 500-character pairs, with ``language="auto"`` (the default: settled per item)
beside ``language="en"`` (given: nothing to settle), in one process, one run.

    python tests/bench/bench_language.py            # about a minute on 2 cores
    python tests/bench/bench_language.py --quick    # a smoke run (figures mean nothing)
    SCORESPEC_BENCH_REPO=../old python tests/bench/bench_language.py   # another checkout's engine

Rows (each a median of ``--rounds`` rounds, the two settings alternating within a round):

- English pairs (the suite's random word pairs, `bench_textual.make_pairs`): items/s with
  ``auto`` and with ``en``, and the share of an ``auto`` item's time spent settling its language
  (1 − en/auto time per item);
- French pairs (the same generator over French words, each text distinct, in every round): the
  same figures when the detector must decide, and again with one text repeated (the detector's
  answer for a sample is remembered);
- the first item in a fresh process (``auto``, English): its milliseconds and whether the
  detector (py3langid) was loaded.

Prints one JSON object; ``--markdown`` prints the table the Performance page holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import os

# the checkout measured: this one, or another (``SCORESPEC_BENCH_REPO``, e.g. an older commit's
# worktree, to measure before and after in one run)
REPO = Path(os.environ.get("SCORESPEC_BENCH_REPO") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

import engine  # noqa: E402,F401  (imported first: bench_textual's own path would otherwise pick this checkout's)
from bench_textual import Mulberry32, make_pairs  # noqa: E402

FRENCH = ("le chat dort sur la table pendant que les enfants jouent dans le jardin avec leurs amis "
          "et une voisine regarde depuis sa fenêtre").split(" ")


def french_pairs(n: int, chars: int, seed: int, first: int = 0) -> list[tuple[str, str]]:
    """`n` distinct French word pairs of about `chars` characters: a random text and a copy
    with about 10 % of its words replaced (each text starts with its number, from `first`, so
    none repeats)."""
    rng = Mulberry32(seed)
    pairs = []
    for index in range(first, first + n):
        words, total = [str(index)], 0
        while total < chars:
            word = FRENCH[int(rng.rand() * len(FRENCH))]
            words.append(word)
            total += len(word) + 1
        a = " ".join(words)[:chars]
        b = " ".join(FRENCH[int(rng.rand() * len(FRENCH))] if rng.rand() < 0.1 else w for w in a.split(" "))
        pairs.append((a, b))
    return pairs


def items_per_s(scorer, pairs: list[tuple[str, str]]) -> float:
    """Items per second of `scorer.run` over `pairs` (output, ground truth)."""
    t0 = time.perf_counter()
    for a, b in pairs:
        result = scorer.run({"output": b, "ground_truth": a})
        assert result.error is None and result.score is not None, result.error
    return len(pairs) / (time.perf_counter() - t0)


def side_by_side(pairs_for: Callable[[int], list[tuple[str, str]]], rounds: int) -> dict:
    """Median items/s with ``auto`` and with ``en``, alternating per round, each (round, setting)
    over its own pairs, ``pairs_for(i)`` (so the detector's memory of earlier texts counts only
    where the pairs repeat), and the share of an ``auto`` item's time spent settling its language."""
    from engine import load_scorer

    scorers = {"auto": load_scorer("textual_difference"),
               "en": load_scorer("textual_difference").with_language("en")}
    for scorer in scorers.values():
        items_per_s(scorer, pairs_for(0)[:20])  # warm up (the detector loaded, if needed)
    rates: dict[str, list[float]] = {"auto": [], "en": []}
    for index in range(rounds):
        for offset, (name, scorer) in enumerate(scorers.items()):
            rates[name].append(items_per_s(scorer, pairs_for(1 + 2 * index + offset)))
    auto, given = statistics.median(rates["auto"]), statistics.median(rates["en"])
    return {"auto_items_per_s": round(auto), "en_items_per_s": round(given),
            "language_share": round(max(0.0, 1 - auto / given), 3)}


def first_item() -> dict:
    """In this (fresh) process: the first English item's milliseconds through `Scorer.run`
    (``auto``), spec loading apart, and whether py3langid was imported."""
    from engine import load_scorer

    scorer = load_scorer("textual_difference")
    a, b = make_pairs(1, 500, 7)[0]
    t0 = time.perf_counter()
    scorer.run({"output": b, "ground_truth": a})
    ms = (time.perf_counter() - t0) * 1000
    return {"first_item_ms": round(ms, 1), "detector_loaded": "py3langid" in sys.modules}


def fresh_first_item(runs: int) -> dict:
    """`first_item` in `runs` fresh processes: the median milliseconds, and whether any loaded
    the detector."""
    found = [json.loads(subprocess.run([sys.executable, __file__, "--first-item"], check=True, env=os.environ,
                                       capture_output=True, text=True, timeout=300).stdout.strip().splitlines()[-1])
             for _ in range(runs)]
    return {"first_item_ms": statistics.median(f["first_item_ms"] for f in found),
            "detector_loaded": any(f["detector_loaded"] for f in found)}


def measure(quick: bool) -> dict:
    n, rounds, runs = (100, 1, 1) if quick else (2000, 5, 5)
    french_one = french_pairs(1, 500, 42)
    return {"items": n, "rounds": rounds,
            "first": fresh_first_item(runs),
            "english": side_by_side(lambda i: make_pairs(n, 500, 42 + i), rounds),
            "french_distinct": side_by_side(lambda i: french_pairs(n, 500, 42 + i, first=i * n), rounds),
            "french_repeated": side_by_side(lambda i: french_one * n, rounds)}


def markdown(figures: dict) -> str:
    rows = [("English, 500 characters", figures["english"]),
            ("French, 500 characters, every text distinct", figures["french_distinct"]),
            ("French, 500 characters, one text repeated", figures["french_repeated"])]
    lines = ["| pairs | `language` auto (items/s) | `language=\"en\"` (items/s) | share of an item settling its language |",
             "| --- | ---: | ---: | ---: |"]
    for name, row in rows:
        lines.append(f"| {name} | {row['auto_items_per_s']:,} | {row['en_items_per_s']:,} | "
                     f"{row['language_share'] * 100:.0f} % |")
    first = figures["first"]
    lines.append("")
    lines.append(f"First English item in a fresh process: {first['first_item_ms']} ms, detector "
                 f"{'loaded' if first['detector_loaded'] else 'not loaded'}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--first-item", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_item:
        print(json.dumps(first_item()))
        return
    figures = measure(args.quick)
    print(markdown(figures) if args.markdown else json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Engine overhead and throughput of this checkout beside another commit's, measured alternately.

    python tests/bench/side_by_side.py --old COMMIT [--rounds 5] [--overhead-items 2000] [--items 300]

Each round runs, in a fresh process per checkout (old first, then this one), the suite's section 2
(engine overhead per item, every shipped spec, `run.overhead`) and section 3 (faithfulness through
the real openai + instructor path against the fake server answering after 50 ms, `run.throughput`)
with one repetition; the table gives the median over the rounds of each row for both checkouts and
their ratio (new / old: above 1 is faster for items/s, slower for ms). Each checkout runs its own
`tests/bench/` code, so the figures are comparable across a change of the engine's module paths.
The old commit is checked out once into a temporary worktree of this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import dataclasses, json, sys
sys.path.insert(0, sys.argv[1] + "/tests/bench")
import run
sz = dataclasses.replace(run.QUICK, runs=1, overhead_items=int(sys.argv[2]), levels=(1, 8, 32),
                         items=int(sys.argv[3]), items_c1=max(4, int(sys.argv[3]) // 10))
print(json.dumps({"overhead": run.overhead(sz), "throughput": run.throughput(sz)}))
"""


def measure(checkout: Path, overhead_items: int, items: int) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(overhead_items), str(items)],
                          cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{checkout}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rounds: dict[str, list[dict]]) -> list[str]:
    rows = ["| row | old | new | new / old |", "|---|---:|---:|---:|"]
    old, new = rounds["old"], rounds["new"]
    for i, row in enumerate(old[0]["overhead"]):
        a = statistics.median(r["overhead"][i]["ms"] for r in old)
        b = statistics.median(r["overhead"][i]["ms"] for r in new)
        rows.append(f"| overhead {row['id']} (ms/item) | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    total_a = statistics.median(sum(x["ms"] for x in r["overhead"]) for r in old)
    total_b = statistics.median(sum(x["ms"] for x in r["overhead"]) for r in new)
    rows.append(f"| overhead, all specs summed (ms/item) | {total_a:.3f} | {total_b:.3f} | {total_b / total_a:.2f} |")
    for level in old[0]["throughput"]:
        for key, unit in (("items_s", "items/s"), ("cpu_ms_call", "CPU ms/call")):
            a = statistics.median(r["throughput"][level][key] for r in old)
            b = statistics.median(r["throughput"][level][key] for r in new)
            rows.append(f"| throughput c={level} ({unit}) | {a:.2f} | {b:.2f} | {b / a:.2f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="a commit of this repository")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--overhead-items", type=int, default=2000)
    parser.add_argument("--items", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scorespec-old-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.old],
                       check=True, capture_output=True)
        try:
            rounds: dict[str, list[dict]] = {"old": [], "new": []}
            for n in range(args.rounds):
                for name, checkout in (("old", old), ("new", ROOT)):
                    rounds[name].append(measure(checkout, args.overhead_items, args.items))
                    print(f"# round {n + 1} {name} done", file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    print("\n".join(table(rounds)))


if __name__ == "__main__":
    main()

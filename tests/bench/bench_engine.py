"""Engine benchmarks: spec load + compile, engine overhead per item, CLI cold start.

Prints a markdown table. Not part of the test suite; run:

    python tests/bench/bench_engine.py [--quick]

- load + compile: every shipped spec compiled from its files (templates parsed, schemas
  checked, expressions compiled), median of several runs, in a fresh process each time;
- engine overhead per item: `Scorer.arun` with an instant in-process judge (answers
  precomputed, validation included), so the figure is the interpreter's own cost;
- CLI cold start: whole-process wall time of `scorespec --help` and `scorespec validate`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.judge import JudgeAnswer, JudgeCall  # noqa: E402
from engine.result import Usage  # noqa: E402
from engine.scorer import load_scorer  # noqa: E402


class InstantJudge:
    """Answers each stage from a table at once; validates like a real judge."""

    model = "bench/instant"

    def __init__(self, answers: dict[str, object]):
        self.answers = answers
        self.calls = 0

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        self.calls += 1
        data = call.validate(self.answers[call.stage])
        return JudgeAnswer(data, "", 1, Usage(calls=1))


FAITHFULNESS = {
    "preprocess": {"claims": ["The tower is in Paris.", "It opened in 1889.", "It is 330 m tall."]},
    "analyze": {"verdicts": [{"verdict": v, "reason": "r"} for v in ("yes", "yes", "unsure")]},
    "reason": {"reason": "Two of three claims are supported."},
}
UNITS = ["Paris", "capital of France", "on the Seine"]
ANSWER_SIMILARITY = {
    "preprocess": {"outputUnits": UNITS, "groundTruthUnits": UNITS},
    "analyze": {
        "matches": [{"groundTruthUnit": u, "outputUnit": u, "match": "exact", "reason": "same"} for u in UNITS],
        "contradictions": [],
        "extraUnits": [],
    },
    "reason": {"reason": "Identical."},
}


def per_item_us(scorer_id: str, answers: dict | None, n: int) -> tuple[float, int]:
    judge = InstantJudge(answers or {})
    scorer = load_scorer(scorer_id, judge=judge) if answers else load_scorer(scorer_id)
    item = dict(output="The tower is in Paris. It opened in 1889.", input="Tell me about the tower.",
                ground_truth="The tower is in Paris, the capital of France.",
                context=["The Eiffel Tower, in Paris, opened in 1889."])

    async def loop() -> None:
        for _ in range(n):
            await scorer.arun(**item)

    if answers:
        asyncio.run(loop())  # warm-up (caches)
        judge.calls = 0
        start = time.perf_counter()
        asyncio.run(loop())
    else:
        for _ in range(min(n, 200)):
            scorer.run(**item)
        start = time.perf_counter()
        for _ in range(n):
            scorer.run(**item)
    elapsed = time.perf_counter() - start
    return elapsed / n * 1e6, judge.calls // n if answers else 0


def whole_process_s(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


LOAD_SNIPPET = """
import time, json
t = time.perf_counter()
from engine.catalog import builtin_specs_dir
from engine.compile import compile_file
files = sorted(builtin_specs_dir().glob('*.yaml'))
for f in files:
    compile_file(f)
print(json.dumps({"n": len(files), "s": time.perf_counter() - t}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    args = parser.parse_args()
    n = 50 if args.quick else 2000
    runs = 1 if args.quick else 7

    loads = [json.loads(subprocess.run([sys.executable, "-c", LOAD_SNIPPET], check=True, capture_output=True,
                                       text=True, cwd="/").stdout) for _ in range(runs)]
    load_s = statistics.median(x["s"] for x in loads)

    rows = [("load + compile all shipped specs (imports included)", f"{load_s * 1000:.0f} ms",
             f"{loads[0]['n']} specs, median of {runs} fresh processes")]
    for scorer_id, answers in (("faithfulness", FAITHFULNESS), ("answer_similarity", ANSWER_SIMILARITY),
                               ("textual_difference", None)):
        us, calls = per_item_us(scorer_id, answers, n)
        note = f"{calls} judge stages, instant in-process judge" if answers else "rule stage, no judge"
        rows.append((f"engine overhead per item: {scorer_id}", f"{us / 1000:.3f} ms", note))
    exe = [sys.executable, "-m", "engine.cli"]
    env_cmd = [os.path.join(os.path.dirname(sys.executable), "scorespec")]
    base = env_cmd if Path(env_cmd[0]).exists() else exe
    rows.append(("CLI cold start: scorespec --help", f"{whole_process_s(base + ['--help'], runs) * 1000:.0f} ms",
                 f"median of {runs}"))
    rows.append(("CLI cold start: scorespec validate", f"{whole_process_s(base + ['validate'], runs) * 1000:.0f} ms",
                 f"median of {runs}"))

    print("| measure | value | notes |")
    print("|---|---:|---|")
    for name, value, note in rows:
        print(f"| {name} | {value} | {note} |")


if __name__ == "__main__":
    main()

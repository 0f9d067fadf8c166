#!/usr/bin/env python3
"""Pairs for measuring a pairwise judge on the shipped labelled data.

    python tests/bench/make_pairs.py OUT_DIR [--pairs 40]

Writes ``OUT_DIR/halueval_pairs.jsonl`` and ``OUT_DIR/truthfulqa_pairs.jsonl``: each item pairs the
right and the wrong answer to one question of `datasets/halueval_qa.jsonl` (a right and a
hallucinated answer, with the knowledge passage as context) or `datasets/truthfulqa_pairs.jsonl` (a
correct and an incorrect answer, with a reference answer as ground truth), the right one at A in
the even pairs and at B in the odd ones; its ``label`` says which (``A`` or ``B``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = {"halueval": ("halueval_qa.jsonl", "faithful", "hallucinated"),
        "truthfulqa": ("truthfulqa_pairs.jsonl", "correct", "incorrect")}


def pairs(path: Path, right: str, wrong: str, count: int) -> list[dict]:
    by_question: dict[str, dict[str, dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        by_question.setdefault(item["input"], {})[item["label"]] = item
    made = []
    for question, found in by_question.items():
        if right not in found or wrong not in found:
            continue
        good, bad = found[right], found[wrong]
        first, second, label = (good, bad, "A") if len(made) % 2 == 0 else (bad, good, "B")
        made.append({"id": f"{good['id'].rsplit('-', 1)[0]}-pair", "input": question, "output_a": first["output"],
                     "output_b": second["output"], "label": label,
                     **{k: good[k] for k in ("context", "ground_truth") if good.get(k)}})
        if len(made) == count:
            break
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, (file, right, wrong) in SETS.items():
        made = pairs(ROOT / "datasets" / file, right, wrong, args.pairs)
        (args.out_dir / f"{name}_pairs.jsonl").write_text("".join(json.dumps(m) + "\n" for m in made),
                                                          encoding="utf-8")
        print(f"{name}: {len(made)} pairs ({sum(m['label'] == 'A' for m in made)} with the right answer at A)")


if __name__ == "__main__":
    main()

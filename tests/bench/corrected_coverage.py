#!/usr/bin/env python3
"""Coverage of the corrected pass rate's interval (`engine.analysis.judge_stats.corrected_pass_rate`),
by simulation: a benchmark of the statistic, not a unit test (a few seconds per 1,000 replications of each scenario).

For each scenario (true pass rate θ, the judge's TPR and TNR, production items n, calibration
positives n₊ and negatives n₋), each of 1,000 replications draws a calibration (tp ~ Bin(n₊, TPR),
tn ~ Bin(n₋, TNR)) and a production sample (passed ~ Bin(n, θ·TPR + (1 − θ)·(1 − TNR))), computes
the corrected rate and its interval, and counts whether the interval holds θ. Replications where
the judge looks no better than chance on its calibration (TPR + TNR ≤ 1: no rate given) are counted
apart. A 95 % interval should hold θ in 93–97 % of replications.

    python tests/bench/corrected_coverage.py [--replications 1000] [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from engine.analysis.judge_stats import corrected_pass_rate  # noqa: E402

#: (θ, TPR, TNR, n, n₊, n₋): from a typical calibration (the issue's worked example first) to small
#: calibrations with rates near 1, rare and common passes
SCENARIOS = [
    (0.571, 0.90, 0.80, 200, 50, 50),
    (0.50, 0.80, 0.80, 300, 100, 100),
    (0.30, 0.85, 0.90, 500, 100, 100),
    (0.10, 0.90, 0.90, 400, 50, 50),
    (0.95, 0.90, 0.85, 200, 50, 50),
    (0.80, 0.95, 0.70, 1000, 40, 60),
    (0.60, 0.98, 0.90, 500, 30, 30),
    (0.40, 0.75, 0.70, 2000, 200, 200),
]


def coverage(scenario: tuple[float, float, float, int, int, int], replications: int,
             rng: np.random.Generator) -> dict[str, float]:
    theta, tpr, tnr, n, positives, negatives = scenario
    held = given = 0
    widths = []
    for _ in range(replications):
        tp, tn = int(rng.binomial(positives, tpr)), int(rng.binomial(negatives, tnr))
        passed = int(rng.binomial(n, theta * tpr + (1 - theta) * (1 - tnr)))
        rate = corrected_pass_rate(passed, n, tp, positives, tn, negatives)
        if rate.estimate.ci is None:
            continue
        given += 1
        low, high = rate.estimate.ci
        held += low <= theta <= high
        widths.append(high - low)
    return {"theta": theta, "tpr": tpr, "tnr": tnr, "n": n, "positives": positives, "negatives": negatives,
            "coverage": held / given if given else float("nan"), "notGiven": replications - given,
            "meanWidth": float(np.mean(widths)) if widths else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = [coverage(s, args.replications, rng) for s in SCENARIOS]
    if args.json:
        print(json.dumps(rows))
        return
    print("| θ | TPR | TNR | n | n₊ | n₋ | coverage of the 95 % interval | mean width | no rate given |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['theta']:g} | {r['tpr']:g} | {r['tnr']:g} | {r['n']} | {r['positives']} | {r['negatives']} | "
              f"{r['coverage']:.3f} | {r['meanWidth']:.3f} | {r['notGiven']} |")


if __name__ == "__main__":
    main()

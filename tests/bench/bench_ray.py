"""The Ray executor's throughput (issue 27): items/s on a local Ray cluster vs one process at the
same total concurrency, faithfulness against the fake OpenAI-compatible server answering after
50 ms (in a child process, `bench_eval.fake_server`), JSONL in and out, store on.

    python tests/bench/bench_ray.py [--items 2000] [--layouts 1x32,2x16] [--runs 3]
    python tests/bench/run.py --only ray      # the same rows in the suite's table

For each layout ``A×C`` (A actors, C judge requests in flight per actor, ½ CPU each) the data is
scored on a local Ray (2 CPUs, started once for all runs, 127.0.0.1) and in one process at
concurrency A × C. Two figures for Ray: items/s over the whole run (actors started, data read,
results merged into the out file and the store) and the steady rate once the actors are warm
(items/s between the arrival of the 10th and the 90th percentile item). The ideal is A × C /
(judge calls per item × 0.05 s). Every figure is a median of ``--runs`` runs."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_eval  # noqa: E402  (puts this checkout's engine first on sys.path)

LATENCY_S = bench_eval.LATENCY_S


def _timing_reporter() -> Any:
    """A reporter noting when each item of a run is in (`times`, seconds after the start)."""
    from engine.run.reporting import EvalReporter

    class Timing(EvalReporter):
        def start(self, run: Any) -> None:
            self.started, self.times = time.perf_counter(), []

        def item_done(self, run: Any, item: Any, results: Any) -> None:
            self.times.append(time.perf_counter() - self.started)

    return Timing()


def _scorer(base_url: str) -> Any:
    from engine.bind.load import load_scorer
    from engine.bind.stack import make_judge
    from engine.judge.retries import RetryPolicy

    judge = make_judge("openai/test-model", base_url=base_url, api_key="test",
                       retry=RetryPolicy(max_retries=2, base_s=0.01))
    return load_scorer("faithfulness", judge=judge)


def one_run(base_url: str, data: Path, actors: int, concurrency: int, executor: str) -> dict:
    """One eval of the items in `data`: items/s over the whole run and once the first item is in."""
    from engine.ray.cluster import RayOptions
    from engine import run_evals  # the facade: it resolves executor="ray"

    with tempfile.TemporaryDirectory() as tmp:
        reporter = _timing_reporter()
        extra = {"executor": "ray", "ray": RayOptions(actors=actors), "concurrency": concurrency} \
            if executor == "ray" else {"concurrency": actors * concurrency}
        t0 = time.perf_counter()
        summary = run_evals(data, [_scorer(base_url)], out=Path(tmp) / "out.jsonl", store=Path(tmp) / "s.sqlite",
                            progress=reporter, **extra)
        wall = time.perf_counter() - t0
    n = summary.items
    stats = summary.scorers["faithfulness"]
    assert stats.scored == n and stats.failed == 0, summary.to_json_dict()
    times = reporter.times  # results come back a batch at a time: the rate between the 10th and 90th percentile
    low, high = len(times) // 10, len(times) * 9 // 10
    steady = (high - low) / max(1e-9, times[high - 1] - times[low - 1]) if low >= 1 and high > low else 0.0
    return {"items_s": n / wall, "steady_s": steady, "first_s": times[0], "calls_item": summary.judge_calls / n}


def ray_rows(n: int, layouts: list[tuple[int, int]], runs: int) -> list[dict]:
    """For each layout (actors, per-actor concurrency): medians of `runs` runs on Ray and in one process."""
    from engine.ray.cluster import RayOptions, ray_session

    rows = []
    with bench_eval.fake_server() as base_url, tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "items.jsonl"
        data.write_text("".join(json.dumps(item) + "\n" for item in bench_eval.items(n)), encoding="utf-8")
        with ray_session(RayOptions(local_cpus=2)):  # one local Ray for every run
            one_run(base_url, data, 1, 4, "ray")  # warm-up: worker processes, imports
            for actors, concurrency in layouts:
                on_ray = [one_run(base_url, data, actors, concurrency, "ray") for _ in range(runs)]
                alone = [one_run(base_url, data, actors, concurrency, "local") for _ in range(runs)]
                med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
                row = {"actors": actors, "concurrency": concurrency, "items": n,
                       "calls_item": med(on_ray, "calls_item"),
                       "ray_items_s": med(on_ray, "items_s"), "ray_steady_s": med(on_ray, "steady_s"),
                       "ray_first_s": med(on_ray, "first_s"), "local_items_s": med(alone, "items_s")}
                row["ideal"] = actors * concurrency / (row["calls_item"] * LATENCY_S)
                rows.append(row)
                print(f"# ray {actors}x{concurrency}: {row}", file=sys.stderr, flush=True)
    return rows


def table_rows(rows: list[dict]) -> list[tuple[str, ...]]:
    """Rows of the suite's table (`run.py`): scorespec on Ray in the scorespec column, one
    process in the Python-alternative column, their ratio."""
    out = []
    for r in rows:
        total = r["actors"] * r["concurrency"]
        actors = f"{r['actors']} actor{'s' if r['actors'] != 1 else ''}"
        layout = f"{actors} × {r['concurrency']} (one process: concurrency {total})"
        out.append(("8", f"faithfulness items/s on a local Ray, {layout}, {r['items']:,} items, 50 ms server: "
                         "whole run (share of ideal)",
                    f"{r['ray_items_s']:.1f} ({r['ray_items_s'] / r['ideal']:.0%})", "—",
                    f"{r['local_items_s']:.1f} ({r['local_items_s'] / r['ideal']:.0%})",
                    f"{r['ray_items_s'] / r['local_items_s']:.2f}× one process", ""))
        out.append(("8", f"faithfulness items/s on a local Ray, {layout}: steady, actors warm (the first item came "
                         f"after {r['ray_first_s']:.1f} s)",
                    f"{r['ray_steady_s']:.1f} ({r['ray_steady_s'] / r['ideal']:.0%})", "—", "—",
                    f"{r['ray_steady_s'] / r['local_items_s']:.2f}× one process", ""))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--layouts", default="1x32,2x16", help="actors x per-actor concurrency, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    layouts = [tuple(int(x) for x in layout.split("x")) for layout in args.layouts.split(",")]
    rows = ray_rows(args.items, layouts, args.runs)  # type: ignore[arg-type]
    print("| layout | items | Ray: items/s, whole run | Ray: items/s once warm | first item after | "
          "one process: items/s | ideal items/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['actors']} actor(s) × {r['concurrency']} | {r['items']:,} | {r['ray_items_s']:.1f} | "
              f"{r['ray_steady_s']:.1f} | {r['ray_first_s']:.1f} s | {r['local_items_s']:.1f} | {r['ideal']:.0f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The studio's two loops, timed over real HTTP (uvicorn on 127.0.0.1, httpx):

    python tests/bench/bench_studio.py             # 20 saves, a re-run of 20 items
    python tests/bench/bench_studio.py --items 50  # any number of items

- **a save shows its validation**: ``PUT /api/files`` of one spec (a child of a built-in, as a user
  writes one) until its answer with the problems arrives, with the whole built-in catalogue
  loaded and compiled in the process first; the median of 20 saves, each a different text (a
  description changed), half of them with a misspelt key. Target: under 100 ms.
- **a re-run after a one-stage prompt edit**: the scaffolded one-stage spec run on N items, its
  prompt edited, then run again: every call is asked again, and the fake OpenAI server answers at
  once (no latency), so the re-run's time is what scorespec adds to the judge's own time
  (``POST /api/run`` until its answer: the cache's look-ups and stores, the interpreter, the store,
  the HTTP round trips to the fake server). Target: under 300 ms for 20 items.

The figures are this machine's, on one run: compare them with each other, not across days.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from studio_folder import PROMPT, judge_settings  # noqa: E402

from engine.spec.catalog import list_specs  # noqa: E402
from engine.spec.compile import validate_specs  # noqa: E402
from engine.spec.scaffold import new_spec  # noqa: E402
from engine.studio.server import Studio, running  # noqa: E402
from engine.studio.session import Session  # noqa: E402
from engine.studio.workspace import Workspace  # noqa: E402
from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402

CHILD = "scorer_specs/my_faithfulness.yaml"


def _items(root: Path, n: int) -> str:
    import json

    lines = [json.dumps({"id": f"item-{i}", "input": f"question {i}", "output": f"answer {i}"}) for i in range(n)]
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "items.jsonl"


def time_saves(client: httpx.Client, url: str, root: Path, saves: int) -> list[float]:
    text = (root / CHILD).read_text(encoding="utf-8")
    times = []
    for n in range(saves):
        edited = text.replace("name:", f"# save {n}\nname:" if n % 2 else f"# save {n}\nnmae:", 1)
        start = time.perf_counter()
        answer = client.put(url + "/api/files", json={"path": CHILD, "text": edited}).json()
        times.append((time.perf_counter() - start) * 1000)
        assert bool(answer["problems"]) == (n % 2 == 0), answer
    return times


def time_rerun(client: httpx.Client, url: str, root: Path, data: str, items: int) -> tuple[float, float, dict]:
    body = {"scorer": "politeness", "data": data, "limit": items}
    start = time.perf_counter()
    first = client.post(url + "/api/run", json=body).json()
    cold = (time.perf_counter() - start) * 1000
    prompt = root / PROMPT
    prompt.write_text("Be brief.\n" + prompt.read_text(encoding="utf-8"), encoding="utf-8")
    start = time.perf_counter()
    again = client.post(url + "/api/run", json=body).json()
    rerun = (time.perf_counter() - start) * 1000
    assert again["judgeCalls"] == items and again["cachedCalls"] == 0 and first["judgeCalls"] == items
    return cold, rerun, again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--saves", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp()) / "project"
    root.mkdir()
    new_spec("politeness", root=root)
    new_spec("my_faithfulness", extends="faithfulness", root=root)
    data = _items(root, args.items)
    start = time.perf_counter()
    validate_specs([entry.path for entry in list_specs(root)])  # the whole catalogue loaded and compiled
    loaded = (time.perf_counter() - start) * 1000
    with FakeOpenAIServer({"verdict": "yes", "reason": "fine"}) as server, httpx.Client(timeout=60) as client:
        studio = Studio(Session(Workspace(root), judge_settings(server, root)))
        with running(studio) as url:
            saves = time_saves(client, url, root, args.saves)
            cold, rerun, _ = time_rerun(client, url, root, data, args.items)
    print(f"catalogue loaded and compiled first: {loaded:,.0f} ms")
    print(f"save → validation shown ({args.saves} saves of a child spec): median {statistics.median(saves):.1f} ms, "
          f"slowest {max(saves):.1f} ms (target < 100 ms)")
    print(f"first run of {args.items} items: {cold:,.0f} ms; re-run after a one-stage prompt edit: {rerun:,.0f} ms "
          f"with an instant judge (target < 300 ms for 20 items)")


if __name__ == "__main__":
    main()

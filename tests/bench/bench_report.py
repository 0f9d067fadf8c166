#!/usr/bin/env python3
"""The HTML report at size: file size, time to write it, and time until Chromium shows its table.

    python tests/bench/bench_report.py              # 1,000 and 10,000 items
    python tests/bench/bench_report.py --items 200  # any sizes

Each size is a faithfulness eval over the HaluEval QA sample (`datasets/halueval_qa.jsonl`, its
300 items repeated, each copy's id, output and context
made unique) with an instant scripted judge: every claim is one sentence of
the output, supported when most of its words are in the context. The run goes into a temporary
store; `scorespec report` is timed as a whole process; the page is opened from disk in headless
Chromium (Debian's `chromium`, driven by Playwright) and timed from navigation until the first
page of rows is in the table (median of 3 loads). Needs scorespec[report] and the test extra.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import load_scorer  # noqa: E402
from engine import run_evals  # noqa: E402
from engine.testing import FakeJudge  # noqa: E402

DATA = ROOT / "datasets" / "halueval_qa.jsonl"


def _claims(call) -> dict:
    text = call.messages[-1]["content"].split("TEXT:")[-1].split("<<<")[-1].split(">>>")[0]
    return {"claims": [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()][:25]}


def _verdict(call) -> dict:
    prompt = call.messages[-1]["content"]
    claim = re.search(r"CLAIM:\n<<<\n(.*?)\n>>>", prompt, re.S)
    words = set(re.findall(r"\w+", (claim.group(1) if claim else "").lower()))
    known = set(re.findall(r"\w+", prompt.split("CLAIM:")[0].lower()))
    share = len(words & known) / len(words) if words else 0
    reason = f"{share:.0%} of the claim's words are in the context."
    return {"verdict": "yes" if share > 0.6 else "no", "reason": reason}


def make_run(n: int, folder: Path) -> str:
    base = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    items = []
    for i in range(n):  # each copy made unique, so no prompt or passage repeats another item's
        item = base[i % len(base)]
        items.append({**item, "id": f"{item['id']}-{i}", "output": f"{item['output']} (variant {i})",
                      "context": [f"[{i}] {passage}" for passage in item["context"]]})
    judge = FakeJudge({"preprocess": _claims, "analyze": _verdict})
    summary = run_evals(items, [load_scorer("faithfulness", judge=judge)], store=folder / "store.sqlite",
                        concurrency=8)
    return summary.run_id


def load_seconds(path: Path, chromium: str) -> float:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for _ in range(3):
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("#items-body tr")
            times.append(time.perf_counter() - start)
            page.close()
        browser.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="*", default=[1000, 10000])
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Chromium (apt-get install chromium)")
    print("| items | results | file size | `scorespec report` | load until the table shows |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in args.items:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            run_id = make_run(n, folder)
            out = folder / "report.html"
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "engine", "report", run_id, "--store", str(folder / "store.sqlite"),
                            "-o", str(out)], check=True, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           stderr=subprocess.DEVNULL)
            written = time.perf_counter() - start
            size = out.stat().st_size
            print(f"| {n:,} | {n:,} | {size / 1e6:.1f} MB | {written:.1f} s | {load_seconds(out, chromium):.2f} s |",
                  flush=True)


if __name__ == "__main__":
    main()

"""Smoke run of the benchmark suite: `tests/bench/run.py --quick` runs end to end, beside the
reference (Mastra's scorers on Node, installed from tests/bench/reference/), and prints the one
table with every section's rows. Only a missing node or npm skips it; a failed install fails it.
No speed is asserted here; the figures of a quick run mean nothing."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("bench_reference", ROOT / "tests" / "bench" / "reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

# This is a benchmark, not a unit test: the reference it runs beside is about 140 MB of npm
# packages, so it is installed once into a persistent folder and reused by later runs, instead
# of a temporary folder per run: $SCORESPEC_BENCH_REFERENCE_DIR, by default under the user's cache
# folder (tests/bench/reference.py: ~/.cache/scorespec/bench-reference). Read when this module is
# imported, before any fixture points the environment at temporary folders. Everything else the
# run writes goes to temporary folders.
REFERENCE_DIR = str(reference.default_root())

# Every runnable shipped spec, in the catalogue's order: (id, judge calls per item with the canned
# answers of tests/bench/bench_engine.py — counted here on one item —, its `for_each` stages);
# calls None for a rule spec.
def _shipped_specs() -> list[tuple[str, int | None, str]]:
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    import bench_engine

    from engine.spec.catalog import is_abstract
    from engine.spec.compile import load_spec

    specs = []
    for path in sorted((ROOT / "scorer_specs").glob("*.yaml")):
        if is_abstract(path):
            continue
        plan = load_spec(path)
        each = ", ".join(stage.id for stage in plan.stages if getattr(stage, "for_each", None))
        calls = bench_engine.per_item_us(path.stem, bench_engine.ANSWERS[path.stem], 1)[1] if plan.uses_judge else None
        specs.append((path.stem, calls, each))
    return specs


SPECS = _shipped_specs()
OVERHEAD = [f"engine overhead ms/item: {spec} ({calls} judge calls, instant judge)" if calls is not None
            else f"engine overhead ms/item: {spec} (rule spec)" for spec, calls, _ in SPECS]
CALLS = {spec: f"judge calls per item: {spec}" + (f" (varies: `for_each` stage {each} asks once per element)"
                                                  if each else "")
         for spec, calls, each in SPECS if calls is not None}
BESIDE_THE_REFERENCE = [
    "textual difference: pairs/s, 500 chars",
    "textual difference: ms per pair, 2,000 chars",
    "textual difference: peak RSS MB, 2,000 chars",
    "faithfulness items/s at concurrency 1 (share of ideal), 50 ms server",
    "faithfulness items/s at concurrency 8 (share of ideal), 50 ms server",
]
WARM_CACHE_REQUESTS = "faithfulness eval of 16 items re-run with a warm judge-call cache: judge requests"
EXPECTED_MEASURES = [
    *BESIDE_THE_REFERENCE[:3],
    *OVERHEAD,  # 3 claims: faithfulness asks 1 + 3 calls
    *BESIDE_THE_REFERENCE[3:],
    *CALLS.values(),
    "client CPU ms per judge call (faithfulness, concurrency 8)",
    f"load + compile all {len(SPECS)} shipped specs, imports included (ms)",
    "CLI cold start: `scorespec --help` (ms)",
    "CLI cold start: `scorespec validate`, whole catalogue (ms)",
    "peak RSS MiB: rule-scorer eval, after loading only",
    "peak RSS MiB: rule-scorer eval of 100 items",
    "peak RSS MiB: rule-scorer eval of 1,000 items",
    WARM_CACHE_REQUESTS,
    "faithfulness eval of 16 items re-run with a warm judge-call cache: seconds at concurrency 8",
    "engine time ms per fully cached faithfulness item (4 cache hits)",
]
NUMBER = re.compile(r"^[\d,]+(\.\d+)?( \(\d+%\))?$")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a first run installs the reference (npm ci) before the quick suite
def test_quick_bench_prints_the_whole_table_beside_the_reference(tmp_path):
    if missing := reference.missing_tools():
        pytest.skip(f"{' and '.join(missing)} not found on PATH: the benchmark's reference (Mastra's "
                    f"scorers) runs on Node")
    env = {**os.environ, reference.ENV: REFERENCE_DIR}
    page = tmp_path / "measured" / "full-suite.md"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "run.py"), "--quick", "--page", str(page)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1700)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    assert re.match(r"Machine: .+, \d+ cores, \d+ GiB RAM, .+, Python 3\.\d+\.\d+, Node \d+\.\d+", done.stdout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    header, _rule, *rows = lines
    assert header.split(" | ")[1:4] == ["measure", "scorespec", "reference (Mastra, Node)"]
    cells = {row.strip("| ").split(" | ")[1]: row.strip("| ").split(" | ") for row in rows}
    assert list(cells) == EXPECTED_MEASURES
    for measure, row in cells.items():
        assert NUMBER.match(row[2]), (measure, row)  # every row has a scorespec figure
    for measure in BESIDE_THE_REFERENCE:
        assert NUMBER.match(cells[measure][3]), (measure, cells[measure])
        assert cells[measure][5].endswith(("faster", "less")), cells[measure]
    assert cells[CALLS["faithfulness"]][2:4] == ["4", "3"]  # one verify call per claim
    assert cells[CALLS["answer_similarity"]][2:4] == ["3", "3 (from its source)"]
    for spec, calls, _ in SPECS:  # no reference count for the others
        if calls is not None and spec not in ("faithfulness", "answer_similarity"):
            assert cells[CALLS[spec]][2:4] == [str(calls), "—"], spec
    assert cells[WARM_CACHE_REQUESTS][2] == "0"  # a re-run with a warm cache asks the judge nothing
    # --page: the same output as a dated page, saying the command that measured it
    written = page.read_text(encoding="utf-8")
    assert re.match(r"Measured on \d{4}-\d{2}-\d{2} with `python tests/bench/run.py --quick --page \S+`", written)
    assert done.stdout.strip() in written


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_ray_rows_of_the_bench_run_on_a_local_ray():
    from conftest import require_ray

    require_ray()
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "run.py"), "--only", "ray", "--quick"],
                          cwd=ROOT, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 8 |")]
    assert len(rows) == 2 and "items/s on a local Ray, 2 actors × 4" in rows[0], done.stdout[-2000:]
    assert "× one process" in rows[0] and "× one process" in rows[1]

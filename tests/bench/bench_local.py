"""The embedded judge before and after (`tests/bench/run.py --only local`): the README's main job
and a slice of BEGIN through `scorespec eval faithfulness` on the default `local` model, run by
an older checkout and by this one, alternating, and one job against two at once.

Every job is a whole process, as a user runs it (`python -m engine eval faithfulness --data …
--model local`): its wall time includes starting Python and loading the model; the joined model
file is shared (``$SCORESPEC_CACHE``), the judge-call cache is a new empty file per job, so every
judge call is made. The older checkout is a folder, or a commit checked out into a temporary git
worktree of this repository (removed at the end); `old_python` may be another virtual
environment's interpreter. The load average is recorded around every job: other work on the
machine slows the jobs and shows there.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
MAIN_JOB = ROOT / "examples" / "begin_wow.jsonl"
BEGIN = ROOT / "datasets" / "begin_wow.jsonl"


@dataclass
class Job:
    """One eval: its checkout, wall seconds, the load average before and after, the scores by
    item id, and how many items failed."""

    label: str
    seconds: float
    load: tuple[float, float]
    scores: dict[str, float | None] = field(default_factory=dict)
    failed: int = 0
    error: str | None = None


@contextmanager
def checkout(old: str) -> Iterator[Path]:
    """The older code: `old` as a folder holding ``engine/``, else as a commit of this repository
    checked out (detached) into a temporary worktree, removed afterwards. Raises ValueError when
    it is neither."""
    path = Path(old).expanduser()
    if (path / "engine" / "__init__.py").is_file():
        yield path.resolve()
        return
    folder = Path(tempfile.mkdtemp(prefix="scorespec-old-"))
    added = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder / "tree"), old],
                           capture_output=True, text=True)
    if added.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise ValueError(f"--old {old!r} is neither a checkout (a folder with engine/) nor a commit of this "
                         f"repository: {added.stderr.strip()}")
    try:
        yield folder / "tree"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder / "tree")],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def subset(source: Path, n: int, folder: Path) -> Path:
    """The first `n` items of `source` as a file in `folder`."""
    lines = source.read_text(encoding="utf-8").splitlines(True)[:n]
    target = folder / f"{source.stem}-{n}.jsonl"
    target.write_text("".join(lines), encoding="utf-8")
    return target


def start(label: str, code: Path, python: str, data: Path, model: str, folder: Path) -> tuple:
    """Start one eval job in the background: (label, process, started, load, its folder)."""
    work = Path(tempfile.mkdtemp(prefix="job-", dir=folder))
    env = {**os.environ, "PYTHONPATH": str(code), "SCORESPEC_CACHE_DB": str(work / "judge-cache.sqlite")}
    command = [python, "-m", "engine", "eval", "faithfulness", "--data", str(data), "--model", model,
               "--out", str(work / "out.jsonl"), "--store", str(work / "store.sqlite"), "--quiet", "--json"]
    load = os.getloadavg()[0]
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return label, process, time.perf_counter(), load, work


def finish(started: tuple) -> Job:
    """Wait for a job started by `start`; its `Job`."""
    label, process, began, load, work = started
    out, err = process.communicate()
    seconds = time.perf_counter() - began
    job = Job(label, seconds, (load, os.getloadavg()[0]))
    try:
        summary = json.loads(out)
        job.failed = summary["scorers"]["faithfulness"]["failed"]
        for line in (work / "out.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            job.scores[str(record["id"])] = record.get("score")
    except (ValueError, KeyError, OSError) as exc:
        job.error = f"{type(exc).__name__}: {exc}; stderr: {err[-400:]}"
    shutil.rmtree(work, ignore_errors=True)
    return job


def run_one(label: str, code: Path, python: str, data: Path, model: str, folder: Path) -> Job:
    job = finish(start(label, code, python, data, model, folder))
    log(f"{label}: {job.seconds:.1f} s, load {job.load[0]:.2f} → {job.load[1]:.2f}"
        + (f" — {job.error}" if job.error else ""))
    return job


def run_pair(label: str, code: Path, python: str, data: Path, model: str, folder: Path) -> list[Job]:
    """Two identical jobs started together, each timed to its own end."""
    both = [start(f"{label} ({i})", code, python, data, model, folder) for i in (1, 2)]
    with ThreadPoolExecutor(2) as pool:
        jobs = list(pool.map(finish, both))
    for job in jobs:
        log(f"{job.label}: {job.seconds:.1f} s, load {job.load[0]:.2f} → {job.load[1]:.2f}"
            + (f" — {job.error}" if job.error else ""))
    return jobs


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def measure(old: str, *, old_python: str = sys.executable, rounds: int = 3, begin_items: int = 100,
            main_items: int = 6, model: str = "local", pair_before: bool = True) -> dict:
    """Before (the `old` checkout) and after (this checkout), alternating: the main job `rounds`
    times each, BEGIN's first `begin_items` once each, then one main job alone and two at once
    for each (for the after code only when `pair_before` is false: the old code's two jobs at once
    are the slowest part). Returns the jobs by measure and code."""
    folder = Path(tempfile.mkdtemp(prefix="scorespec-bench-local-"))
    try:
        with checkout(old) as old_code:
            codes = {"before": (old_code, old_python), "after": (ROOT, sys.executable)}
            main = subset(MAIN_JOB, main_items, folder)
            begin = subset(BEGIN, begin_items, folder)
            out: dict = {"main": {"before": [], "after": []}, "begin": {}, "alone": {}, "pair": {},
                         "old": str(old), "model": model, "main_items": main_items, "begin_items": begin_items}
            for r in range(rounds):  # alternating, the order swapped every round
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for which in order:
                    code, python = codes[which]
                    out["main"][which].append(run_one(f"main job, {which}, round {r + 1}", code, python, main, model,
                                                      folder))
            for which in ("after", "before"):
                code, python = codes[which]
                out["begin"][which] = run_one(f"BEGIN {begin_items}, {which}", code, python, begin, model, folder)
            for which in ("before", "after") if pair_before else ("after",):
                code, python = codes[which]
                out["alone"][which] = run_one(f"main job alone, {which}", code, python, main, model, folder)
                out["pair"][which] = run_pair(f"main job, two at once, {which}", code, python, main, model, folder)
            return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _speed(ratio: float) -> str:
    """A speed ratio (after ÷ before, above 1 is faster) as words: "2.0× faster", "1.1× slower"."""
    return f"{ratio:.1f}× faster" if ratio >= 1 else f"{1 / ratio:.1f}× slower"


def _same_scores(a: Job, b: Job) -> str:
    shared = [k for k in a.scores if k in b.scores]
    return f"{sum(a.scores[k] == b.scores[k] for k in shared)} of {len(shared)}"


def rows(m: dict) -> list[tuple[str, ...]]:
    """The table rows (# 9): measure, before, after, after vs before, target."""
    med = {w: statistics.median(j.seconds for j in m["main"][w]) for w in ("before", "after")}
    b_begin, a_begin = m["begin"]["before"], m["begin"]["after"]
    ipm = {w: m["begin_items"] / (m["begin"][w].seconds / 60) for w in ("before", "after")}
    pair = {w: f'{max(j.seconds for j in m["pair"][w]) / m["alone"][w].seconds:.1f}×' if w in m["pair"] else "not run"
            for w in ("before", "after")}
    main_ratio, begin_ratio = med["before"] / med["after"], ipm["after"] / ipm["before"]
    out = [
        ("9", f"main job ({m['main_items']} items): seconds, median of {len(m['main']['after'])}",
         f"{med['before']:.0f}", f"{med['after']:.0f}", _speed(main_ratio),
         _target("≥ 2×", main_ratio >= 2)),
        ("9", f"BEGIN, first {m['begin_items']} items: items per minute", f"{ipm['before']:.2f}",
         f"{ipm['after']:.2f}", _speed(begin_ratio), _target("≥ 2×", begin_ratio >= 2)),
        ("9", f"BEGIN, first {m['begin_items']} items: scores equal to before", "—", _same_scores(b_begin, a_begin),
         "", ""),
        ("9", "two main jobs at once: the slower one's seconds ÷ one job alone", pair["before"], pair["after"], "",
         _target("≤ 2.5×", float(pair["after"].rstrip("×")) <= 2.5)),
    ]
    return out


def _target(text: str, met: bool) -> str:
    return f"{text} {'✓' if met else '✗'}"


def loads(m: dict) -> str:
    """Every job's load average before and after, in the order run."""
    jobs = [*m["main"]["before"], *m["main"]["after"], *m["begin"].values(), *m["alone"].values(),
            *(j for pair in m["pair"].values() for j in pair)]
    return "; ".join(f"{j.label} {j.seconds:.0f} s (load {j.load[0]:.2f} → {j.load[1]:.2f})" for j in jobs)


__all__ = ["measure", "rows", "loads", "checkout", "Job"]

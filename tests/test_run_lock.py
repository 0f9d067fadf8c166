"""One process at a time per run: a second run (or ``--resume``) of a run being written now is
refused with a message saying why, rather than writing every result a second time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine import run_evals
from engine.run.evals import arun_evals
from engine.run.run_lock import RunInUse, lock_path, lock_run
from engine.run.store import Store

ITEMS = [{"id": i, "input": f"q{i}", "ground_truth": f"answer {i}"} for i in range(6)]


def out_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_second_resume_while_the_first_runs_is_refused_and_each_result_is_written_once(tmp_path):
    out, store = tmp_path / "out.jsonl", tmp_path / "store.sqlite"
    run_evals(ITEMS[:2], ["textual_difference"], out=str(out), store=store,
              target=lambda q: "answer " + q[1:])
    release = asyncio.Event()

    async def slow_target(question: str) -> str:
        await release.wait()
        return "answer " + question[1:]

    async def both() -> tuple[object, BaseException | None]:
        first = asyncio.create_task(arun_evals(ITEMS, ["textual_difference"], out=str(out), store=store,
                                               resume=True, target=slow_target))
        await asyncio.sleep(0.05)  # the first holds the run's lock and waits in its target
        refused = None
        try:
            await arun_evals(ITEMS, ["textual_difference"], out=str(out), store=store, resume=True,
                             target=slow_target)
        except RunInUse as exc:
            refused = exc
        release.set()
        return await first, refused

    _summary, refused = asyncio.run(both())
    assert isinstance(refused, RunInUse)
    assert "another scorespec process" in str(refused) and str(out) in str(refused)
    lines = out_lines(out)
    assert sorted(line["id"] for line in lines) == [0, 1, 2, 3, 4, 5]
    assert not lock_path(out, None, None).exists()  # removed when the run ended


def test_resume_on_the_command_line_is_refused_while_the_run_is_locked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data, out = tmp_path / "items.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps({"id": i, "output": "a b", "ground_truth": "a b"}) + "\n"
                            for i in range(3)), encoding="utf-8")
    out.write_text(json.dumps({"id": 0, "scorer": "textual_difference", "label": "textual_difference",
                               "score": 1.0, "runId": "r1"}) + "\n", encoding="utf-8")
    with lock_run(out.resolve(), None, None):
        result = CliRunner().invoke(app, ["eval", "textual_difference", "--data", str(data), "--out", str(out),
                                          "--resume", "--quiet"], env={"SCORESPEC_MODEL": None})
    assert result.exit_code != 0
    assert "being written by another scorespec process" in result.stderr
    assert len(out_lines(out)) == 1  # nothing written by the refused run


def test_a_run_kept_only_in_the_store_is_locked_by_its_id(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    try:
        with lock_run(None, "run-7", store):
            with pytest.raises(RunInUse, match="run run-7 in the store"):
                lock_run(None, "run-7", store)
            lock_run(None, "run-8", store).release()  # another run is free
        lock_run(None, "run-7", store).release()  # free again once released
    finally:
        store.close()

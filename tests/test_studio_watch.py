"""``scorespec watch`` as a user runs it, with real file writes: the command in its own process
in a folder with a spec, its prompt and a dataset, the judge the fake OpenAI server. It runs at
once; a prompt saved runs again (the edited stage asked again, the comparison with the last run
shown); a spec saved with a problem says so at its line and keeps watching; the spec fixed runs
again from the cache."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from studio_folder import DATA, PROMPT, SPEC, YES, make_folder

from engine.testing.fake_openai import FakeOpenAIServer

REPO = Path(__file__).resolve().parent.parent


class Lines:
    """The command's output lines, read in a thread; `until` waits for a line holding a text."""

    def __init__(self, process: subprocess.Popen):
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self._queue.put(line.rstrip("\n"))

    def until(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} in:\n" + "\n".join(self.seen))


@pytest.fixture
def watching(tmp_path):
    root = make_folder(tmp_path)
    with FakeOpenAIServer(YES) as server:
        env = {**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        env.pop("SCORESPEC_MODEL", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "engine", "watch", "politeness", "--data", DATA, "--limit", "3", "--model",
             "openai/fake-model", "--base-url", server.base_url, "--cache", str(root / ".scorespec" / "cache.sqlite")],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            yield root, server, Lines(process)
        finally:
            process.terminate()
            process.wait(10)


def test_watch_runs_on_every_save_survives_a_failed_run_and_compares_with_the_last(watching):
    root, server, lines = watching
    assert "3 item(s), mean 1.000, 0 failed; 3 judge call(s), 0 cached" in lines.until("run ")
    lines.until("watching for changes")

    prompt = root / PROMPT
    prompt.write_text(prompt.read_text().replace("Give the verdict first", "Give the verdict at once"))
    lines.until(f"saved: {PROMPT}")
    assert "3 judge call(s), 0 cached" in lines.until("run ")
    assert "mean difference +0.000, 0 verdict(s) changed" in lines.until("vs run ")
    lines.until(f"changed: {PROMPT}")
    assert len(server.requests) == 6

    spec = root / SPEC
    good = spec.read_text()
    spec.write_text(good.replace("description:", "descripton:"))
    lines.until("run failed: the spec has problems:")
    line = good.splitlines().index(next(x for x in good.splitlines() if x.startswith("description:"))) + 1
    assert f"{SPEC}:{line}:1:" in lines.until("descripton")

    spec.write_text(good)
    assert "0 judge call(s), 3 cached" in lines.until("run ")
    assert len(server.requests) == 6

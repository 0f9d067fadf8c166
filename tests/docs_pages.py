"""Running a page's blocks in order in one working folder (tests/test_docs_examples.py).

`PageRun` holds a page's folder (a copy of the repository's examples/ and datasets/), its own
store, judge-call cache and home (shared by all its blocks, whichever test runs them), the
namespace its python blocks share, and each block's outcome. `PageRun.run_through(block, env)`
first runs the page's earlier blocks not yet run, then the block; each block runs once, and
its outcome (None: passed, else why it failed) is kept for the test that asks again.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from docs_blocks import Block

__all__ = ["PageRun", "Environment", "shim_folder", "tail"]

# A block's environment: the variables to set and those to remove (on top of the test's own).
Environment = tuple[Mapping[str, str], tuple[str, ...]]
SHOWN_CHARS = 3000
TIMEOUT_S = {False: 300, True: 1800}  # a block of the fast suite, a slow (embedded model / Ray) one


def tail(text: str, limit: int = SHOWN_CHARS) -> str:
    """The last `limit` characters of `text`, marked when cut."""
    return text if len(text) <= limit else f"[… {len(text) - limit} characters cut]\n{text[-limit:]}"


def shim_folder(folder: Path) -> Path:
    """A folder holding a ``scorespec`` command that runs this interpreter's ``-m engine`` (the
    checkout under test, through PYTHONPATH), to put first on PATH; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "scorespec"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m engine "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return folder


@contextlib.contextmanager
def _in_process(folder: Path, env: Environment) -> Iterator[None]:
    """The working folder and environment of a python block, both put back afterwards."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update(env[0])
    for name in env[1]:
        os.environ.pop(name, None)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


class PageRun:
    """The state of one page's run. root: the repository (its examples/ and datasets/ copied);
    base: a fresh folder of this page's own (work/, store, cache and home are made in it)."""

    def __init__(self, blocks: list[Block], root: Path, base: Path):
        self.blocks = blocks
        self.folder = base / "work"
        self.folder.mkdir(parents=True)
        for name in ("examples", "datasets"):
            if (root / name).is_dir():
                shutil.copytree(root / name, self.folder / name)
        home = base / "home"
        self.variables = {
            "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"), "XDG_STATE_HOME": str(home / ".local/state"),
            "SCORESPEC_STORE": str(base / "store.sqlite"), "SCORESPEC_CACHE_DB": str(base / "judge-cache.sqlite"),
        }
        self.namespace: dict = {"__name__": "__docs__"}
        self.outcomes: dict[str, str | None] = {}  # block id → None (passed) or why it failed

    def run_through(self, block: Block, environment: Callable[[Block], Environment],
                    runs_heavy: bool) -> str | None:
        """Run the page's blocks up to `block` that have not run (skipped ones, and heavy ones
        unless `runs_heavy`, left out) and then `block`; return why `block` failed, or None.
        environment: the environment for a block. A failed earlier block fails `block`."""
        left_out = []
        for earlier in self.blocks:
            if earlier is block:
                break
            if earlier.kind == "shown" or earlier.marker.skip:
                continue
            if earlier.id not in self.outcomes:
                if earlier.heavy and not runs_heavy:
                    left_out.append(earlier.id)
                    continue
                self.outcomes[earlier.id] = self._run(earlier, environment(earlier))
            if self.outcomes[earlier.id] is not None:
                return f"an earlier block of the page failed: {earlier.id}\n{self.outcomes[earlier.id]}"
        if block.id not in self.outcomes:
            self.outcomes[block.id] = self._run(block, environment(block))
        failure = self.outcomes[block.id]
        if failure is not None and left_out:
            failure += (f"\n(earlier slow blocks not run in this suite: {', '.join(left_out)}; a block that "
                        "needs what they write must be marked slow too)")
        return failure

    def _run(self, block: Block, env: Environment) -> str | None:
        if block.kind == "file":
            if block.title_problem():
                return f"file block {block.id}: {block.title_problem()} (not written)"
            target = self.folder / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
            return None
        if block.unmarked_exemption():
            return f"block {block.id} not run: {block.unmarked_exemption()}"
        text = _with_addresses(block, env[0])
        if block.lang == "python":
            return self._python(block, text, env)
        return self._bash(block, text, env)

    def _python(self, block: Block, text: str, env: Environment) -> str | None:
        out, err = io.StringIO(), io.StringIO()
        try:
            code = compile("\n" * block.line + text, block.page, "exec")
            with _in_process(self.folder, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(code, self.namespace)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a block's SystemExit fails it too
            return (f"python block {block.id} raised:\n{tail(traceback.format_exc())}\n"
                    f"--- stdout ---\n{tail(out.getvalue())}\n--- stderr ---\n{tail(err.getvalue())}")
        return None

    def _bash(self, block: Block, text: str, env: Environment) -> str | None:
        variables = {k: v for k, v in os.environ.items() if k not in env[1]}
        variables.update(env[0])
        # its own process group, so a block over time is stopped with every process it started
        with subprocess.Popen(["bash", "-euo", "pipefail", "-c", text], cwd=self.folder, env=variables,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as process:
            try:
                stdout, stderr = process.communicate(timeout=TIMEOUT_S[block.heavy])
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                stdout, stderr = process.communicate()
                return (f"bash block {block.id} ran over {TIMEOUT_S[block.heavy]} s (stopped)\n"
                        f"--- stdout ---\n{tail(stdout)}\n--- stderr ---\n{tail(stderr)}")
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
        done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        if done.returncode == block.marker.exit_code:
            return None
        return (f"bash block {block.id} exited {done.returncode}, expected {block.marker.exit_code}\n"
                f"--- stdout ---\n{tail(done.stdout)}\n--- stderr ---\n{tail(done.stderr)}")


def _with_addresses(block: Block, variables: Mapping[str, str]) -> str:
    """The block's text with the test servers' addresses in: a redis block's ``127.0.0.1:6379``
    / ``localhost:6379`` become the test Redis (``DOCS_TEST_REDIS``); a ray block's
    ``--ray-address VALUE`` the test cluster (``DOCS_TEST_RAY``)."""
    text = block.text
    if block.marker.redis and "DOCS_TEST_REDIS" in variables:
        text = text.replace("127.0.0.1:6379", variables["DOCS_TEST_REDIS"])
        text = text.replace("localhost:6379", variables["DOCS_TEST_REDIS"])
    if block.marker.ray and "DOCS_TEST_RAY" in variables:
        text = re.sub(r"(--ray-address[ =])\S+", lambda m: m[1] + variables["DOCS_TEST_RAY"], text)
    return text

"""The benchmark's reference, Mastra's scorers (`@mastra/evals`) on Node, installed from this
repository's own files: `tests/bench/reference/` holds its `package.json`, `package-lock.json`
and the harness scripts the suite runs.

`install()` copies those files into a cache folder named after the lock file and runs
``npm ci --no-audit --no-fund`` there once (about 140 MB); later calls reuse the install and only
refresh the scripts. The cache root, in order:

1. ``$SCORESPEC_BENCH_REFERENCE_DIR``;
2. ``$SCORESPEC_CACHE/bench-reference``;
3. ``$XDG_CACHE_HOME/scorespec/bench-reference``, by default ``~/.cache/scorespec/bench-reference``.

The install is ``ROOT/<first 16 hex digits of the lock file's SHA-256>/``, so a changed lock file
gets a fresh install beside the old one (delete the root to reclaim the space). npm's own cache
goes to ``ROOT/npm-cache``: nothing is written outside the root. Two runs installing at once each
build in a folder of their own and the first to finish wins.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "reference"
MANIFEST = ("package.json", "package-lock.json")
SCRIPTS = ("lib.mjs", "bench_textual.mjs", "bench_runevals.mjs", "fake_openai_server.mjs", "run_code_scorers.mjs")
STAMP = ".scorespec-installed"  # written last: its presence means the install is complete
ENV = "SCORESPEC_BENCH_REFERENCE_DIR"


class ReferenceUnavailable(RuntimeError):
    """The reference cannot run here; the message says why (missing tools, a failed install)."""


def missing_tools() -> list[str]:
    """The names among ``node`` and ``npm`` not found on PATH (empty when both are there)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def default_root() -> Path:
    """The cache root from the environment (see the module docstring); not created here."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    if os.environ.get("SCORESPEC_CACHE"):
        return Path(os.environ["SCORESPEC_CACHE"]).expanduser() / "bench-reference"
    cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_home).expanduser() / "scorespec" / "bench-reference"


def lock_digest(source: Path = SOURCE) -> str:
    """Hex SHA-256 of ``source/package-lock.json``."""
    return hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()


def install(root: Path | None = None, *, source: Path = SOURCE, timeout_s: float = 1800) -> Path:
    """The folder to run the reference's scripts in (``node SCRIPT`` with it as cwd), installed
    under `root` (default `default_root()`) on first use.

    Raises ReferenceUnavailable when node or npm is missing, a file of `source` is missing, or
    ``npm ci`` fails or takes longer than `timeout_s` seconds (its exit code and the end of its
    error output in the message).
    """
    if missing := missing_tools():
        raise ReferenceUnavailable(f"{' and '.join(missing)} not found on PATH: the reference "
                                   f"(Mastra's scorers) runs on Node; install Node 20 or later with npm")
    absent = [name for name in MANIFEST + SCRIPTS if not (source / name).is_file()]
    if absent:
        raise ReferenceUnavailable(f"{source} lacks {', '.join(absent)}")
    root = Path(root) if root is not None else default_root()
    digest = lock_digest(source)
    target = root / digest[:16]
    if not _complete(target, digest):
        _build(root, target, digest, source, timeout_s)
    _refresh_scripts(source, target)
    return target


def _complete(folder: Path, digest: str) -> bool:
    stamp = folder / STAMP
    return stamp.is_file() and stamp.read_text().strip() == digest and (folder / "node_modules").is_dir()


def _build(root: Path, target: Path, digest: str, source: Path, timeout_s: float) -> None:
    """``npm ci`` in a fresh folder beside `target`, then rename it into place."""
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
    try:
        for name in MANIFEST:
            shutil.copyfile(source / name, work / name)
        env = {**os.environ, "npm_config_cache": str(root / "npm-cache"), "npm_config_update_notifier": "false"}
        print(f"# installing the reference: npm ci in {target} (once, about 140 MB)...", file=sys.stderr, flush=True)
        try:
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ReferenceUnavailable(f"npm ci for {target} took more than {timeout_s:.0f} s") from None
        if done.returncode != 0:
            raise ReferenceUnavailable(f"npm ci failed (exit {done.returncode}) for {target}: "
                                       f"{done.stderr.strip()[-600:] or 'no error output'}")
        (work / STAMP).write_text(digest + "\n")
        work.chmod(0o755)  # mkdtemp makes 0700
        if target.exists():  # an incomplete install of this lock, or one that finished meanwhile
            if _complete(target, digest):
                return
            shutil.rmtree(target)
        try:
            work.rename(target)
        except OSError:
            if not _complete(target, digest):  # renamed by another run at the same moment, or a real error
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _refresh_scripts(source: Path, target: Path) -> None:
    """The harness scripts into the install, each replaced atomically when it changed (a run
    beside this one never reads half a file)."""
    for name in SCRIPTS:
        data = (source / name).read_bytes()
        dest = target / name
        if dest.is_file() and dest.read_bytes() == data:
            continue
        fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=target)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)

"""Installing the benchmark's reference (tests/bench/reference.py) into a cache folder, with a
stand-in `npm` on PATH: one `npm ci` per lock file, reuse, refreshed scripts, clear errors."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_reference", ROOT / "tests" / "bench" / "reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

# Records each call (cwd, arguments, npm's cache setting), then does what the environment asks:
# FAKE_NPM_FAIL=1 exits 3 with an error, otherwise it makes node_modules as `npm ci` would.
FAKE_NPM = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(json.dumps([os.getcwd(), sys.argv[1:], os.environ.get("npm_config_cache")]) + "\\n")
if os.environ.get("FAKE_NPM_FAIL"):
    sys.stderr.write("npm error code E404\\nnpm error 404 Not Found - @mastra/evals\\n")
    sys.exit(3)
os.makedirs("node_modules/@mastra/evals")
"""


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A PATH with a stand-in `node` and `npm` only; returns the file npm's calls are logged to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "node").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("npm", "node"):
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / "npm-calls.jsonl"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    return log


@pytest.fixture
def source(tmp_path):
    """A copy of tests/bench/reference/ that a test may change."""
    return Path(shutil.copytree(reference.SOURCE, tmp_path / "source"))


def calls(log: Path) -> list[list]:
    """The stand-in npm's calls: [cwd, arguments, npm_config_cache] each."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_first_use_runs_npm_ci_once_in_a_folder_named_after_the_lock_file(tools, source, tmp_path):
    root = tmp_path / "cache"
    folder = reference.install(root, source=source)
    assert folder == root / reference.lock_digest(source)[:16]
    assert (folder / "node_modules" / "@mastra" / "evals").is_dir()
    for name in reference.MANIFEST + reference.SCRIPTS:
        assert (folder / name).read_bytes() == (source / name).read_bytes(), name
    [(cwd, args, npm_cache)] = calls(tools)
    assert args == ["ci", "--no-audit", "--no-fund", "--loglevel=error"]
    assert Path(cwd).parent == root and cwd != str(folder)  # built beside, then renamed into place
    assert npm_cache == str(root / "npm-cache")
    assert [p.name for p in root.iterdir()] == [folder.name]  # no build folder left behind

    assert reference.install(root, source=source) == folder
    assert len(calls(tools)) == 1  # reused


def test_a_changed_script_is_refreshed_without_reinstalling(tools, source, tmp_path):
    root = tmp_path / "cache"
    folder = reference.install(root, source=source)
    (source / "bench_textual.mjs").write_text("// changed\n")
    assert reference.install(root, source=source) == folder
    assert (folder / "bench_textual.mjs").read_text() == "// changed\n"
    assert len(calls(tools)) == 1


def test_a_changed_lock_file_gets_a_fresh_install(tools, source, tmp_path):
    root = tmp_path / "cache"
    first = reference.install(root, source=source)
    with (source / "package-lock.json").open("a") as fh:
        fh.write("\n")
    second = reference.install(root, source=source)
    assert second != first and second.parent == root
    assert (second / "node_modules").is_dir() and (first / "node_modules").is_dir()
    assert len(calls(tools)) == 2


def test_an_interrupted_install_is_redone(tools, source, tmp_path):
    root = tmp_path / "cache"
    folder = reference.install(root, source=source)
    (folder / reference.STAMP).unlink()
    assert reference.install(root, source=source) == folder
    assert (folder / reference.STAMP).read_text().strip() == reference.lock_digest(source)
    assert len(calls(tools)) == 2


def test_a_failed_npm_ci_raises_with_its_exit_code_and_error_and_leaves_nothing(tools, source, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("FAKE_NPM_FAIL", "1")
    root = tmp_path / "cache"
    with pytest.raises(reference.ReferenceUnavailable, match=r"(?s)npm ci failed \(exit 3\) for .*cache/[0-9a-f]{16}: .*404 Not Found"):
        reference.install(root, source=source)
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("present, missing", [(["node"], "npm"), (["npm"], "node"), ([], "node and npm")])
def test_missing_node_or_npm_is_named(tmp_path, monkeypatch, present, missing):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in present:
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert reference.missing_tools() == missing.split(" and ")
    with pytest.raises(reference.ReferenceUnavailable, match=f"^{missing} not found on PATH"):
        reference.install(tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_missing_source_file_is_named(tools, source, tmp_path):
    (source / "lib.mjs").unlink()
    with pytest.raises(reference.ReferenceUnavailable, match=r"source lacks lib\.mjs$"):
        reference.install(tmp_path / "cache", source=source)


def test_the_cache_root_comes_from_the_environment(tmp_path, monkeypatch):
    for name in (reference.ENV, "SCORESPEC_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert reference.default_root() == tmp_path / "home" / ".cache" / "scorespec" / "bench-reference"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert reference.default_root() == tmp_path / "xdg" / "scorespec" / "bench-reference"
    monkeypatch.setenv("SCORESPEC_CACHE", str(tmp_path / "sc"))
    assert reference.default_root() == tmp_path / "sc" / "bench-reference"
    monkeypatch.setenv(reference.ENV, str(tmp_path / "ref"))
    assert reference.default_root() == tmp_path / "ref"


def test_the_repository_holds_every_file_the_suite_needs():
    for name in reference.MANIFEST + reference.SCRIPTS + ("README.md",):
        assert (reference.SOURCE / name).is_file(), name
    assert os.path.getsize(reference.SOURCE / "package-lock.json") > 10_000

"""Tests run in places of their own: the default store, home and caches are temporary (the
`isolated_environment` fixture of conftest.py), so a run without a store never reaches the
user's `.scorespec/`."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import ROOT, SPEC_FIXTURES, USER_MODEL_CACHE
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine import run_evals
from engine.cli.main import app
from engine.core.paths import cache_dir
from engine.run.store import Store, default_store_path

NUMERIC = str(SPEC_FIXTURES / "numeric.yaml")  # rule-only: score = the output read as a number


def test_a_run_without_a_store_goes_to_the_tests_store_not_the_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # stands for the user's checkout
    summary = run_evals([{"output": "0.5"}, {"output": "0.25"}], [NUMERIC], run_id="isolated")
    assert summary.scores == {"numeric": 0.375}
    assert not (tmp_path / ".scorespec").exists()
    store = Path(os.environ["SCORESPEC_STORE"])
    assert default_store_path() == store and not store.is_relative_to(tmp_path)
    with Store(store) as db:
        assert [run["run_id"] for run in db.list_runs()] == ["isolated"]


def test_the_eval_command_without_a_store_writes_none_in_the_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text('{"output": "1"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", NUMERIC, "--data", "data.jsonl", "--quiet"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl"]
    with Store(os.environ["SCORESPEC_STORE"]) as db:
        assert [run["scorers"] for run in db.list_runs()] == [["numeric"]]


def test_store_home_and_model_cache_are_temporary(isolated_environment, tmp_path_factory):
    home, base = isolated_environment, tmp_path_factory.getbasetemp()
    store = Path(os.environ["SCORESPEC_STORE"])
    assert store.is_relative_to(base) and not store.exists()  # a store of this test's own, still empty
    assert home.is_relative_to(base) and Path.home() == home and Path("~").expanduser() == home
    assert os.environ["XDG_CACHE_HOME"] == str(home / ".cache")
    assert cache_dir() != USER_MODEL_CACHE
    assert cache_dir().name.startswith("scorespec-test-cache-")
    assert not store.is_relative_to(ROOT) and not home.is_relative_to(ROOT)

"""The SQLite result store: schema, WAL mode, upserts, run lookup, default path."""

from __future__ import annotations

import sqlite3

import pytest

from engine.store import Store, default_store_path


def result(score=None, error=None, not_scorable=None, scorer="faithfulness"):
    return {"scorer": scorer, "runId": "r", "specHash": "h" * 64, "model": "openai/m", "score": score,
            "error": error, "notScorable": not_scorable, "usage": {"calls": 3, "tokensIn": 10}}


def test_schema_wal_and_one_row_per_item_and_scorer(tmp_path):
    path = tmp_path / "deep" / "store.sqlite"
    with Store(path) as store:
        store.begin_run("run-1", data="/d.jsonl", out="/o.jsonl", scorers=["faithfulness"], config={"a": 1})
        store.record_item("run-1", "1", 1, {"id": 1, "output": "x \ud800"})  # a lone surrogate is stored escaped
        store.record_result("run-1", "1", "faithfulness", result(error={"kind": "transport", "message": "500"}))
        store.record_result("run-1", "1", "faithfulness", result(score=0.5))  # the retry replaces it
        store.record_result("run-1", "2", "faithfulness", result(not_scorable={"reason": "no claims"}))
        assert sorted(store.statuses("run-1")) == [("1", "faithfulness", "scored", 0.5),
                                                   ("2", "faithfulness", "not_scorable", None)]
        run = store.get_run("run-1")
        assert run["counts"] == {"scored": 1, "not_scorable": 1, "failed": 0}
        assert run["items"] == 1 and run["status"] == "running" and run["config"] == {"a": 1}
        store.finish_run("run-1", status="finished", summary={"verdict": "passed"}, verdict="passed")
        assert store.get_run("run-1")["summary"] == {"verdict": "passed"}
        lines = list(store.results("run-1"))
        assert [(line["id"], line["scorer"], line["score"]) for line in lines] == [(1, "faithfulness", 0.5),
                                                                                  ("2", "faithfulness", None)]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    columns = [r[1] for r in db.execute("PRAGMA table_info(results)")]
    assert columns == ["run_id", "item_id", "scorer_id", "status", "score", "spec_hash", "model", "usage", "result",
                       "created_at", "updated_at"]
    assert db.execute("SELECT usage, model FROM results WHERE item_id='1'").fetchone() == (
        '{"calls": 3, "tokensIn": 10}', "openai/m")


def test_run_lookup_by_prefix_and_listing(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        store.begin_run("20250101-aaa")
        store.begin_run("20250101-abb")
        store.begin_run("20250102-ccc", out="/x/out.jsonl")
        assert store.get_run("20250102")["run_id"] == "20250102-ccc"
        assert store.get_run("nope") is None
        with pytest.raises(LookupError, match="matches 2 runs"):
            store.get_run("20250101-a")
        assert store.run_for_out("/x/out.jsonl") == "20250102-ccc"
        assert {r["run_id"] for r in store.list_runs()} == {"20250101-aaa", "20250101-abb", "20250102-ccc"}
        assert len(store.list_runs(limit=2)) == 2
        # resuming marks the run running again and keeps its out file
        store.finish_run("20250102-ccc", status="interrupted")
        store.begin_run("20250102-ccc", scorers=["x"])
        run = store.get_run("20250102-ccc")
        assert (run["status"], run["out"], run["scorers"]) == ("running", "/x/out.jsonl", ["x"])


def test_default_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SCORESPEC_STORE", raising=False)
    assert default_store_path() == tmp_path / ".scorespec" / "store.sqlite"
    with Store() as store:
        assert store.path == tmp_path / ".scorespec" / "store.sqlite"
    assert (tmp_path / ".scorespec" / "store.sqlite").is_file()
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path / "elsewhere.sqlite"))
    assert default_store_path() == tmp_path / "elsewhere.sqlite"


def test_two_handles_share_one_file(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path) as a, Store(path) as b:
        a.begin_run("r")
        a.record_result("r", "1", "x", result(score=1.0, scorer="x"))
        assert list(b.statuses("r")) == [("1", "x", "scored", 1.0)]

"""The SQLite result store: schema, WAL mode, upserts, rows keyed by label, run lookup, default
path, and the migration of a store written before labels existed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from engine.run.store import Store, default_store_path
from engine.run.store_schema import SCHEMA_VERSION
from engine.run.store_schema import StoreVersionError


def result(score=None, error=None, not_scorable=None, scorer="faithfulness"):
    return {"scorer": scorer, "runId": "r", "specHash": "h" * 64, "model": "openai/m", "score": score,
            "error": error, "notScorable": not_scorable, "usage": {"calls": 3, "tokensIn": 10}}


def test_schema_wal_and_one_row_per_item_and_label(tmp_path):
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
    assert columns == ["run_id", "item_id", "label", "scorer_id", "status", "score", "spec_hash", "model", "usage",
                       "result", "created_at", "updated_at"]
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (3,)
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


def test_two_labels_of_one_scorer_are_two_rows(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        store.record_result("r", "1", "faith-v1", result(score=0.5))
        store.record_result("r", "1", "faith-v2", result(score=1.0))
        store.record_result("r", "1", "faith-v2", result(score=0.25))  # a retry replaces its own label's row only
        assert sorted(store.statuses("r")) == [("1", "faith-v1", "scored", 0.5), ("1", "faith-v2", "scored", 0.25)]
        assert [(line["scorer"], line["label"]) for line in store.results("r")] == [
            ("faithfulness", "faith-v1"), ("faithfulness", "faith-v2")]


# The schema of a store written before labels existed (schema version 1), as that code created
# it: results keyed by (run, item, scorer id).
VERSION_1_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    data TEXT,
    out TEXT,
    scorers TEXT NOT NULL DEFAULT '[]',
    config TEXT NOT NULL DEFAULT '{}',
    summary TEXT,
    verdict TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    position INTEGER,
    item TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    spec_hash TEXT,
    model TEXT,
    usage TEXT,
    result TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id, scorer_id)
);
CREATE TABLE IF NOT EXISTS calibrations (
    run_id TEXT NOT NULL,
    scorer_id TEXT NOT NULL,
    spec_hash TEXT,
    model TEXT,
    figures TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, scorer_id)
);
CREATE INDEX IF NOT EXISTS runs_out ON runs (out);
"""


def version_1_store(path, rows):
    """A store file as the code before labels wrote it, holding run "old" with `rows`:
    (item id, scorer id, status, score, result JSON text)."""
    db = sqlite3.connect(path)
    db.executescript(VERSION_1_DDL)
    db.execute("PRAGMA user_version = 1")
    t = "2025-01-01T00:00:00.000Z"
    db.execute("INSERT INTO runs VALUES ('old', 'interrupted', NULL, NULL, '[\"numeric\"]', '{}', NULL, NULL, ?, ?)",
               (t, t))
    for item_id, scorer_id, status, score, data in rows:
        db.execute("INSERT INTO items VALUES ('old', ?, NULL, ?, ?)", (item_id, json.dumps({"id": int(item_id)}), t))
        db.execute("INSERT INTO results VALUES ('old', ?, ?, ?, ?, 'h', NULL, '{}', ?, ?, ?)",
                   (item_id, scorer_id, status, score, data, t, t))
    db.commit()
    db.close()


def test_a_store_without_labels_is_migrated_on_open(tmp_path):
    path = tmp_path / "old.sqlite"
    version_1_store(path, [("2", "numeric", "scored", 0.5, '{"scorer": "numeric", "score": 0.5}'),
                           ("1", "numeric", "failed", None, '{"scorer": "numeric", "error": {"kind": "formula"}}')])
    with Store(path) as store:
        assert sorted(store.statuses("old")) == [("1", "numeric", "failed", None), ("2", "numeric", "scored", 0.5)]
        # rows keep the order they were first written; each line gets its scorer id as label
        assert [(line["id"], line["scorer"], line["label"]) for line in store.results("old")] == [
            (2, "numeric", "numeric"), (1, "numeric", "numeric")]
        store.record_result("old", "1", "numeric-v2", result(score=1.0, scorer="numeric"))
        assert len(list(store.statuses("old"))) == 3
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (3,)
    assert [r[1] for r in db.execute("PRAGMA table_info(results)")][:4] == ["run_id", "item_id", "label", "scorer_id"]
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'results_v1'").fetchone() == (0,)
    db.close()
    with Store(path) as again:  # opening a migrated store changes nothing
        assert len(list(again.statuses("old"))) == 3


def test_a_store_from_a_newer_scorespec_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(StoreVersionError, match="schema version 99, written by a newer scorespec"):
        Store(path)


@pytest.mark.parametrize("with_out", [True, False])
def test_a_run_written_before_labels_resumes(tmp_path, with_out):
    from engine import run_evals

    numeric = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")
    data = [{"output": o} for o in ("0.5", "7", "0.25")]  # item 2 fails (out of range)
    out = tmp_path / "out.jsonl"
    run_evals(data, [numeric], out=out, run_id="old", store=False)
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    for line in lines:  # out-file lines and store rows as written before labels existed
        del line["label"]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    rows = [(str(line["id"]), line["scorer"], "failed" if line["error"] else "scored", line["score"],
             json.dumps({k: v for k, v in line.items() if k != "id"})) for line in lines]
    version_1_store(tmp_path / "store.sqlite", rows)
    if not with_out:
        out.unlink()

    data[1]["output"] = "0.75"  # fixed: only the failed item is scored again
    asked = []
    summary = run_evals(data, [numeric], out=out if with_out else None, run_id="old", resume=True,
                        store=tmp_path / "store.sqlite", on_item_complete=lambda item, results: asked.append(item["id"]))
    assert asked == [2] and summary.resumed == 2
    assert summary.scores == {"numeric": 0.5} and summary.verdict == "passed"
    with Store(tmp_path / "store.sqlite") as store:
        assert sorted(store.statuses("old")) == [("1", "numeric", "scored", 0.5), ("2", "numeric", "scored", 0.75),
                                                 ("3", "numeric", "scored", 0.25)]
    if with_out:
        final = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
        assert [(line["id"], line.get("label"), line["score"]) for line in final] == [
            (1, None, 0.5), (3, None, 0.25), (2, "numeric", 0.75)]  # old lines kept as written

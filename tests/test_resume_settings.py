"""``--resume`` reads a run's stored settings back whole: by its out file or its run id, in Python
and on the CLI; a setting the resuming call gives wins; other scorers, options or data than the
run's are refused rather than mixed into its results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.cli.main import app
from engine import run_evals
from engine.run.settings import RESUMED_FIELDS, RunSettings
from engine.run.store import Store

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None}
NUMERIC = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")

#: item 4's output shares nothing with its ground truth: it scores 0, below an item cut-off of 0.2
ITEMS = [{"id": 1, "output": "the sky is blue", "ground_truth": "the sky is blue"},
         {"id": 2, "output": "grass is green", "ground_truth": "grass is green"},
         {"id": 3, "output": "snow is white", "ground_truth": "snow is white"},
         {"id": 4, "output": "xxxx", "ground_truth": "qqqq"}]


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def write_items(path: Path) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in ITEMS), encoding="utf-8")
    return path


def config_of(store: Path, run_id: str) -> dict:
    with Store(store) as db:
        return db.get_run(run_id)["config"]


@pytest.fixture
def half_run(tmp_path, monkeypatch):
    """A CLI run of textual_difference on scale 10 with a threshold and an item cut-off, stopped
    after two of four items (as an interrupted run leaves it): (data, out file, store, run id)."""
    monkeypatch.chdir(tmp_path)
    data, out, store = write_items(tmp_path / "mid.jsonl"), tmp_path / "o3.jsonl", tmp_path / "store.sqlite"
    first = invoke("eval", "textual_difference", "--data", data, "--out", out, "--threshold",
                   "textual_difference=0.1", "--option", "scale=10", "--item-cutoff", "textual_difference=0.2",
                   "--limit", "2", "--store", store, "--quiet", "--json")
    assert first.exit_code == 0, first.stderr
    run_id = json.loads(first.stdout)["runId"]
    return data, out, store, run_id


def test_item_cutoffs_are_among_the_resumed_settings_and_the_limit_is_not():
    assert "item_cutoffs" in RESUMED_FIELDS and "limit" not in RESUMED_FIELDS
    stored = RunSettings(thresholds={"a": 0.5}, item_cutoffs={"a": 0.2}, limit=2)
    resumed = RunSettings(thresholds={"a": 0.9}).resumed_from(stored)
    assert resumed.thresholds == {"a": 0.9} and resumed.item_cutoffs == {"a": 0.2} and resumed.limit is None


def test_resuming_by_out_file_reads_back_the_threshold_item_cutoff_and_options(half_run):
    data, out, store, run_id = half_run
    resumed = invoke("eval", "textual_difference", "--data", data, "--out", out, "--resume", "--store", store,
                     "--quiet", "--json")
    assert resumed.exit_code == 1, resumed.stderr  # item 4 scored 0 < its cut-off 0.2
    summary = json.loads(resumed.stdout)
    assert summary["runId"] == run_id and summary["items"] == 4 and summary["resumed"] == 2
    assert summary["scorers"]["textual_difference"]["threshold"]["min"] == 0.1
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted((line["id"], line["score"]) for line in lines) == [(1, 10.0), (2, 10.0), (3, 10.0), (4, 0.0)]
    config = config_of(store, run_id)  # updated with the merged settings, never emptier ones
    assert config["cli"]["options"] == ["scale=10"] and config["cli"]["scorers"] == ["textual_difference"]
    assert config["settings"]["thresholds"] == ["textual_difference=0.1"]
    assert config["settings"]["item_cutoffs"] == {"textual_difference": 0.2}


def test_resuming_by_out_file_alone_fills_the_scorers_and_data(half_run):
    _data, out, store, run_id = half_run
    resumed = invoke("eval", "--out", out, "--resume", "--store", store, "--quiet", "--json")
    assert resumed.exit_code == 1, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert (summary["runId"], summary["items"], summary["resumed"]) == (run_id, 4, 2)
    assert summary["scorers"]["textual_difference"]["mean"] == pytest.approx(7.5)  # scale 10: 10, 10, 10, 0


def test_a_flag_given_on_resume_wins_over_the_stored_one(half_run):
    data, out, store, _run_id = half_run
    resumed = invoke("eval", "textual_difference", "--data", data, "--out", out, "--resume", "--store", store,
                     "--threshold", "textual_difference=9", "--item-cutoff", "textual_difference=0", "--quiet",
                     "--json")
    summary = json.loads(resumed.stdout)
    assert resumed.exit_code == 1 and summary["verdict"] == "below_threshold"  # mean 7.5 < 9; no item < 0
    assert summary["scorers"]["textual_difference"]["threshold"]["min"] == 9


def test_the_same_data_by_another_path_resumes(half_run):
    _data, _out, store, _run_id = half_run
    resumed = invoke("eval", "textual_difference", "--data", "mid.jsonl", "--out", "o3.jsonl", "--resume",
                     "--store", store, "--quiet", "--json")  # relative to the working folder
    assert resumed.exit_code == 1, resumed.stderr
    assert json.loads(resumed.stdout)["resumed"] == 2


def test_resuming_with_other_scorers_fails_naming_what_differs(half_run):
    data, out, store, run_id = half_run
    before = out.read_bytes()
    resumed = invoke("eval", "content_similarity", "--data", data, "--out", out, "--resume", "--store", store)
    assert resumed.exit_code == 2
    message = " ".join(resumed.stderr.split())
    assert f"--resume: run {run_id} scored textual_difference with option scale=10; this command gives " \
           "content_similarity" in message
    assert "start a new run with another --out" in message
    assert out.read_bytes() == before  # nothing was scored or written
    assert config_of(store, run_id)["cli"]["scorers"] == ["textual_difference"]


def test_resuming_with_other_options_or_data_fails(half_run, tmp_path):
    data, out, store, _run_id = half_run
    options = invoke("eval", "textual_difference", "--data", data, "--out", out, "--resume", "--store", store,
                     "--option", "scale=1")
    assert options.exit_code == 2
    assert "with option scale=10; this command gives textual_difference with option scale=1" in " ".join(
        options.stderr.split())
    other = write_items(tmp_path / "other.jsonl")
    data_differs = invoke("eval", "textual_difference", "--data", other, "--out", out, "--resume", "--store", store)
    assert data_differs.exit_code == 2
    message = " ".join(data_differs.stderr.split())
    assert f"on {data.resolve()}" in message and f"on {other.resolve()}" in message


def test_an_out_file_without_a_store_row_still_resumes(tmp_path):
    data, out = write_items(tmp_path / "mid.jsonl"), tmp_path / "out.jsonl"
    run_evals(ITEMS[:2], ["textual_difference"], out=out, store=False)
    resumed = invoke("eval", "textual_difference", "--data", data, "--out", out, "--resume", "--store",
                     tmp_path / "store.sqlite", "--quiet", "--json")
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["resumed"] == 2 and json.loads(resumed.stdout)["items"] == 4


def test_python_resume_uses_the_stored_thresholds_and_a_given_one_wins(tmp_path):
    out, store = tmp_path / "r.jsonl", tmp_path / "store.sqlite"
    first = run_evals(ITEMS, ["textual_difference"], RunSettings(out=out, thresholds={"textual_difference": 0.99},
                                                                 limit=3), store=store)
    assert first.verdict == "passed"  # three identical texts: mean 1
    again = run_evals(ITEMS, ["textual_difference"], RunSettings(out=out, resume=True), store=store)
    assert again.verdict == "below_threshold" and again.resumed == 3  # mean 0.75 < 0.99, the stored threshold
    assert again.scorers["textual_difference"].threshold.min == 0.99
    assert config_of(store, first.run_id)["settings"]["thresholds"] == {"textual_difference": 0.99}
    given = run_evals(ITEMS, ["textual_difference"], RunSettings(out=out, resume=True,
                                                                 thresholds={"textual_difference": 0.5}), store=store)
    assert given.verdict == "passed" and given.scorers["textual_difference"].threshold.min == 0.5


def test_python_resume_with_other_scorers_is_refused(tmp_path):
    out, store = tmp_path / "r.jsonl", tmp_path / "store.sqlite"
    first = run_evals(ITEMS[:2], ["textual_difference"], out=out, store=store)
    with pytest.raises(ValueError, match=f"resume: run {first.run_id} scored textual_difference; this call "
                                         "scores numeric"):
        run_evals([{"id": 1, "output": "0.5"}], [NUMERIC], out=out, resume=True, store=store)


def test_the_cli_resumes_a_run_started_in_python_with_its_thresholds(tmp_path):
    data, out, store = write_items(tmp_path / "mid.jsonl"), tmp_path / "r.jsonl", tmp_path / "store.sqlite"
    first = run_evals(ITEMS, ["textual_difference"], RunSettings(out=out, thresholds={"textual_difference": 0.99},
                                                                 limit=2), store=store)
    resumed = invoke("eval", "textual_difference", "--data", data, "--out", out, "--option", "scale=1", "--resume",
                     "--store", store, "--quiet", "--json")
    summary = json.loads(resumed.stdout)
    assert resumed.exit_code == 1 and summary["runId"] == first.run_id and summary["resumed"] == 2
    assert summary["verdict"] == "below_threshold"  # mean 0.75 < the stored 0.99


def test_resume_with_a_new_out_file_and_run_id_starts_the_run(tmp_path):
    data, out, store = write_items(tmp_path / "mid.jsonl"), tmp_path / "new.jsonl", tmp_path / "store.sqlite"
    started = invoke("eval", "textual_difference", "--data", data, "--out", out, "--run-id", "fresh", "--resume",
                     "--store", store, "--quiet", "--json")
    assert started.exit_code == 0, started.stderr
    summary = json.loads(started.stdout)
    assert (summary["runId"], summary["items"], summary["resumed"]) == ("fresh", 4, 0)


def _stopped_before_its_first_line(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A CLI run with a threshold whose out file a stopped driver left empty (its results were
    elsewhere, as a Ray run's shards are): (data, out, store, run id)."""
    data, out, store = write_items(tmp_path / "mid.jsonl"), tmp_path / "o.jsonl", tmp_path / "store.sqlite"
    first = invoke("eval", "textual_difference", "--data", data, "--out", out, "--threshold",
                   "textual_difference=0.99", "--limit", "2", "--store", store, "--quiet", "--json")
    assert first.exit_code == 0, first.stderr
    out.write_text("", encoding="utf-8")
    return data, out, store, json.loads(first.stdout)["runId"]


def test_resuming_by_an_out_file_left_empty_continues_its_run_with_its_settings(tmp_path):
    data, out, store, run_id = _stopped_before_its_first_line(tmp_path)
    resumed = invoke("eval", "textual_difference", "--data", data, "--out", out, "--resume", "--store", store,
                     "--quiet", "--json")
    summary = json.loads(resumed.stdout)
    assert (summary["runId"], summary["items"], summary["verdict"]) == (run_id, 4, "below_threshold")
    assert f"resuming run {run_id}" in resumed.stderr  # resumed (a Ray run's shards are recovered then)
    with Store(store) as db:
        assert [run["run_id"] for run in db.list_runs()] == [run_id]


def test_resuming_an_out_file_left_empty_by_its_run_id_continues_that_run(tmp_path):
    data, out, store, run_id = _stopped_before_its_first_line(tmp_path)
    summary = run_evals(ITEMS, ["textual_difference"], RunSettings(out=out, run_id=run_id, resume=True), store=store)
    assert (summary.run_id, summary.verdict) == (run_id, "below_threshold")  # the stored 0.99 threshold
    with Store(store) as db:
        assert [run["run_id"] for run in db.list_runs()] == [run_id]


def test_a_model_set_by_the_environment_is_recorded_and_another_one_on_resume_is_refused(tmp_path, monkeypatch):
    """$SCORESPEC_MODEL chooses the judge as --model does: the run records it, a resume under
    another $SCORESPEC_MODEL fails naming both instead of scoring the rest with another judge, and a
    resume without it reads the recorded one back."""
    monkeypatch.chdir(tmp_path)
    data, out, store = write_items(tmp_path / "mid.jsonl"), tmp_path / "o.jsonl", tmp_path / "store.sqlite"
    run = CliRunner().invoke(app, ["eval", "textual_difference", "--data", str(data), "--out", str(out), "--limit",
                                   "2", "--store", str(store), "--quiet", "--json"],
                             env={**ENV, "SCORESPEC_MODEL": "openai/model-a"})
    assert run.exit_code == 0, run.stderr
    run_id = json.loads(run.stdout)["runId"]
    assert config_of(store, run_id)["cli"]["model"] == "openai/model-a"

    other = CliRunner().invoke(app, ["eval", "--out", str(out), "--resume", "--store", str(store), "--quiet"],
                               env={**ENV, "SCORESPEC_MODEL": "openai/model-b"})
    assert other.exit_code == 2
    message = " ".join(other.stderr.split())
    assert "with model openai/model-a; this command gives" in message and "with model openai/model-b" in message
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2  # nothing more was scored

    same = invoke("eval", "--out", out, "--resume", "--store", store, "--quiet")
    assert same.exit_code == 0, same.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4
    assert config_of(store, run_id)["cli"]["model"] == "openai/model-a"

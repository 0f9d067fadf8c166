"""What `scorespec align` refuses up front, and what it says when nothing beats the scorer: label
values no item has, a split too small or one-sided, a zero share, a bad child id, ties with the
scorer on dev, a scorer that asks no judge, and a resume with no work folder. Judges are fakes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers the batch commands, align among them)
from engine.cli.main import app
from engine.testing.fake_openai import FakeOpenAIServer


def _data(path: Path, labels: list[str]) -> Path:
    rows = [{"id": f"item-{i}", "input": f"Question {i}?", "context": [f"Passage {i}."], "output": f"Answer {i}.",
             "label": label} for i, label in enumerate(labels)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _align(tmp_path: Path, monkeypatch, *args: str, reply=None):
    """Run ``scorespec align`` against a fake OpenAI server; (result, the requests it received)."""
    monkeypatch.chdir(tmp_path)
    env = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None,
           "SCORESPEC_CACHE": str(tmp_path / "cache")}
    with FakeOpenAIServer(reply or (lambda request: {"verdict": "yes"})) as server:
        done = CliRunner().invoke(app, ["align", *args, "--model", "openai/gpt-4o-mini", "--base-url",
                                        server.base_url], env=env)
        return done, list(server.requests)


def _said(done) -> str:
    return " ".join(done.output.split())


BALANCED = ["Fully attributable", "Not fully attributable"] * 10


def test_a_mistyped_positive_label_is_refused_before_any_judge_call(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                            "Fully atributable", "--quiet")
    assert done.exit_code == 2, done.output
    assert ("no labelled item has the --positive label 'Fully atributable' in 'label'; the labels seen: "
            "'Fully attributable' (10), 'Not fully attributable' (10): did you mean 'Fully attributable'?") in _said(done)
    assert requests == [] and not (tmp_path / "scorer_specs").exists()


def test_labels_all_of_one_class_are_refused_before_any_judge_call(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", ["Fully attributable"] * 20)
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                            "Fully attributable", "--quiet")
    assert done.exit_code == 2, done.output
    assert ("all 20 labelled items are positive ('Fully attributable'): a split needs both classes, at least 4 "
            "items of each with the default split") in _said(done)
    assert requests == []


def test_too_few_items_for_the_split_are_refused_saying_what_is_needed(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--limit", "5",
                            "--positive", "Fully attributable", "--quiet")
    assert done.exit_code == 2, done.output
    assert ("too few labelled items to split (train has 1 positive item(s), needs 2, train has 0 negative item(s), "
            "needs 2): each class needs at least 2 items in train, 1 in dev and 1 in test — 4 labelled items of "
            "each class with --split 0.5,0.25,0.25") in _said(done)
    assert requests == []
    # 8 items, 4 of each class, are enough for the default split: the judge is asked
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--limit", "8",
                            "--positive", "Fully attributable", "--quiet", "--strategies", "cutoff")
    assert "too few" not in done.output and requests, done.output


def test_a_zero_test_share_is_refused_unless_a_test_file_is_given(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    for split, error in (("0.6,0.4,0", "--split 0.6,0.4,0: a test share of 0 leaves no item to test the child on"),
                         ("0,0.5,0.5", "train and dev must be > 0"), ("0.5,0,0.5", "train and dev must be > 0")):
        done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                                "Fully attributable", "--split", split, "--quiet")
        assert done.exit_code == 2 and error in _said(done), done.output
        assert requests == []
    held = _data(tmp_path / "held.jsonl", ["Fully attributable", "Not fully attributable"] * 2)
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                            "Fully attributable", "--split", "0.6,0.4,0", "--test", str(held), "--quiet",
                            "--strategies", "cutoff", "--json")
    assert done.exit_code == 0 and requests, done.output
    assert json.loads(done.stdout.strip().splitlines()[-1])["split"]["test"] == 4


def _steady_reply(request: dict):
    """A judge that says yes to everything, whatever its instructions; the optimiser proposes text."""
    from engine.testing.schema_answers import schema_of_request

    schema = schema_of_request(request) or {}
    if "instructions" in (schema.get("properties") or {}):
        return {"diagnosis": "Too lenient.", "instructions": "Is the response fully supported? Answer yes or no."}
    return {"verdict": "yes"}


def test_the_scorer_wins_ties_on_dev_and_nothing_is_written(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                            "Fully attributable", "--strategies", "instructions,examples,cutoff", "--name", "tied",
                            "--json", reply=_steady_reply)
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout.strip().splitlines()[-1])
    ranked = [c for c in record["candidates"] if c["dev"] is not None]
    assert len(ranked) == len(record["candidates"]) == 4  # every candidate ran on dev and tied with the scorer
    assert all(c["dev"]["balancedAccuracy"] == record["parentDev"]["balancedAccuracy"] == 0.5 for c in ranked)
    assert record["chosen"] is None and record["child"] is None and record["test"] is None and record["files"] == []
    assert "no candidate did better than the scorer on the dev split; nothing written" in record["notes"]
    said = _said(done)
    assert "note: no candidate did better than the scorer on the dev split; nothing written" in said
    assert "tied_i1 " in said and " *" not in said  # the table is printed, no candidate starred
    assert not (tmp_path / "scorer_specs").exists() and not (tmp_path / "tied.align.json").exists()


def test_the_child_id_must_be_a_spec_id_not_the_scorers_nor_a_shipped_one(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    (tmp_path / "out").mkdir()
    for name, error in (("../evil name", "--name '../evil name': a child's id is a spec id"),
                        ("Quick", "--name 'Quick': a child's id is a spec id"),
                        ("faithfulness_quick", "--name faithfulness_quick: that is the scorer's own id"),
                        ("faithfulness", "--name faithfulness: a shipped scorer has that id, and the child would "
                                         "shadow it; pick another name, e.g. faithfulness_quick_aligned")):
        done, requests = _align(tmp_path, monkeypatch, "faithfulness_quick", "--data", str(data), "--positive",
                                "Fully attributable", "--name", name, "--out-dir", "out", "--quiet")
        assert done.exit_code == 2 and error in _said(done), done.output
        assert requests == []
    assert list((tmp_path / "out").iterdir()) == [] and not (tmp_path / "evil name").exists()


def _plain(path: Path, n: int = 12, ground_truth: bool = True) -> Path:
    rows = [{"id": f"i{i}", "output": "the cat" if i % 2 else "a dog", "label": "yes" if i % 2 else "no",
             "stars": i % 3, **({"ground_truth": "the"} if ground_truth else {})} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_scorer_that_asks_no_judge_aligns_only_its_cutoff_and_says_so(tmp_path, monkeypatch):
    data = _plain(tmp_path / "plain.jsonl")
    done, requests = _align(tmp_path, monkeypatch, "includes", "--data", str(data), "--positive", "yes", "--quiet",
                            "--json")
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["notes"][0] == "this scorer asks no judge: only the cut-off can be aligned"
    assert not any("prompt" in note for note in record["notes"])
    assert [c["strategy"] for c in record["candidates"]] == ["cutoff"] and requests == []
    # graded labels leave nothing to align: refused before anything runs
    done, _ = _align(tmp_path, monkeypatch, "includes", "--data", str(data), "--label-field", "stars", "--quiet")
    assert done.exit_code == 2, done.output
    assert ("includes asks no judge (it has no prompt stage): only its cut-off can be aligned, which needs binary "
            "labels (--positive) and the cutoff strategy") in _said(done)


def test_why_no_item_was_scored_shows_even_when_quiet(tmp_path, monkeypatch):
    data = _plain(tmp_path / "plain.jsonl", ground_truth=False)
    done, _ = _align(tmp_path, monkeypatch, "includes", "--data", str(data), "--positive", "yes", "--quiet", "--json")
    assert done.exit_code == 2, done.output
    (cand,) = json.loads(done.stdout.strip().splitlines()[-1])["candidates"]
    assert cand["dropped"] == ("no cut-off could be fitted: no scored item (8 item(s) failed: includes needs "
                               "'ground_truth' and the item has none)")
    assert "no cut-off could be fitted: no scored item (8 item(s) failed: includes needs 'ground_truth'" in _said(done)


def test_resume_with_no_work_folder_says_it_starts_afresh(tmp_path, monkeypatch):
    data = _data(tmp_path / "labelled.jsonl", BALANCED)
    args = ("faithfulness_quick", "--data", str(data), "--positive", "Fully attributable", "--strategies", "cutoff",
            "--name", "fresh", "--quiet", "--resume")
    done, requests = _align(tmp_path, monkeypatch, *args)
    assert done.exit_code == 0 and requests, done.output
    assert ("note: --resume: no alignment to resume (.scorespec-align/fresh/state.json does not exist); starting "
            "afresh") in " ".join(done.stderr.split())
    done, _ = _align(tmp_path, monkeypatch, *args)  # now there is one: no note
    assert done.exit_code == 0 and "no alignment to resume" not in done.output, done.output

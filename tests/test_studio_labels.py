"""The labels file the studio writes beside a dataset (JSON Lines: id, label, who, when), and
``--labels FILE`` on ``calibrate``, ``compare`` and ``align`` reading it into each item's label."""

from __future__ import annotations

import json

import pytest
from studio_folder import DATA, make_folder
from typer.testing import CliRunner

import engine.cli.align  # noqa: F401  (registers align)
import engine.cli.calibrate  # noqa: F401  (registers calibrate)
import engine.cli.compare  # noqa: F401  (registers compare)
from engine.cli.main import app
from engine.studio.labels import LabelsFileError, add_label, label_queue, labels_path, read_labels, with_labels

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None}


def test_the_labels_file_sits_beside_its_dataset_and_the_last_line_for_an_id_wins(tmp_path):
    path = labels_path(tmp_path / "items.jsonl")
    assert path == tmp_path / "items.labels.jsonl"
    add_label(path, "a", "yes", who="ana")
    add_label(path, 7, 3, who="bo")
    add_label(path, "a", "no", who="bo")
    add_label(path, "b", "yes")
    add_label(path, "b", None)  # taken back
    assert read_labels(path) == {"a": "no", "7": 3}
    first = json.loads(path.read_text().splitlines()[0])
    assert set(first) == {"id", "label", "who", "when"} and first["who"] == "ana"
    with pytest.raises(ValueError, match="a label is text, a number or a boolean"):
        add_label(path, "c", ["x"])


def test_a_bad_labels_line_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "x.labels.jsonl"
    path.write_text('{"id": "a", "label": "yes"}\n\n{"id": "b"}\n')
    with pytest.raises(LabelsFileError, match=r"x\.labels\.jsonl:3: a labels line is an object with an id and a label"):
        read_labels(path)
    path.write_text("not json\n")
    with pytest.raises(LabelsFileError, match=r":1: not JSON"):
        read_labels(path)


def test_the_queue_puts_unlabelled_items_nearest_the_cutoff_first():
    results = [{"id": "far", "score": 0.0}, {"id": "near", "score": 0.6}, {"id": "done", "score": 0.5},
               {"id": "failed", "score": None}, {"id": "mid", "score": 0.8}]
    assert label_queue(results, {"done": "yes"}, 0.5) == ["near", "mid", "far"]
    assert label_queue(results, {}, None) == ["far", "near", "done", "mid"]


def test_labels_are_laid_into_the_label_field_of_the_items_they_name():
    items = [{"id": 1, "output": "a", "label": "old"}, {"id": "2", "output": "b"}]
    assert with_labels(items, {"1": "new"}, "label") == [{"id": 1, "output": "a", "label": "new"},
                                                         {"id": "2", "output": "b"}]


def test_an_item_the_labels_file_does_not_label_loses_the_datasets_own_label():
    items = [{"id": 1, "label": "Fully attributable"}, {"id": 2, "label": "Not fully attributable"}]
    assert with_labels(items, {"2": "yes"}, "label") == [{"id": 1}, {"id": 2, "label": "yes"}]


def test_a_blank_label_is_refused_and_null_takes_a_label_back(tmp_path):
    import pytest

    from engine.studio.labels import add_label, read_labels

    path = tmp_path / "items.labels.jsonl"
    with pytest.raises(ValueError, match="not blank"):
        add_label(path, 1, "  ")
    add_label(path, 1, "yes")
    add_label(path, 1, None)
    assert read_labels(path) == {}


def verdict_by_item(request: dict) -> dict:
    text = json.dumps(request["messages"])
    return {"verdict": "no" if "answer 2" in text else "yes", "reason": "judged"}


def test_calibrate_and_compare_read_the_labels_file_with_labels(tmp_path, fake_server, monkeypatch):
    root = make_folder(tmp_path)
    monkeypatch.chdir(root)
    for item_id, label in (("item-1", "yes"), ("item-2", "no"), ("item-3", "yes"), ("item-4", "no")):
        add_label(labels_path(root / DATA), item_id, label, who="ana")
    fake_server.reply = verdict_by_item
    judge = ["--model", "openai/x", "--base-url", fake_server.base_url, "--no-cache", "--quiet", "--json"]
    calibrated = CliRunner().invoke(app, ["calibrate", "politeness", "--data", DATA, "--labels", "items.labels.jsonl",
                                          "--positive", "yes", *judge], env=ENV)
    assert calibrated.exit_code == 0, calibrated.output
    figures = json.loads(calibrated.stdout)
    assert (figures["labelled"], figures["positives"], figures["negatives"]) == (4, 2, 2)
    assert figures["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    compared = CliRunner().invoke(app, ["compare", "politeness", "again=politeness", "--data", DATA, "--labels",
                                        "items.labels.jsonl", "--positive", "yes", *judge], env=ENV)
    assert compared.exit_code == 0, compared.output
    (comparison,) = json.loads(compared.stdout)["comparisons"]
    assert (comparison["labels"]["kind"], comparison["labels"]["n"]) == ("binary", 4)


def test_labels_without_data_or_naming_no_item_are_refused(tmp_path, monkeypatch):
    root = make_folder(tmp_path)
    monkeypatch.chdir(root)
    (root / "other.labels.jsonl").write_text('{"id": "nobody", "label": "yes"}\n')
    refused = CliRunner().invoke(app, ["align", "politeness", "--data", DATA, "--labels", "other.labels.jsonl",
                                       "--positive", "yes", "--model", "openai/x"], env=ENV)
    assert refused.exit_code == 2
    assert "none of its 1 labelled id(s) is an item of items.jsonl (e.g. 'nobody')" in refused.output
    missing = CliRunner().invoke(app, ["compare", "--runs", "a", "b", "--labels", "x.jsonl"], env=ENV)
    assert missing.exit_code == 2 and "--labels FILE needs --data FILE" in missing.output

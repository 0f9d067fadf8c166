"""The cross-language set (datasets/begin_wow_languages/): 40 labelled BEGIN items in English and
in French, German, Spanish, Chinese and Japanese, and `scorespec calibrate` on each language with a
scripted judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401 - registers the batch commands
from engine.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "datasets" / "begin_wow_languages"
LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "zh": "Chinese", "ja": "Japanese"}
FAITHFUL, NOT_FAITHFUL = "Fully attributable", "Not fully attributable"
#: The scripted judge answers wrongly on these positions of each file (0-based): 2 faithful, 3 not.
WRONG = {3, 11, 19, 27, 35}


def _rows(code: str) -> list[dict]:
    return [json.loads(line) for line in (FOLDER / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()]


def test_every_language_holds_the_english_items_with_their_ids_and_labels():
    originals = {row["id"]: row for row in map(json.loads, (ROOT / "datasets" / "begin_wow.jsonl").open())}
    english = _rows("en")
    assert len(english) == 40
    assert sum(row["label"] == FAITHFUL for row in english) == 20
    assert sum(row["label"] == NOT_FAITHFUL for row in english) == 20
    for row in english:
        original = originals[row["id"]]
        assert (row["input"], row["output"], row["context"], row["label"]) == (
            original["input"], original["output"], original["context"], original["label"])
    for code in LANGUAGES:
        rows = _rows(code)
        assert [(r["id"], r["label"]) for r in rows] == [(r["id"], r["label"]) for r in english], code
        assert {r["language"] for r in rows} == {code}
        if code != "en":
            assert all(r["output"] != e["output"] for r, e in zip(rows, english)), code


def test_the_folder_says_how_the_translations_were_made():
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    assert "translated by hand" in readme and "no translation service" in readme
    assert "CC BY 4.0" in readme


@pytest.mark.parametrize("code", list(LANGUAGES))
def test_calibrate_runs_on_each_language(code, fake_server, tmp_path):
    rows = _rows(code)
    by_output = {row["output"]: (i, row["label"]) for i, row in enumerate(rows)}
    systems: list[str] = []

    def reply(request):
        systems.append(request["messages"][0]["content"])
        response = re.search(r"Response: <<<(.*)>>>", request["messages"][-1]["content"], re.S).group(1)
        position, label = by_output[response]
        right = "yes" if label == FAITHFUL else "no"
        return {"verdict": right if position not in WRONG else {"yes": "no", "no": "yes"}[right]}

    fake_server.reply = reply
    result = CliRunner().invoke(app, [
        "calibrate", "faithfulness_quick", "--data", str(FOLDER / f"{code}.jsonl"), "--positive", FAITHFUL,
        "--negative", NOT_FAITHFUL, "--model", "openai/x", "--base-url", fake_server.base_url,
        "--store", str(tmp_path / "s.sqlite"), "--json", "--quiet", "--no-cache"],
        env={"OPENAI_API_KEY": "test", "COLUMNS": "200", "SCORESPEC_MODEL": None})
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["confusion"] == {"tp": 18, "fp": 3, "tn": 17, "fn": 2}
    assert figures["balancedAccuracy"]["value"] == pytest.approx(0.875)
    assert len(systems) == 40
    instruction = f"Write every text of your own in {LANGUAGES[code]}"
    assert all((instruction in system) == (code != "en") for system in systems)

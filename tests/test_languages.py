"""The item's language: the setting and its checks, detection, the run's keys, the shipped prompts
(English byte for byte as before; other languages with the instruction to write in them), the
result's record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from english_prompts import SNAPSHOT, rendered

from engine.bind.load import load_scorer
from engine.core import language
from engine.core.language import (LANGUAGE_NAMES, SAMPLE_CHARS, ItemLanguage, LanguageError, check_language, detect,
                                  item_language, obviously_english)
from engine.run.settings import RunSettings
from engine.testing import FakeJudge

REPO = Path(__file__).resolve().parents[1]


def test_codes_are_read_in_any_case_and_named_in_english():
    assert check_language("FR") == "fr"
    assert check_language(" Ja ") == "ja"
    assert check_language("AUTO") == "auto"
    assert LANGUAGE_NAMES["zh"] == "Chinese" and LANGUAGE_NAMES["de"] == "German"


@pytest.mark.parametrize("tag, code", [("zh-CN", "zh"), ("fr_FR", "fr"), ("zh-Hant-TW", "zh"), ("PT-br", "pt")])
def test_a_language_tag_with_a_region_gives_its_language(tag, code):
    assert check_language(tag) == code


@pytest.mark.parametrize("bad", ["chinese", "fra", "", "xx", "xx-YY", "-fr", 3, None])
def test_unknown_code_is_an_error_naming_the_value(bad):
    with pytest.raises(LanguageError, match="not a language code"):
        check_language(bad, "--language")


def test_language_name_gets_a_hint_to_its_code():
    with pytest.raises(LanguageError, match="did you mean 'zh'"):
        check_language("Chinese")


@pytest.mark.parametrize(("text", "code"), [
    ("Das ist ein wunderbarer Tag, ich bin sehr glücklich.", "de"),
    ("Le chat dort sur le canapé depuis ce matin.", "fr"),
    ("El gato duerme en el sofá desde esta mañana.", "es"),
    ("我喜欢吃苹果，今天天气很好。", "zh"),
    ("猫はとても可愛いです。", "ja"),
])
def test_detection_names_the_language_of_a_sentence(text, code):
    found = detect(text)
    assert found is not None and found[0] == code and found[1] >= 0.5


def test_short_text_of_low_confidence_counts_as_english():
    assert item_language("auto", None, "Hello World", "") == item_language("auto", None, "", "")
    assert item_language("auto", None, "Hello World", "").code == "en"
    assert item_language("auto", None, "Hello World", "").detected is True


def test_output_is_read_before_input_and_input_when_output_is_too_short():
    assert item_language("auto", None, "Der Hund schläft im Garten unter dem Baum.",
                         "Où dort le chien pendant la journée ?").code == "de"
    assert item_language("auto", None, "Ok", "Où dort le chien pendant la journée ?").code == "fr"


def test_item_language_wins_over_the_setting_and_detection():
    found = item_language("de", "JA", "Le chat dort sur le canapé.", "")
    assert (found.code, found.detected, found.name) == ("ja", False, "Japanese")
    assert item_language("de", None, "Le chat dort sur le canapé.", "").code == "de"


def test_run_settings_keep_the_code_in_lower_case_and_refuse_an_unknown_one():
    assert RunSettings(language="ZH").language == "zh"
    with pytest.raises(ValueError, match="not a language code"):
        RunSettings(language="klingon")


def test_result_records_the_detected_language_and_the_given_one():
    scorer = load_scorer("faithfulness_quick", judge=FakeJudge({"analyze": {"verdict": "yes"}}, default="yes"))
    detected = scorer.run(output="Le chat dort sur le canapé depuis ce matin.", context=["Le chat dort."])
    assert (detected.language, detected.language_detected) == ("fr", True)
    given = scorer.run(output="Le chat dort sur le canapé depuis ce matin.", context=["Le chat dort."],
                       language="ES")
    assert (given.language, given.language_detected) == ("es", False)
    assert given.to_json_dict()["language"] == "es" and given.to_json_dict()["languageDetected"] is False


def test_a_rule_scorer_that_does_not_read_the_language_records_none(tmp_path, monkeypatch):
    # (the shipped rule scorers give their reasons per language, so they read it: a spec of its own)
    (tmp_path / "scorer_specs").mkdir()
    (tmp_path / "scorer_specs" / "plain_equals.yaml").write_text(
        "format: 1\nid: plain_equals\nextends: equals\nreason:\n  - template: same or not\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = load_scorer("plain_equals").run(output="a", ground_truth="a")
    assert result.language is None and "language" not in result.to_json_dict()
    assert load_scorer("equals").run(output="a", ground_truth="a").language == "en"


def test_a_bad_item_language_fails_that_item_as_input():
    scorer = load_scorer("faithfulness_quick", judge=FakeJudge(default="yes"))
    result = scorer.run(output="Le chat dort.", context=["Le chat dort."], language="french")
    assert result.error is not None and result.error.kind == "input"
    assert "not a language code" in result.error.message


@pytest.mark.parametrize("name", ["language", "language_name"])
def test_a_spec_declaring_a_language_field_is_refused_naming_the_reserved_names(tmp_path, name):
    from engine.core.errors import SpecError
    from engine.spec.compile import load_spec

    spec = tmp_path / "mine.yaml"
    spec.write_text(f"""format: 1
id: mine
fields:
  {name}: {{schema: {{type: string}}}}
stages:
  - id: check
    function: equals
    args: {{output: run.output_text, expected: "x"}}
score:
  formula: "1.0 if check.equal else 0.0"
""", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    text = str(info.value)
    assert f"'{name}' cannot name a field" in text and "language, language_name" in text


def test_english_prompts_render_byte_for_byte_as_before():
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert rendered("en") == expected


def test_detected_english_renders_the_same_prompts_as_given_english():
    assert rendered(None) == rendered("en")


def test_french_item_prompts_ask_for_french_while_labels_stay_yes_no():
    judge = FakeJudge({"preprocess": {"claims": ["Le chat dort sur le canapé."]},
                       "analyze": {"verdict": "yes", "reason": "Le passage 1 le dit."}})
    scorer = load_scorer("faithfulness", judge=judge)
    result = scorer.run(output="Le chat dort sur le canapé depuis ce matin.",
                        context=["Depuis ce matin, le chat dort sur le canapé."])
    assert result.language == "fr" and result.score == 1.0
    for call in judge.calls:
        system = call.messages[0]["content"]
        assert "Write every text of your own in French" in system
        assert "exactly as the requested shape spells them" in system
    verdict = judge.calls[-1].schema["properties"]["verdict"]
    assert verdict["enum"] == ["yes", "no", "unsure"]  # the schema's own labels, in English
    assert result.stages["analyze"].result[0]["verdict"] == "yes"


def test_every_judge_scorer_carries_the_instruction_for_a_german_item():
    for scorer_id, calls in rendered("de").items():
        assert calls, scorer_id
        for messages in calls:
            assert any("Write every text of your own in German" in m["content"] for m in messages), scorer_id


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("command", [
    ["run", "equals", "--output", "a"],
    ["eval", "equals", "--data", "items.jsonl"],
    ["calibrate", "equals", "--data", "items.jsonl"],
    ["compare", "equals", "equals@b=equals", "--data", "items.jsonl"],
])
def test_unknown_language_code_is_a_usage_error_before_any_item(command, tmp_path):
    (tmp_path / "items.jsonl").write_text('{"output": "a", "ground_truth": "a", "label": 1}\n', encoding="utf-8")
    done = _cli(*command, "--language", "klingon", "--out", "out.jsonl", cwd=tmp_path) if command[0] == "eval" \
        else _cli(*command, "--language", "klingon", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "not a language code" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / ".scorespec").exists()


def test_render_shows_the_french_instruction_for_language_fr():
    done = _cli("render", "faithfulness_quick", "--output", "Le chat dort.", "--context", "Le chat dort.",
                "--language", "FR")
    assert done.returncode == 0, done.stderr
    assert "Write every text of your own in French" in done.stdout
    assert "Answer yes or no." in done.stdout


ENGLISH_PROSE = [
    "The capital of France is Paris, and it is known for the Eiffel Tower and its museums.",
    "When the order arrives, we will check each item against the list that you sent to us before.",
    "It was raining all day, so the children stayed at home and played with their new games.",
]
# other languages written in plain ASCII (accents dropped, as in many chat logs)
ASCII_OTHERS = [
    "Le chat dort sur le canape pendant que les enfants jouent dans le jardin.",
    "Der Hund schlaeft im Garten unter dem Baum, und die Katze sitzt auf dem Dach.",
    "El perro duerme en el jardin bajo el arbol mientras los ninos juegan con su amigo.",
    "Il gatto dorme sul divano mentre i bambini giocano in giardino con gli amici.",
    "O gato dorme no sofa enquanto as criancas brincam no jardim com os amigos dos vizinhos.",
    "De hond slaapt in de tuin onder de boom en de kat zit op het dak van het huis.",
    "Saya suka makan nasi goreng di rumah bersama keluarga saya setiap hari minggu.",
    "Hunden sover i hagen under treet og katten sitter pa taket til huset.",
]


@pytest.mark.parametrize("text", ENGLISH_PROSE)
def test_an_obviously_english_text_is_english_as_the_detector_says(text):
    assert obviously_english(text)
    assert detect(text)[0] == "en"
    assert item_language("auto", None, text, "") == ItemLanguage("en", True)


@pytest.mark.parametrize("text", ASCII_OTHERS)
def test_another_language_in_plain_ascii_is_left_to_the_detector(text):
    assert not obviously_english(text)
    assert item_language("auto", None, text, "").code == detect(text)[0] != "en"


@pytest.mark.parametrize("text", ["Hello World", "Ok, thanks!", "x = 1; y = 2; return x + y", "Où est la gare ?"])
def test_a_short_or_non_ascii_text_is_not_obviously_english(text):
    assert not obviously_english(text)


def test_detection_reads_a_bounded_sample_of_the_text():
    french = "Le chat dort sur le canapé depuis ce matin, et le chien attend dans le jardin. " * 10
    german = "Der Hund schläft im Garten unter dem Baum, und die Katze sitzt auf dem Dach. " * 200
    assert len(french) > SAMPLE_CHARS
    assert detect(french + german) == detect(french[:SAMPLE_CHARS])
    assert detect(french + german)[0] == "fr"


def test_a_text_seen_before_is_not_detected_again(monkeypatch):
    decided = []
    real = language._detector()

    class Counting:
        def _decide(self, sample):
            decided.append(sample)
            return real._decide(sample)

    monkeypatch.setattr(language, "_detector", lambda: Counting())
    language._detect_sample.cache_clear()
    text = "Le chat dort sur le canapé depuis ce matin."
    first = item_language("auto", None, text, "")
    assert item_language("auto", None, text, "") == first and first.code == "fr"
    assert len(decided) == 1
    language._detect_sample.cache_clear()


PROBE = """
import sys, json
from engine.bind.load import load_scorer
scorer = load_scorer("textual_difference")
result = scorer.run({"output": sys.argv[1], "ground_truth": sys.argv[1]})
print(json.dumps([result.language, "py3langid" in sys.modules]))
"""


@pytest.mark.parametrize(("text", "code", "loaded"), [
    (ENGLISH_PROSE[0], "en", False),
    ("Le chat dort sur le canapé pendant que les enfants jouent dans le jardin.", "fr", True),
])
def test_an_english_item_is_scored_without_loading_the_detector(text, code, loaded):
    out = subprocess.run([sys.executable, "-c", PROBE, text], check=True, capture_output=True, text=True,
                         cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [code, loaded]

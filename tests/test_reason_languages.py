"""Engine-written reasons per language: a spec's reason templates (reason cases' `template`, the
not-scorable reason) given as a mapping of ISO 639-1 codes, the item's language picking one, English
the fallback (recorded in the result); the load-time checks; every shipped spec's translations."""

from __future__ import annotations

import jinja2.meta
import pytest

from engine.bind.load import load_scorer
from engine.core.errors import SpecError
from engine.spec.catalog import builtin_specs_dir
from engine.spec.compile import load_spec
from engine.spec.expressions import environment
from engine.spec.field_reads import reads_language
from engine.spec.yamlload import load_yaml
from engine.testing import FakeJudge
from engine.testing.schema_answers import answer_for

SHIPPED_LANGUAGES = ("en", "fr", "de", "es", "zh", "ja")

GREETING = """\
format: 1
id: greeting
extends: equals
reason:
  - when: "check.equal"
    template:
      en: 'The output equals "{{ expected }}".'
      fr: 'La sortie est égale à « {{ expected }} ».'
  - template: "The output differs."
score:
  not_scorable:
    when: "run.output == 'skip'"
    reason:
      en: "Skipped."
      de: "Übersprungen."
"""


@pytest.fixture()
def specs(tmp_path, monkeypatch):
    """A project folder (the current one) whose scorer_specs/ the test writes specs into."""
    (tmp_path / "scorer_specs").mkdir()
    monkeypatch.chdir(tmp_path)

    def write(name: str, text: str) -> str:
        (tmp_path / "scorer_specs" / f"{name}.yaml").write_text(text, encoding="utf-8")
        return name

    return write


def test_an_item_gets_the_reason_template_of_its_language(specs):
    scorer = load_scorer(specs("greeting", GREETING))
    french = scorer.run(output="chat", ground_truth="chat", language="fr")
    assert french.reason == "La sortie est égale à « chat »."
    assert french.reason_language is None and french.warnings is None
    assert "reasonLanguage" not in french.to_json_dict()


def test_a_language_without_a_template_falls_back_to_english_and_the_result_says_so(specs):
    italian = load_scorer(specs("greeting", GREETING)).run(output="gatto", ground_truth="gatto", language="it")
    assert italian.reason == 'The output equals "gatto".'
    assert italian.reason_language == "en" and italian.to_json_dict()["reasonLanguage"] == "en"
    assert italian.warnings == ["reason: greeting gives this reason no Italian template, so it is written in English"]


def test_a_case_given_only_in_english_falls_back_for_every_other_language(specs):
    french = load_scorer(specs("greeting", GREETING)).run(output="chat", ground_truth="chien", language="fr")
    assert french.reason == "The output differs." and french.reason_language == "en"


def test_the_not_scorable_reason_is_given_per_language_too(specs):
    scorer = load_scorer(specs("greeting", GREETING))
    german = scorer.run(output="skip", ground_truth="x", language="de")
    assert german.not_scorable is not None and german.not_scorable.reason == "Übersprungen."
    assert german.reason == "Übersprungen." and german.reason_language is None
    spanish = scorer.run(output="skip", ground_truth="x", language="es")
    assert spanish.reason == "Skipped." and spanish.reason_language == "en"


def test_an_english_item_gets_the_english_template_with_nothing_more_recorded(specs):
    english = load_scorer(specs("greeting", GREETING)).run(output="The cat sleeps on the sofa.",
                                                           ground_truth="The cat sleeps on the sofa.")
    assert english.reason == 'The output equals "The cat sleeps on the sofa.".'
    assert (english.language, english.reason_language, english.warnings) == ("en", None, None)


def test_a_spec_with_reasons_in_other_languages_reads_the_language(specs):
    assert reads_language(load_spec(specs("greeting", GREETING)))
    plain = specs("plain", "format: 1\nid: plain\nextends: equals\nreason:\n  - template: same\n")
    assert load_scorer(plain).run(output="a", ground_truth="a").language is None


def test_a_per_language_mapping_without_english_fails_to_load_naming_file_and_line(specs):
    name = specs("no_english", 'format: 1\nid: no_english\nextends: equals\nreason:\n  - template:\n'
                               '      fr: "Égal."\n      de: "Gleich."\n')
    with pytest.raises(SpecError) as caught:
        load_spec(name)
    [problem] = caught.value.problems
    assert problem.code == "missing-key" and problem.file.endswith("no_english.yaml") and problem.line == 5
    assert problem.key_path == "reason[0].template.en" and "English template (en)" in problem.message


def test_an_unknown_language_code_in_the_mapping_fails_to_load(specs):
    name = specs("klingon", 'format: 1\nid: klingon\nextends: equals\nreason:\n  - template:\n'
                            '      en: "Equal."\n      xx: "Qapla."\nscore:\n  not_scorable:\n    when: "false"\n'
                            '    reason: {en: "No.", french: "Non."}\n')
    with pytest.raises(SpecError) as caught:
        load_spec(name)
    found = {(p.key_path, p.line, p.code) for p in caught.value.problems}
    assert found == {("reason[0].template.xx", 7, "invalid-value"),
                     ("score.not_scorable.reason.french", 11, "invalid-value")}
    assert all("not a language code" in p.message for p in caught.value.problems)


def test_a_translation_reading_a_name_its_place_lacks_fails_to_load(specs):
    name = specs("typo", 'format: 1\nid: typo\nextends: equals\nreason:\n  - template:\n'
                         '      en: "{{ expected }}"\n      fr: "{{ expectd }}"\n')
    with pytest.raises(SpecError) as caught:
        load_spec(name)
    [problem] = caught.value.problems
    assert problem.code == "undefined-name" and problem.key_path == "reason[0].template.fr" and problem.line == 7


def test_a_template_of_the_wrong_shape_is_one_clear_problem(specs):
    name = specs("shape", "format: 1\nid: shape\nextends: equals\nreason:\n  - template: {en: [1]}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(name)
    [problem] = caught.value.problems
    assert problem.key_path == "reason[0].template" and "the template of 'en' must be text" in problem.message


def test_a_child_spec_replacing_the_english_text_drops_the_parents_translations(specs):
    parent = specs("greeting", GREETING)
    child = specs("terse", f"format: 1\nid: terse\nextends: {parent}\nreason:\n  - when: check.equal\n"
                           "    template: Equal.\n  - template: Different.\n")
    french = load_scorer(child).run(output="chat", ground_truth="chat", language="fr")
    assert french.reason == "Equal." and french.reason_language == "en"


# --- the shipped specs ---------------------------------------------------------------------------


def test_a_french_item_gets_faithfulness_reason_in_french_and_an_english_item_the_english_one():
    script = {"preprocess": {"claims": ["Le chat dort.", "Le chat est noir."]},
              "analyze": [{"verdict": "yes", "reason": "dit"}, {"verdict": "no", "reason": "gris"}]}
    french = load_scorer("faithfulness", judge=FakeJudge(script)).run(
        output="Le chat dort. Le chat est noir.", context=["Le chat gris dort."], language="fr")
    assert french.score == 0.5 and french.reason_language is None and french.warnings is None
    assert french.reason == ('Le score est 0.5 sur 1 : 1 sur 2 affirmations est étayée. Étayées par le contexte : '
                             '"Le chat dort.". Non étayées par le contexte : "Le chat est noir." (gris).')
    english_script = {"preprocess": {"claims": ["The cat sleeps.", "The cat is black."]},
                      "analyze": [{"verdict": "yes", "reason": "said"}, {"verdict": "no", "reason": "grey"}]}
    english = load_scorer("faithfulness", judge=FakeJudge(english_script)).run(
        output="The cat sleeps. The cat is black.", context=["The grey cat sleeps."])
    assert english.language == "en" and english.reason_language is None
    assert english.reason == ('The score is 0.5 of 1: 1 of 2 claims supported. Supported by the context: '
                              '"The cat sleeps.". Not supported by the context: "The cat is black." (grey).')


SHIPPED = sorted(builtin_specs_dir().glob("*.yaml"))


def _reason_texts(path):
    """(where, {code: template source}) of every engine-written reason a shipped spec file writes."""
    data = load_yaml(path.read_text(encoding="utf-8"), str(path)).data
    found = []
    for i, case in enumerate(data.get("reason") or []):
        if "template" in case:
            found.append((f"reason[{i}]", case["template"]))
    not_scorable = (data.get("score") or {}).get("not_scorable")
    if not_scorable and "reason" in not_scorable:
        found.append(("score.not_scorable", not_scorable["reason"]))
    return found


def _names(source: str) -> set[str]:
    return jinja2.meta.find_undeclared_variables(environment().parse(source))


def test_every_shipped_reason_is_given_in_english_and_five_more_languages():
    missing = {f"{path.stem} {where}": sorted(set(SHIPPED_LANGUAGES) - set(text if isinstance(text, dict) else ()))
               for path in SHIPPED for where, text in _reason_texts(path)
               if not isinstance(text, dict) or set(SHIPPED_LANGUAGES) - set(text)}
    assert sum(len(_reason_texts(p)) for p in SHIPPED) >= 60
    assert not missing, missing


# the sentence ending a reason when the judge's list reached its cap: an English var, which the
# translations write out in their own words from `max_statements`
PROSE_VARS = {"cap_note", "statement_noun"}


def test_every_shipped_translation_reads_the_names_its_english_template_reads():
    differ = {}
    for path in SHIPPED:
        for where, text in _reason_texts(path):
            if not isinstance(text, dict):
                continue
            english = _names(text["en"])
            for code, source in text.items():
                if _names(source) != english - (PROSE_VARS - _names(source)):
                    differ[f"{path.stem} {where} {code}"] = sorted(_names(source) ^ english)
    assert not differ, differ


def _judge() -> FakeJudge:
    return FakeJudge(default=lambda call: answer_for(call.schema))


def _example_items():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "hooks"))
    import ref_scorers
    import ref_sources

    docs, _ = ref_sources.shipped_scorers()
    return [(doc.spec.id, ref_scorers.example_item(doc.spec)) for doc in docs]


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES[1:])
def test_every_shipped_scorer_writes_its_reason_in_the_language_of_the_example_item(language, monkeypatch):
    """Each shipped scorer's documented example item, scored in `language` with a judge answering
    every stage validly: the reason is written in that language (no fallback), and every
    translation of every reason the spec gives renders over that item's names wherever its English
    template does."""
    from engine.interpret.interpreter import Interpreter

    seen: list[tuple[str, dict]] = []
    original = Interpreter._engine_reason

    def spy(self, text, ns, result, where):
        seen.append((self.plan.id, dict(ns)))
        return original(self, text, ns, result, where)

    monkeypatch.setattr(Interpreter, "_engine_reason", spy)
    items = _example_items()
    fell_back, failed = {}, {}
    for scorer_id, item in items:
        result = load_scorer(scorer_id, judge=_judge()).run(**item, language=language)
        if result.status == "failed":
            failed[scorer_id] = result.error.message[:200]
        elif result.reason_language is not None:
            fell_back[scorer_id] = result.reason
    assert len(items) >= 30 and not failed and not fell_back, (failed, fell_back)
    rendered = 0
    for scorer_id, ns in seen:
        plan = load_spec(scorer_id)
        texts = [case.template for case in plan.reasons if case.template is not None]
        texts += [plan.score.not_scorable[1]] if plan.score.not_scorable else []
        for text in texts:
            try:
                text.templates["en"].render(ns)
            except Exception:
                continue  # a case whose `when` this item does not meet
            assert text.templates[language].render(ns).strip(), (scorer_id, language)
            rendered += 1
    assert rendered >= len(seen)

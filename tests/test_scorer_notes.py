"""The `notes:` of the shipped specs: Markdown for each scorer's reference page (documentation only).

Every runnable shipped spec documents itself in prose; the text is fit for user-facing pages (no
internal tracking words, links only to sibling scorer pages); and `notes` is never inherited, so
a spec built on another never shows its parent's documentation as its own.
"""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml
from conftest import ROOT

from engine.spec.catalog import is_abstract
from engine.spec.compile import compile_file
from engine.spec.inherit import load_document

SHIPPED = sorted((ROOT / "scorer_specs").glob("*.yaml"))
RUNNABLE = [path for path in SHIPPED if not is_abstract(path)]
RUNNABLE_IDS = {path.stem for path in RUNNABLE}

# Internal tracking words that must never reach a user-facing page.
TRACKING = re.compile(r"\b(issue|case)\s*#?\d+|\bC\d{2}\b|#\d+|this session", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)]*)\)")


def _notes(path) -> str | None:
    """The raw `notes:` text of a spec file (None when it has none)."""
    return yaml.safe_load(path.read_text(encoding="utf-8")).get("notes")


def test_the_catalogue_has_runnable_specs_to_document():
    assert len(RUNNABLE) >= 38 and "faithfulness" in RUNNABLE_IDS


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_every_runnable_shipped_spec_has_notes(path):
    notes = _notes(path)
    assert isinstance(notes, str) and notes.strip(), f"{path.name} has no notes"
    assert len(notes.strip().splitlines()) >= 3, f"{path.name}: notes of one or two lines say too little"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_notes_hold_no_tracking_words(path):
    notes = _notes(path) or ""
    found = [m.group(0) for m in TRACKING.finditer(notes)]
    assert found == [], f"{path.name}: tracking words in notes: {found}"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_notes_link_only_to_sibling_scorer_pages(path):
    targets = LINK.findall(_notes(path) or "")
    wrong = [t for t in targets if not (t.endswith(".md") and t[:-3] in RUNNABLE_IDS)]
    assert wrong == [], f"{path.name}: links that are not a shipped scorer's page: {wrong}"


def test_the_tracking_pattern_catches_what_it_should():
    for text in ("see issue 12", "case C04", "fixed in #33", "as found this session", "Case #7"):
        assert TRACKING.search(text), text
    for text in ("1 + N claims", "a CI suite", "C-style", "case and spacing aside"):
        assert not TRACKING.search(text), text


def test_a_shipped_spec_keeps_its_own_notes_not_its_bases():
    bias = load_document(ROOT / "scorer_specs" / "bias.yaml")
    base = _notes(ROOT / "scorer_specs" / "statements_base.yaml")
    assert bias.data["notes"] == _notes(ROOT / "scorer_specs" / "bias.yaml")
    assert base and bias.data["notes"] != base


def test_a_spec_extending_faithfulness_does_not_inherit_its_notes(tmp_path, monkeypatch):
    folder = tmp_path / "scorer_specs"
    folder.mkdir()
    (folder / "my_faithfulness.yaml").write_text(textwrap.dedent("""\
        format: 1
        id: my_faithfulness
        extends: faithfulness
        name: My faithfulness
        description: Faithfulness with a scale of 10.
        version: 1
        options:
          scale: {default: 10}
        """), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    doc = load_document(folder / "my_faithfulness.yaml")
    assert _notes(ROOT / "scorer_specs" / "faithfulness.yaml")  # the parent has notes …
    assert "notes" not in doc.data  # … the child, which writes none, has none
    assert doc.data["stages"][0]["id"] == "preprocess"  # while the rest is inherited
    assert compile_file(folder / "my_faithfulness.yaml").id == "my_faithfulness"


def test_a_child_spec_writes_notes_of_its_own(tmp_path, monkeypatch):
    folder = tmp_path / "scorer_specs"
    folder.mkdir()
    (folder / "strict_faithfulness.yaml").write_text(textwrap.dedent("""\
        format: 1
        id: strict_faithfulness
        extends: faithfulness
        name: Strict faithfulness
        description: Faithfulness scored on the judge's probabilities.
        version: 1
        notes: |
          Counts each claim by the judge's probability that it is supported.
        options:
          scoring: {default: probability}
        """), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    doc = load_document(folder / "strict_faithfulness.yaml")
    assert doc.data["notes"] == "Counts each claim by the judge's probability that it is supported.\n"

"""README.md and docs/**/*.md hold no internal tracking words (the docs conventions): no issue
numbers ("issue 12", "issues 3 and 4", "#33"), no case ids ("C13"), no "this session", no "the
layout issue". Each hit is reported as page:line. ``#NUMBER`` counts only outside code blocks
(where ``#`` starts a comment) and not after ``&``, ``/``, a letter or a digit (an HTML entity
``&#39;``, a URL fragment); the other words count everywhere, code blocks included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_blocks import _fences, doc_pages

ROOT = Path(__file__).resolve().parent.parent

EVERYWHERE = {
    "an issue number": re.compile(r"\bissues?\s+#?\d+\b", re.IGNORECASE),
    "a case id": re.compile(r"\bC\d{2}\b"),
    "'this session'": re.compile(r"\bthis\s+session\b", re.IGNORECASE),
    "'the layout issue'": re.compile(r"\bthe\s+layout\s+issue\b", re.IGNORECASE),
}
OUTSIDE_CODE = {"an issue reference": re.compile(r"(?<![\w&/#])#\d+\b")}


def tracking_words(text: str) -> list[tuple[int, str, str]]:
    """(1-based line, what, matched text) for each tracking word in the Markdown `text`."""
    lines = text.splitlines()
    in_code: set[int] = set()
    for start, end, _info, _indent in _fences(lines):
        in_code.update(range(start, end + 1))
    found = []
    for index, line in enumerate(lines):
        patterns = dict(EVERYWHERE) if index in in_code else {**EVERYWHERE, **OUTSIDE_CODE}
        for what, pattern in patterns.items():
            found += [(index + 1, what, match[0]) for match in pattern.finditer(line)]
    return found


@pytest.mark.parametrize("text", [
    "Fixed in issue 12.", "see Issues 3 and 4", "as issue #7 said", "closes #33", "(#5)", "case C13 shows",
    "C04: the fix", "in this session we", "This Session", "fixes the layout issue", "see #12, #13"])
def test_tracking_words_are_found(text):
    assert tracking_words(text) != []


@pytest.mark.parametrize("text", [
    "an issue with 3 items", "issues of scale", "C1 and C123 and AC13 and C13x", "&#39; and &#x27;",
    "docs/page.md#3", "https://example.com/#12", "## 2. Install", "#fff and # 1", "a session id",
    "sessions 3", "layout issues", "x#1", "the ##1 tag"])
def test_ordinary_text_is_not_a_tracking_word(text):
    assert tracking_words(text) == []


def test_a_hash_number_inside_a_code_block_is_a_comment_but_a_case_id_is_not():
    text = "Intro\n\n```bash\nscorespec run x  #1 is the first\n# C13 fixed\n```\nafter #2\n"
    assert tracking_words(text) == [(5, "a case id", "C13"), (7, "an issue reference", "#2")]


def test_the_user_facing_pages_hold_no_tracking_words():
    hits = [f"{path.relative_to(ROOT).as_posix()}:{line}: {what} {match!r}"
            for path in doc_pages(ROOT) for line, what, match in tracking_words(path.read_text(encoding="utf-8"))]
    assert hits == [], f"{len(hits)} tracking word(s):\n" + "\n".join(hits)


def test_the_shipped_specs_and_prompts_hold_no_tracking_words():
    # users read the shipped specs and prompts as examples (`scorespec new`, `render --resolved`)
    files = sorted([*(ROOT / "scorer_specs").glob("*.yaml"), *(ROOT / "prompts").rglob("*.j2")])
    assert files
    hits = [f"{path.relative_to(ROOT).as_posix()}:{line}: {what} {match!r}"
            for path in files for line, what, match in tracking_words(path.read_text(encoding="utf-8"))
            if what != "an issue reference"]  # ``#`` starts a YAML comment
    assert hits == [], f"{len(hits)} tracking word(s):\n" + "\n".join(hits)


TRACKING_NAME = re.compile(r"(?:^|_)(?:c\d{2}|issues?_?\d+)(?:_|$)")


@pytest.mark.parametrize("name, tracked", [
    ("test_c01_share_of_supported_claims", True), ("test_options_merge_over_defaults_c12", True),
    ("test_issue_45_fixed", True), ("test_a_c14_formula", True), ("test_utf16_text", False),
    ("test_cache_c_extension", False), ("test_c100_items", False), ("test_the_score_is_the_share", False)])
def test_the_tracking_name_pattern_finds_case_ids_and_issue_numbers(name, tracked):
    assert bool(TRACKING_NAME.search(name.removeprefix("test"))) is tracked


def test_no_test_is_named_after_a_case_id_or_an_issue():
    # a test says the behaviour it checks; an id a reader cannot look up may sit in its docstring
    hits = [f"{path.relative_to(ROOT).as_posix()}: {name}" for path in sorted((ROOT / "tests").rglob("*.py"))
            for name in re.findall(r"def (test_\w+)", path.read_text(encoding="utf-8"))
            if TRACKING_NAME.search(name.removeprefix("test"))]
    assert hits == [], "\n".join(hits)

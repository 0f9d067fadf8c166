"""A prompt stage's `pages`: a list the judge fills to its schema's `maxItems` is asked for again,
in the same conversation, until a page comes back short, so a long answer's list is judged whole.

A short list costs its one call, its prompt and record as without `pages`; a list longer than the
bound (a judge not held to the schema) is taken whole; a page that repeats earlier items ends the
list; the pages stop at `MAX_PAGES` with a warning. Problems in `pages` are found at load.
"""

from __future__ import annotations

import json

import pytest

from engine.bind.load import load_scorer
from engine.core.errors import SpecError
from engine.interpret.pages import MAX_PAGES
from engine.testing import FakeJudge

SPEC = """format: 1
id: paged
name: Paged
description: Names listed page by page.
version: 1
fields:
  output: {{required: true}}
stages:
  - id: extract
    prompt: t/extract.j2
    output_schema:
      type: object
      required: [names, verdict]
      additionalProperties: false
      properties:
        names: {{type: array, maxItems: 3, items: {{type: string, maxLength: 10}}}}
        verdict: {{type: string, enum: ["yes", "no"]}}
    {pages}
score:
  scale: "100"
  formula: "extract.names | length"
reason:
  - template: "{{{{ listed.extract.names }}}} listed: {{{{ extract.names | join(', ') }}}}."
"""
PROMPTS = {"t/extract.j2": "List the names in {{ run.output }}."}


def paged(write_spec, judge: FakeJudge, pages: str = "pages: [names]"):
    return load_scorer(str(write_spec("paged", SPEC.format(pages=pages), PROMPTS)), judge=judge)


def page(*names: str, verdict: str = "yes") -> dict:
    return {"names": list(names), "verdict": verdict}


def test_a_full_list_is_asked_for_again_in_the_same_conversation(write_spec):
    judge = FakeJudge({"extract": [page("a", "b", "c"), page("d", "e", "f", verdict="no"), page("g")]})
    result = paged(write_spec, judge).run(output="seven names")
    assert (result.score, result.reason) == (7, "7 listed: a, b, c, d, e, f, g.")
    assert len(judge.calls) == 3
    second = judge.calls[1].messages
    assert second[:-2] == judge.calls[0].messages
    assert second[-2] == {"role": "assistant", "content": json.dumps(page("a", "b", "c"))}
    assert second[-1]["role"] == "user" and "`names` (3 so far)" in second[-1]["content"]
    assert judge.calls[2].messages[:-2] == second
    record = result.stages["extract"]
    assert record.result == page("a", "b", "c", "d", "e", "f", "g")  # the other fields: the first page's
    assert record.usage.calls == 3 and record.attempts == 3
    assert len(json.loads(record.raw_answer)) == 3


def test_a_short_list_costs_one_call_as_without_pages(write_spec):
    answers = {"extract": page("a", "b")}
    with_pages = FakeJudge(answers)
    result = paged(write_spec, with_pages).run(output="two names")
    without = FakeJudge(answers)
    text = SPEC.format(pages="").replace("id: paged", "id: plain").replace("{{ listed.extract.names }}", "2")
    plain = load_scorer(str(write_spec("plain", text, PROMPTS)), judge=without).run(output="two names")
    assert (result.score, plain.score) == (2, 2)
    assert [c.messages for c in with_pages.calls] == [c.messages for c in without.calls]
    assert result.stages["extract"].raw_answer == plain.stages["extract"].raw_answer
    assert result.stages["extract"].usage.calls == 1


def test_a_list_longer_than_its_bound_is_taken_whole_in_one_call(write_spec):
    judge = FakeJudge({"extract": page("a", "b", "c", "d", "e")})
    result = paged(write_spec, judge).run(output="five names")
    assert (result.status, result.score, result.reason) == ("scored", 5, "5 listed: a, b, c, d, e.")
    assert len(judge.calls) == 1


def test_a_page_that_repeats_earlier_items_ends_the_list(write_spec):
    judge = FakeJudge({"extract": [page("a", "b", "c"), page("c", "d", "a")]})
    result = paged(write_spec, judge).run(output="four names")
    assert result.stages["extract"].result["names"] == ["a", "b", "c", "d"]
    assert len(judge.calls) == 3  # the second page was full and added an item: a third asked (the last repeats)
    judge = FakeJudge({"extract": [page("a", "b", "c"), page("a", "b", "c")]})
    result = paged(write_spec, judge).run(output="three names")
    assert (result.score, len(judge.calls)) == (3, 2)


def test_a_page_that_adds_items_and_is_full_asks_for_the_next(write_spec):
    judge = FakeJudge({"extract": [page("a", "b", "c"), page("c", "d", "e"), page()]})
    result = paged(write_spec, judge).run(output="five names")
    assert (result.score, len(judge.calls)) == (5, 3)


def test_the_pages_stop_at_the_most_and_the_result_says_so(write_spec):
    counter = iter(range(10_000))

    def endless(call):
        return page(*(f"n{next(counter)}" for _ in range(3)))

    judge = FakeJudge({"extract": endless})
    result = paged(write_spec, judge).run(output="endless names")
    assert len(judge.calls) == MAX_PAGES
    assert result.score == 3 * MAX_PAGES
    assert any("still filled names on page 20" in w for w in result.warnings)


def test_a_failed_page_fails_the_item_naming_the_page(write_spec):
    judge = FakeJudge({"extract": [page("a", "b", "c"), {"names": "not a list", "verdict": "yes"}]})
    result = paged(write_spec, judge).run(output="names")
    assert result.status == "failed" and result.error.kind == "judge"
    assert result.error.message.startswith("page 2: ")


@pytest.mark.parametrize(("pages", "problem"), [
    ("pages: [nmes]", "'nmes' is not a property"),
    ("pages: [verdict]", "'verdict' is not a list"),
    ("pages: [names]\n    keep_first: [names]", "'names' is in keep_first too"),
])
def test_pages_naming_no_bounded_list_is_a_load_error(write_spec, pages, problem):
    with pytest.raises(SpecError, match=problem):
        paged(write_spec, FakeJudge({}), pages)


def test_a_list_without_max_items_cannot_be_paged(write_spec):
    text = SPEC.format(pages="pages: [names]").replace("maxItems: 3, ", "")
    with pytest.raises(SpecError, match="no maxItems, so there is no page size"):
        load_scorer(str(write_spec("paged", text, PROMPTS)), judge=FakeJudge({}))

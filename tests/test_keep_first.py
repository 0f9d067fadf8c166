"""A prompt stage's `keep_first`: a list the judge makes longer than its schema's `maxItems` is cut to
its first items instead of being asked again, and `listed.STAGE.FIELD` says how many were listed.

The schema and the checks judge the answer with the list cut; every other schema error is still
asked again and then fails the item as a judge failure. Problems in `keep_first` are found at load.
"""

from __future__ import annotations

import textwrap

import pytest

from engine.bind.load import load_scorer
from engine.core.errors import SpecError
from engine.judge.contract import AnswerContract, AnswerInvalid
from engine.testing import FakeJudge

HEAD = "format: 1\nid: {id}\nname: Kept\ndescription: Names kept.\nversion: 1\n"
FIELDS = "fields:\n  output: {{required: true}}\n"

SPEC = HEAD + FIELDS + """
stages:
  - id: extract
    prompt: t/extract.j2
    output_schema:
      type: object
      required: [names]
      additionalProperties: false
      properties:
        names: {{type: array, maxItems: 3, items: {{type: string, maxLength: 10}}}}
    {keep}
    checks:
      - expect: "'banned' not in answer.names"
        message: Leave out the banned name.
score:
  scale: "10"
  formula: "extract.names | length"
reason:
  - template: "{{{{ listed.extract.names }}}} listed, {{{{ extract.names | join(', ') }}}} kept."
"""
PROMPTS = {"t/extract.j2": "List the names in {{ run.output }}."}


def spec_path(write_spec, name: str, body: str, fields: str = FIELDS):
    """A spec named `name`: the head, `fields` and `body` (a dedented YAML text, doubled braces)."""
    return write_spec(name, (HEAD + fields).format(id=name) + textwrap.dedent(body).lstrip("\n").format(id=name),
                      PROMPTS)


def kept_scorer(write_spec, judge: FakeJudge, keep: str = "keep_first: [names]"):
    path = write_spec("kept", SPEC.format(id="kept", keep=keep), PROMPTS)
    return load_scorer(str(path), judge=judge)


def test_a_list_past_max_items_is_cut_to_its_first_items_and_counted(write_spec):
    judge = FakeJudge({"extract": {"names": ["a", "b", "c", "d", "e"]}})
    result = kept_scorer(write_spec, judge).run(output="five names")
    assert (result.status, result.score) == ("scored", 3)
    assert result.reason == "5 listed, a, b, c kept."
    assert len(judge.calls) == 1  # never asked again
    record = result.stages["extract"]
    assert (record.result, record.listed, record.attempts) == ({"names": ["a", "b", "c"]}, {"names": 5}, 1)


def test_a_list_within_max_items_is_counted_and_not_recorded(write_spec):
    judge = FakeJudge({"extract": {"names": ["a", "b"]}})
    result = kept_scorer(write_spec, judge).run(output="two names")
    assert result.reason == "2 listed, a, b kept."
    assert result.stages["extract"].listed is None
    assert "listed" not in result.to_json_dict()["stages"]["extract"]


def test_without_keep_first_a_list_past_max_items_is_asked_again_then_fails(write_spec):
    judge = FakeJudge({"extract": {"names": ["a", "b", "c", "d", "e"]}})
    path = spec_path(write_spec, "plain", """
        stages:
          - id: extract
            prompt: t/extract.j2
            output_schema:
              type: object
              required: [names]
              properties:
                names: {{type: array, maxItems: 3, items: {{type: string}}}}
        score:
          scale: "10"
          formula: "extract.names | length"
        """)
    result = load_scorer(str(path), judge=judge).run(output="five names")
    assert (result.status, result.error.kind, result.error.attempts) == ("failed", "judge", 3)
    assert result.error.message.endswith("names has 5 items; at most 3 are allowed")


def test_an_item_breaking_the_schema_among_those_kept_is_asked_again(write_spec):
    judge = FakeJudge({"extract": [{"names": ["a", "b" * 11, "c", "d"]}, {"names": ["a", "b", "c", "d"]}]})
    result = kept_scorer(write_spec, judge).run(output="names")
    assert (result.score, len(judge.calls)) == (3, 2)
    assert "at names/1:" in judge.calls[1].messages[-1]["content"]


def test_an_item_breaking_the_schema_past_those_kept_is_left_out(write_spec):
    judge = FakeJudge({"extract": {"names": ["a", "b", "c", "d" * 11]}})
    result = kept_scorer(write_spec, judge).run(output="names")
    assert (result.score, result.reason, len(judge.calls)) == (3, "4 listed, a, b, c kept.", 1)


def test_an_answer_missing_the_list_still_fails_as_a_judge_failure(write_spec):
    judge = FakeJudge({"extract": {}})
    result = kept_scorer(write_spec, judge).run(output="names")
    assert (result.status, result.error.kind, len(judge.calls)) == ("failed", "judge", 3)
    assert result.error.message.endswith("'names' is a required property")


@pytest.mark.parametrize("names, calls", [(["a", "banned", "c", "d"], 2), (["a", "b", "c", "banned"], 1)],
                         ids=["banned-kept", "banned-left-out"])
def test_checks_see_the_list_cut_to_its_first_items(write_spec, names, calls):
    judge = FakeJudge({"extract": [{"names": names}, {"names": ["a", "b", "c", "d"]}]})
    result = kept_scorer(write_spec, judge).run(output="names")
    assert (result.score, len(judge.calls)) == (3, calls)


def test_a_for_each_stage_counts_what_each_element_listed(write_spec):
    path = spec_path(write_spec, "each", """
        fields:
          output: {{required: true}}
          input: {{required: true}}
        stages:
          - id: extract
            for_each: run.input.split(' ')
            prompt: t/extract.j2
            output_schema:
              type: object
              required: [names]
              properties:
                names: {{type: array, maxItems: 2, items: {{type: string}}}}
            keep_first: [names]
        score:
          scale: "10"
          formula: "extract | map(attribute='names') | map('length') | sum"
        reason:
          - template: "{{{{ listed.extract | map(attribute='names') | join(' ') }}}}"
        """, fields="")
    judge = FakeJudge({"extract": [{"names": ["a", "b", "c"]}, {"names": ["d"]}]})
    result = load_scorer(str(path), judge=judge).run(input="x y", output="o")
    assert (result.score, result.reason) == (3, "3 1")
    assert result.stages["extract"].result == [{"names": ["a", "b"]}, {"names": ["d"]}]
    assert result.stages["extract"].listed == [{"names": 3}, None]


def test_a_sampled_stage_counts_the_most_any_sample_listed(write_spec):
    path = spec_path(write_spec, "sampled", """
        stages:
          - id: extract
            prompt: t/extract.j2
            samples: 2
            reduce: "samples[0]"
            output_schema:
              type: object
              required: [names]
              properties:
                names: {{type: array, maxItems: 2, items: {{type: string}}}}
            keep_first: [names]
        score:
          scale: "10"
          formula: "extract.names | length"
        reason:
          - template: "{{{{ listed.extract.names }}}}"
        """)
    judge = FakeJudge({"extract": [{"names": ["a"]}, {"names": ["b", "c", "d", "e"]}]})
    result = load_scorer(str(path), judge=judge).run(output="o")
    assert (result.score, result.reason) == (1, "4")
    assert result.stages["extract"].samples == [{"names": ["a"]}, {"names": ["b", "c"]}]
    assert result.stages["extract"].listed == {"names": 4}


@pytest.mark.parametrize("keep, message", [
    ("keep_first: [nmes]", "'nmes' is not a property of the stage's output schema"),
    ("keep_first: [label]", "'label' is not a list: its schema has no type: array"),
    ("keep_first: [tags]", "'tags' has no maxItems, so there is no bound to keep the first items of"),
], ids=["unknown", "not-a-list", "no-max-items"])
def test_keep_first_names_a_list_of_the_answer_with_max_items(write_spec, keep, message):
    path = spec_path(write_spec, "bad", """
        stages:
          - id: extract
            prompt: t/extract.j2
            output_schema:
              type: object
              properties:
                names: {{type: array, maxItems: 3, items: {{type: string}}}}
                tags: {{type: array, items: {{type: string}}}}
                label: {{type: string}}
            {keep}
        score:
          scale: "10"
          formula: "1"
        """.replace("{keep}", keep))
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path), judge=FakeJudge())
    [problem] = caught.value.problems
    assert (problem.code, problem.message, problem.line) == ("invalid-value", message, 17)  # the line of keep_first
    assert problem.key_path == "stages[0].keep_first[0]"
    if "nmes" in keep:
        assert problem.hint == "did you mean 'names'?"


def test_listed_is_known_only_after_a_stage_that_keeps_first(write_spec):
    path = write_spec("unknown", SPEC.format(id="unknown", keep=""), PROMPTS)
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path), judge=FakeJudge())
    assert [(p.code, p.message) for p in caught.value.problems] == [
        ("undefined-name", "template uses 'listed', which is not defined here")]


def test_listed_is_a_reserved_name(write_spec):
    text = SPEC.format(id="reserved", keep="keep_first: [names]") + "vars:\n  listed: \"1\"\n"
    path = write_spec("reserved", text, PROMPTS)
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path), judge=FakeJudge())
    assert ("reserved-name", "'listed' is a reserved name") in [(p.code, p.message) for p in caught.value.problems]


def test_the_contract_judges_the_first_items_and_returns_the_answer_as_written():
    schema = {"type": "object", "properties": {"names": {"type": "array", "maxItems": 2}}}
    contract = AnswerContract(schema, keep_first=("names",))
    answer = {"names": ["a", "b", "c"]}
    assert contract.validate(answer) == {"names": ["a", "b", "c"]}
    assert contract.kept(answer) == ({"names": ["a", "b"]}, {"names": 3})
    assert answer == {"names": ["a", "b", "c"]}  # never changed in place
    with pytest.raises(AnswerInvalid, match="names has 3 items; at most 2 are allowed"):
        AnswerContract(schema).validate(answer)


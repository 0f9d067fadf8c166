"""Agent-shaped items (issue 20): chat messages, tool calls, a system prompt and the fields a
spec declares — read by the engine, the datasets and the command line."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import SPEC_FIXTURES
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine.bind.load import load_scorer
from engine.cli.main import app
from engine.core.errors import SpecError
from engine.core.messages import MessageError, read_tool_calls
from engine.core.run_fields import run_namespace
from engine.run.datasets import iter_items
from engine import run_evals
from engine.run.items import parse_fields
from engine.run.readers import read_file
from engine.spec.compile import compile_file
from engine.testing import FakeJudge

AGENT = SPEC_FIXTURES / "agent"
RUBRIC = str(AGENT / "agent_rubric.yaml")          # judged: system, conversation, tool calls, rubric
TRAJECTORY = str(AGENT / "tool_trajectory.yaml")   # rule-only: tool names vs expected_trajectory
YES = {"judge": {"verdict": "yes"}}

CONVERSATION = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"},
                                 {"type": "image_url", "image_url": {"url": "https://example.org/p.png"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c2", "content": "14:00"},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "18°C, sunny"}]},
    {"role": "assistant", "content": "It is 18°C and sunny."},
    {"role": "assistant", "content": [{"type": "text", "text": "Anything else?"}]},
]
INPUT, OUTPUT = CONVERSATION[:2], CONVERSATION[2:]


def rubric(**options):
    judge = FakeJudge(YES)
    return load_scorer(RUBRIC, judge=judge, options=options), judge


# --- reading messages and tool calls ------------------------------------------------------------


def test_text_items_read_as_before():
    run = run_namespace({"input": "Where is Paris?", "output": "In France."})
    assert (run["input"], run["input_text"], run["output"], run["output_text"]) == (
        "Where is Paris?", "Where is Paris?", "In France.", "In France.")
    assert run["input_messages"] == [{"role": "user", "content": "Where is Paris?", "text": "Where is Paris?"}]
    assert run["output_messages"] == [{"role": "assistant", "content": "In France.", "text": "In France."}]
    assert (run["system"], run["tool_calls"], run["given"]) == ("", [], ["input", "output"])


def test_message_content_as_a_string_and_as_parts():
    run = run_namespace({"input": INPUT, "output": OUTPUT})
    assert run["input_text"] == "Weather in Paris?"            # the text part; the image is not text
    assert run["input_messages"][1]["content"][1]["type"] == "image_url"   # other parts kept
    assert run["output_text"] == "It is 18°C and sunny.\n\nAnything else?"
    assert run["system"] == "You are a travel agent."          # from the input's system message
    assert run["input"] is INPUT                                # as given
    assert run["given"] == ["input", "output", "system", "tool_calls"]


def test_last_user_message_is_the_input_text():
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"},
                {"role": "User", "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "part"}]}]
    assert run_namespace({"input": messages})["input_text"] == "second\npart"


def test_tool_calls_from_openai_style_assistant_messages():
    calls = run_namespace({"input": INPUT, "output": OUTPUT})["tool_calls"]
    assert calls == [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}, "result": "18°C, sunny"},
                     {"id": "c2", "name": "get_time", "arguments": {}, "result": "14:00"}]


def test_tool_results_without_ids_go_to_the_calls_in_order():
    output = [{"role": "assistant", "tool_calls": [{"name": "a"}, {"name": "b"}]},
              {"role": "tool", "content": "ra"}, {"role": "tool", "content": "rb"}]
    assert [(c["name"], c["result"]) for c in run_namespace({"output": output})["tool_calls"]] == [("a", "ra"),
                                                                                                   ("b", "rb")]


def test_tool_calls_from_a_flat_list():
    calls = read_tool_calls([{"name": "search", "arguments": {"q": "x"}, "result": [1, 2]},
                             {"name": "book", "arguments": '{"id": 7}', "error": "timeout", "ms": 40},
                             {"name": "raw", "arguments": "not json"},
                             {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}])
    assert calls == [{"name": "search", "arguments": {"q": "x"}, "result": [1, 2]},
                     {"name": "book", "arguments": {"id": 7}, "error": "timeout", "ms": 40},
                     {"name": "raw", "arguments": "not json"},
                     {"id": "c9", "name": "f", "arguments": {"a": 1}}]
    assert read_tool_calls('[{"name": "x"}]') == [{"name": "x", "arguments": {}}]  # JSON text (a CSV cell)


def test_the_items_tool_calls_win_over_the_messages():
    run = run_namespace({"output": OUTPUT, "tool_calls": [{"name": "only"}]})
    assert [c["name"] for c in run["tool_calls"]] == ["only"]


def test_an_output_of_messages_without_calls_gives_no_calls():
    run = run_namespace({"output": [{"role": "assistant", "content": "Hi"}]})
    assert (run["tool_calls"], "tool_calls" in run["given"]) == ([], True)


@pytest.mark.parametrize("value, where", [
    ([{"role": "user", "content": "a"}, "b"], "input[1]: a message must be an object"),
    ([{"role": "user", "content": 5}], "input[0].content: content must be a text, a list of parts or null"),
    ([{"role": "user", "content": ["x"]}], "input[0].content[0]: a part must be an object with a 'type'"),
    ([{"role": "user", "content": [{"type": "text"}]}], "input[0].content[0]: a text part's 'text' must be a string"),
    ([{"role": "", "content": "a"}], "input[0]: a message needs a 'role'"),
])
def test_malformed_messages_name_the_place(value, where):
    with pytest.raises(MessageError) as info:
        run_namespace({"input": value})
    assert str(info.value).startswith(where)


def test_lists_that_are_not_messages_stay_values():
    run = run_namespace({"input": ["a", {"k": 1}, 7]})
    assert (run["input"], run["input_text"]) == (["a", {"k": 1}, 7], '["a", {"k": 1}, 7]')


def test_malformed_tool_calls_fail_the_item_naming_the_entry():
    scorer, judge = rubric(rubric="Is polite.")
    result = scorer.run(input="hi", output="hello", tool_calls=[{"name": "ok"}, {"arguments": {}}])
    assert (result.status, result.error.kind) == ("failed", "input")
    assert result.error.message == "agent_rubric: tool_calls[1]: a tool call needs a 'name' (a non-empty string)"
    assert judge.calls == []


# --- the judge sees them; results keep the inputs ---------------------------------------------------


def test_the_prompt_shows_system_conversation_and_tool_calls():
    scorer, judge = rubric()
    result = scorer.run(input=INPUT, output=OUTPUT, rubric="Gives the weather.")
    assert result.score == 1
    assert judge.prompts("judge") == [
        "Does the agent's ANSWER meet the RUBRIC?\n\nSYSTEM PROMPT:\n<<<\nYou are a travel agent.\n>>>\n\n"
        "CONVERSATION:\n<<<\nsystem: You are a travel agent.\nuser: Weather in Paris?\n>>>\n\n"
        "TOOL CALLS:\n<<<\n1. get_weather {\"city\": \"Paris\"} -> 18°C, sunny\n2. get_time {} -> 14:00\n>>>\n\n"
        "ANSWER:\n<<<\nIt is 18°C and sunny.\n\nAnything else?\n>>>\n\nRUBRIC:\n<<<\nGives the weather.\n>>>\n\n"
        'Answer as {"verdict": "yes" | "no"}.']


def test_a_system_prompt_given_apart_wins_over_the_messages():
    scorer, judge = rubric(rubric="Is polite.")
    scorer.run(input=INPUT, output="Hi", system=[{"type": "text", "text": "Be brief."}])
    assert "SYSTEM PROMPT:\n<<<\nBe brief.\n>>>" in judge.prompts("judge")[0]


@pytest.mark.parametrize("scorer_id, answers", [
    ("faithfulness", {"preprocess": {"claims": ["Paris is in France."]},
                      "analyze": {"verdict": "yes", "reason": "r"}}),
    ("answer_similarity", {"preprocess": {"outputUnits": ["Paris is in France"], "groundTruthUnits": ["France"]},
                           "analyze": {"matches": [{"groundTruthUnit": "France", "outputUnit": "Paris is in France",
                                                    "match": "exact", "reason": "r"}],
                                       "contradictions": [], "extraUnits": []}}),
])
def test_shipped_scorers_build_the_same_prompts_from_messages_as_from_text(scorer_id, answers):
    text_item = dict(input="Where is Paris?", output="Paris is in France.", ground_truth="France",
                     context=["Paris is the capital of France."])
    messages_item = dict(text_item, input=[{"role": "system", "content": "S"},
                                           {"role": "user", "content": [{"type": "text", "text": "Where is Paris?"}]}],
                         output=[{"role": "assistant", "content": "Paris is in France."}])
    scorer = load_scorer(scorer_id, judge=FakeJudge())
    text_prompts = scorer.render(**text_item, answers=answers)
    assert len(text_prompts) >= 2
    assert scorer.render(**messages_item, answers=answers) == text_prompts


def test_textual_difference_compares_the_texts_of_messages():
    scorer = load_scorer("textual_difference")
    result = scorer.run(output=[{"role": "assistant", "content": [{"type": "text", "text": "hello world"}]}],
                        input=[{"role": "user", "content": "hello world"}])
    assert (result.score, result.reason.split(":")[0]) == (1, "output vs input")


def test_eval_results_and_store_keep_the_inputs_as_given(tmp_path):
    items = [{"id": "a", "input": INPUT, "output": OUTPUT, "rubric": "Gives the weather."}]
    store = tmp_path / "store.sqlite"
    summary = run_evals(items, [load_scorer(RUBRIC, judge=FakeJudge(YES))], store=store, out=tmp_path / "o.jsonl")
    assert summary.scorers["agent_rubric"].scored == 1
    with sqlite3.connect(store) as db:
        (stored,) = [json.loads(row[0]) for row in db.execute("SELECT item FROM items").fetchall()]
    assert (stored["input"], stored["output"], stored["rubric"]) == (INPUT, OUTPUT, "Gives the weather.")


# --- declared fields ---------------------------------------------------------------------------------


def test_a_declared_field_from_the_item():
    scorer, judge = rubric(rubric="From the option.")
    assert scorer.run(input="hi", output="hello", rubric="From the item.").score == 1
    assert judge.prompts("judge")[0].endswith("RUBRIC:\n<<<\nFrom the item.\n>>>\n\nAnswer as {\"verdict\": \"yes\" | \"no\"}.")


def test_a_declared_field_from_the_option():
    scorer, judge = rubric(rubric="From the option.")
    assert scorer.run(input="hi", output="hello").score == 1
    assert "RUBRIC:\n<<<\nFrom the option.\n>>>" in judge.prompts("judge")[0]


def test_a_required_declared_field_missing_fails_before_any_judge_call():
    scorer, judge = rubric()
    result = scorer.run(input="hi", output="hello")
    assert (result.status, result.error.kind, result.error.stage) == ("failed", "input", None)
    assert result.error.message == "agent_rubric needs 'rubric' and neither the item nor the option 'rubric' gives one"
    assert judge.calls == []


def test_a_declared_field_failing_its_schema_names_the_field_and_the_place():
    scorer = load_scorer(TRAJECTORY)
    result = scorer.run(input="hi", tool_calls=[], expected_trajectory=["search", 3])
    assert (result.status, result.error.kind) == ("failed", "input")
    assert result.error.message == ("tool_trajectory: expected_trajectory[1]: 3 is not of type 'string' "
                                    "(field 'expected_trajectory', from the item)")
    bad_option = load_scorer(RUBRIC, judge=FakeJudge(YES), options={"rubric": "ab"}).run(input="hi", output="x")
    assert bad_option.error.message == "agent_rubric: rubric: 'ab' is too short (field 'rubric', from the option 'rubric')"


def test_a_text_where_the_schema_wants_json_is_read_as_json():
    scorer = load_scorer(TRAJECTORY)
    result = scorer.run(input="hi", tool_calls='[{"name": "search"}]', expected_trajectory='["search"]')
    assert result.score == 1
    assert scorer.run(input="hi", tool_calls=[], expected_trajectory="  ").error.message == (
        "tool_trajectory needs 'expected_trajectory' and neither the item nor the option 'expected_trajectory' "
        "gives one")  # a blank text is not given


def test_declared_fields_are_listed_in_given_only_when_the_item_gives_them(write_spec):
    path = write_spec("given_fields", """
        format: 1
        id: given_fields
        name: Given fields
        description: Which fields an item gives.
        version: 1
        fields:
          note: {schema: {type: string}}
        options:
          note: {type: string, default: from the option}
        stages:
          - id: analyze
            function: textual_difference
            args: {reference: "run.note", candidate: "run.given | join(',')"}
        score:
          formula: "1"
        reason:
          - template: "{{ run.note }} | {{ run.given | join(',') }}"
    """)
    scorer = load_scorer(str(path))
    assert scorer.run(output="x").reason == "from the option | output"
    assert scorer.run(output="x", note="mine").reason == "mine | note,output"


def test_an_unknown_keyword_is_a_type_error_naming_the_declared_fields():
    scorer, _ = rubric()
    with pytest.raises(TypeError) as info:
        scorer.run(input="hi", output="x", rubrik="typo")
    assert str(info.value) == ("agent_rubric: unknown field 'rubrik' (it takes the run fields input, output, "
                               "ground_truth, context, system, tool_calls, output_a, output_b, language and the fields it declares: "
                               "rubric); did you mean 'rubric'?")


# --- C24: an empty required input; an empty output ------------------------------------------------------


def test_input_text_in_content_parts_is_read():
    """Field case C24 (shared/cases/handed.md)."""
    scorer, judge = rubric(rubric="Answers the question.")
    result = scorer.run(input=[{"role": "user", "content": [{"type": "text", "text": "Is Paris big?"}]}],
                        output="Yes, 2 million people live there.")
    assert result.score == 1
    assert "user: Is Paris big?" in judge.prompts("judge")[0]


@pytest.mark.parametrize("value, why", [
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}], "its messages have no user text"),
    ([{"role": "system", "content": "Be kind."}], "its messages have no user text"),
    ([], "its messages have no user text"),
    ("", "it is empty"),
    ("   ", "it is empty"),
    (None, "the item has none"),
])
def test_a_required_input_without_text_fails_naming_the_field(value, why):
    """Field case C24 (shared/cases/handed.md)."""
    scorer, judge = rubric(rubric="Answers the question.")
    result = scorer.run(input=value, output="An answer.")
    assert (result.status, result.score, result.error.kind, result.error.stage) == ("failed", None, "input", None)
    assert result.error.message == f"agent_rubric needs 'input' and {why}"
    assert judge.calls == []


@pytest.mark.parametrize("output", ["", [{"role": "assistant", "content": None,
                                          "tool_calls": [{"name": "search", "arguments": "{}"}]}]])
def test_an_empty_output_is_a_real_answer_and_is_judged(output):
    """Field case C24 (shared/cases/handed.md)."""
    scorer, judge = rubric(rubric="Answers the question.")
    judge.script["judge"] = [{"verdict": "no"}]
    result = scorer.run(input="Is Paris big?", output=output)
    assert (result.status, result.score) == ("scored", 0)
    assert "ANSWER:\n<<<\n\n>>>" in judge.prompts("judge")[0]


def test_no_tool_call_is_a_real_answer():
    """Field case C24 (shared/cases/handed.md)."""
    result = load_scorer(TRAJECTORY).run(input="hi", tool_calls=[], expected_trajectory=["search"])
    assert (result.status, result.score) == ("scored", 0)


@pytest.mark.parametrize("scorer_id, ground_truth", [
    ("answer_similarity", "  "), ("answer_similarity", [{"role": "assistant", "content": ""}]),
    ("context_recall", ""), ("equals", "\n"),
])
def test_a_required_blank_ground_truth_is_an_input_error_before_any_judge_call(scorer_id, ground_truth):
    """A required ground truth with no text fails the item as an input error naming the field, as
    a required input or context does; it is never "not scorable" nor a score."""
    judge = FakeJudge()
    result = load_scorer(scorer_id, judge=judge).run(output="Paris.", ground_truth=ground_truth,
                                                     context=["Paris is in France."])
    assert (result.status, result.error.kind) == ("failed", "input")
    assert "ground_truth" in result.error.message and "empty" in result.error.message
    assert judge.calls == []


def test_a_blank_ground_truth_not_required_is_still_given():
    """Where the ground truth is optional, a blank one is still the text compared with."""
    result = load_scorer("textual_difference").run(output="", ground_truth="")
    assert (result.status, result.score) == ("scored", 1)
    assert result.reason.startswith("output vs ground_truth: ")


# --- spec loading -------------------------------------------------------------------------------------

FIELDS_SPEC = """
    format: 1
    id: fields_spec
    name: Fields
    description: Declared fields.
    version: 1
    fields:
{fields}
    options:
      rubric: {{type: [string, "null"], default: {default}}}
    stages:
      - id: analyze
        function: textual_difference
        args: {{reference: "{reference}", candidate: "run.output_text"}}
    score:
      formula: "1"
"""


def load_fields(write_spec, fields: str, default: str = "null", reference: str = "run.rubric | string"):
    return compile_file(write_spec("fields_spec", FIELDS_SPEC.format(fields=fields, default=default,
                                                                     reference=reference)))


@pytest.mark.parametrize("fields, expected", [
    ("      ground_truht: {required: true}",
     [("unknown-field", "fields.ground_truht", "did you mean 'ground_truth'?")]),
    ("      rubric: {required: true}",
     [("unknown-field", "fields.rubric", "add schema: {type: string} (any JSON Schema), or use a run field: "
                                         "input, output, ground_truth, context, system, tool_calls, output_a, output_b")]),
    ("      output: {schema: {type: string}}",
     [("invalid-value", "fields.output.schema", "schema: is for a field the scorer declares under a name of its own")]),
    ("      input_text: {schema: {type: string}}", [("reserved-name", "fields.input_text", None)]),
    ("      run_id: {schema: {type: string}}", [("reserved-name", "fields.run_id", None)]),
    ("      rubric: {schema: {type: strin}}", [("invalid-schema", "fields.rubric.schema", "")]),
])
def test_field_declarations_are_checked_at_load(write_spec, fields, expected):
    with pytest.raises(SpecError) as info:
        load_fields(write_spec, fields)
    got = [(p.code, p.key_path, p.hint) for p in info.value.problems if p.code != "undefined-name"]
    assert [(c, k) for c, k, _ in got] == [(c, k) for c, k, _ in expected]
    for (_, _, hint), (_, _, wanted) in zip(got, expected):
        assert wanted is None or hint == wanted


def test_an_option_default_must_satisfy_the_fields_schema(write_spec):
    with pytest.raises(SpecError) as info:
        load_fields(write_spec, "      rubric: {schema: {type: string, minLength: 5}}", default='"abc"')
    (problem,) = info.value.problems
    assert (problem.code, problem.key_path) == ("option-default", "options.rubric.default")
    assert problem.message == "the default does not satisfy the schema of field 'rubric': 'abc' is too short"


def test_a_misspelled_declared_field_in_an_expression_is_found_at_load(write_spec):
    with pytest.raises(SpecError) as info:
        load_fields(write_spec, "      rubric: {schema: {type: string}}", reference="run.rubrik | string")
    (problem,) = info.value.problems
    assert (problem.code, problem.hint) == ("undefined-name", "did you mean 'run.rubric'?")


def test_a_declared_field_is_compiled_into_the_plan(write_spec):
    plan = load_fields(write_spec, "      rubric: {required: true, schema: {type: string}, description: R.}\n"
                                   "      output: {required: true}")
    assert list(plan.declared) == ["rubric"]
    assert (plan.declared["rubric"].from_option, plan.declared["rubric"].description) == (True, "R.")
    assert plan.required == {"rubric": True, "output": True}


# --- datasets -----------------------------------------------------------------------------------------


def test_csv_with_json_cells(tmp_path):
    path = tmp_path / "items.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "input", "output", "tool_calls", "expected_trajectory", "system"])
        writer.writerow(["1", json.dumps(INPUT), json.dumps(OUTPUT), "", '["get_weather", "get_time"]', ""])
        writer.writerow(["2", "[citation needed] plain text", "no calls", '[{"name": "get_time"}]', '["get_time"]',
                         "Be brief."])
    items = list(read_file(path))
    assert items[0]["input"] == INPUT and items[0]["output"] == OUTPUT and items[0]["tool_calls"] is None
    assert items[1]["input"] == "[citation needed] plain text"
    assert (items[1]["tool_calls"], items[1]["system"]) == ([{"name": "get_time"}], "Be brief.")
    assert items[0]["expected_trajectory"] == '["get_weather", "get_time"]'  # the scorer reads it as JSON
    summary = run_evals(path, [TRAJECTORY], store=False)
    assert summary.scorers["tool_trajectory"].scored == 2
    assert summary.scores["tool_trajectory"] == 1


def test_jsonl_and_mapped_columns(tmp_path):
    path = tmp_path / "items.jsonl"
    rows = [{"id": "a", "question": INPUT, "calls": [{"name": "get_weather"}], "want": ["get_weather"]},
            {"id": "b", "question": "hi", "calls": [], "want": ["search"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    fields = ["input=question", "tool_calls=calls", "expected_trajectory=want"]
    results = {}
    summary = run_evals(path, [TRAJECTORY], fields=fields, store=False,
                        on_item_complete=lambda item, done: results.update({item["id"]: done["tool_trajectory"]}))
    assert summary.scorers["tool_trajectory"].scored == 2
    assert (results["a"].score, results["b"].score) == (1, 0)
    assert results["a"].reason == "For Weather in Paris?: called get_weather; expected get_weather."


def test_parse_fields_knows_run_fields_and_declared_ones():
    assert parse_fields(["tool_calls=calls", "system=prompt", "rubric=criteria"], ["rubric"]) == {
        "tool_calls": "calls", "system": "prompt", "rubric": "criteria"}
    with pytest.raises(ValueError) as info:
        parse_fields(["rubric=criteria"])
    assert "'rubric' is not one of id, input, output, ground_truth, context, system, tool_calls, output_a, output_b" in str(info.value)


def test_items_hold_system_and_tool_calls_only_when_given():
    (plain,) = iter_items([{"output": "x"}])
    assert set(plain) == {"id", "input", "output", "ground_truth", "context"}


def test_a_dataframe_carries_messages_tool_calls_and_declared_fields():
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    frame = pd.DataFrame({"id": ["a"], "input": [INPUT], "tool_calls": [np.array([{"name": "get_weather"}])],
                          "expected_trajectory": [np.array(["get_weather"])]})
    (item,) = iter_items(frame)
    assert item["input"] == INPUT
    assert (item["tool_calls"], item["expected_trajectory"]) == ([{"name": "get_weather"}], ["get_weather"])
    assert run_evals(frame, [TRAJECTORY], store=False).scores["tool_trajectory"] == 1


# --- the command line ---------------------------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "SCORESPEC_MODEL": None})


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    paths = {"conversation": tmp_path / "conversation.json", "calls": tmp_path / "calls.json",
             "trajectory": tmp_path / "trajectory.json"}
    paths["conversation"].write_text(json.dumps(CONVERSATION), encoding="utf-8")
    paths["calls"].write_text(json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}, "result": "18°C"},
                                          {"name": "book", "error": "timeout"}]), encoding="utf-8")
    paths["trajectory"].write_text('["get_weather", "get_time"]', encoding="utf-8")
    return paths


def test_run_with_a_messages_file_and_a_field_file(files):
    result = invoke("run", TRAJECTORY, "--messages-file", str(files["conversation"]),
                    "--field", f"expected_trajectory=@{files['trajectory']}", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["score"], data["reason"]) == (1, "For Weather in Paris?: called get_weather, get_time; expected "
                                                  "get_weather, get_time.")


def test_run_with_a_tool_calls_file_and_inline_json(files):
    result = invoke("run", TRAJECTORY, "--input", "Book it", "--tool-calls-file", str(files["calls"]),
                    "--field", 'expected_trajectory=["get_weather", "book"]', "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["score"] == 1


def test_render_shows_the_prompt_built_from_messages_and_tool_calls(files):
    result = invoke("render", RUBRIC, "--input", "Book a table", "--output", "Done.", "--tool-calls-file",
                    str(files["calls"]), "--field", "rubric=Books the table.", "--field", "system=You book tables.")
    assert result.exit_code == 0, result.output
    assert ("SYSTEM PROMPT:\n<<<\nYou book tables.\n>>>\n\nCONVERSATION:\n<<<\nuser: Book a table\n>>>\n\n"
            "TOOL CALLS:\n<<<\n1. get_weather {\"city\": \"Paris\"} -> 18°C\n2. book {} !! timeout\n>>>") in result.stdout
    result = invoke("render", RUBRIC, "--messages-file", str(files["conversation"]), "--option", "rubric=Helps.")
    assert "user: Weather in Paris?\n>>>\n\nTOOL CALLS:\n<<<\n1. get_weather {\"city\": \"Paris\"} -> 18°C, sunny" \
        in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--field", "rubrik=x"], "--field 'rubrik=x': 'rubrik' is not a field of this scorer (did you mean 'rubric'?)"),
    (["--field", "rubric=@missing.json"], "--field 'rubric=@missing.json': no such file 'missing.json'"),
    (["--input", "x", "--field", "input=y"], "--field 'input=y': 'input' is already given (by --input)"),
    (["--field", "rubric"], "--field 'rubric': expected NAME=VALUE or NAME=@FILE (e.g. rubric=@rubric.json)"),
])
def test_cli_field_problems_are_named(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("render", RUBRIC, "--output", "x", *args)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {message}"


def test_cli_messages_file_problems_are_named(tmp_path, files):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "assistant", "content": "x"}]', encoding="utf-8")
    result = invoke("run", TRAJECTORY, "--messages-file", str(bad))
    assert (result.exit_code, result.stderr.strip()) == (
        2, f"error: --messages-file {bad}: no message has role 'user' (the input ends with the last one)")
    result = invoke("run", TRAJECTORY, "--messages-file", str(files["conversation"]), "--input", "x")
    assert result.stderr.strip() == "error: --input and --messages-file both give the input: give one of them"


def test_render_of_an_item_that_fails_before_any_prompt_says_why():
    result = invoke("render", RUBRIC, "--input", "", "--output", "x", "--field", "rubric=Helps.")
    assert (result.exit_code, result.stderr.strip()) == (2, "error: agent_rubric needs 'input' and it is empty")


def test_eval_field_maps_a_declared_field(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path / "store.sqlite"))
    data = tmp_path / "items.csv"
    data.write_text('id,question,calls,want\n1,hi,"[{""name"": ""search""}]","[""search""]"\n', encoding="utf-8")
    result = invoke("eval", TRAJECTORY, "--data", str(data), "--field", "input=question", "--field",
                    "tool_calls=calls", "--field", "expected_trajectory=want", "--json", "--quiet")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["tool_trajectory"]["mean"] == 1
    result = invoke("eval", TRAJECTORY, "--data", str(data), "--field", "expected=want")
    assert result.exit_code == 2
    assert "'expected' is not one of id, input, output, ground_truth, context, system, tool_calls, output_a, output_b, " \
           "language, expected_trajectory" in result.stderr


def test_a_target_may_return_the_tools_it_called():
    def agent(messages):
        assert messages == INPUT
        return {"output": "Sunny.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}

    results = {}
    run_evals([{"id": 1, "input": INPUT, "expected_trajectory": ["get_weather"]}], [TRAJECTORY], target=agent,
              store=False, on_item_complete=lambda item, done: results.update(done))
    assert results["tool_trajectory"].score == 1


def test_values_too_deep_to_read_fail_the_item_not_the_run():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    result = load_scorer("textual_difference").run(output="a", input=deep)
    assert (result.error.kind, result.error.message) == (
        "input", "textual_difference: input: cannot be read as text (RecursionError)")


def test_a_misspelled_run_field_keyword_is_answered_with_the_run_field():
    scorer = load_scorer("faithfulness")
    with pytest.raises(TypeError) as info:
        scorer.run(outptu="x", context=["c"])
    assert str(info.value) == ("faithfulness: unknown field 'outptu' (it takes the run fields input, output, "
                               "ground_truth, context, system, tool_calls, output_a, output_b, language and the fields it declares: "
                               "none); did you mean 'output'?")

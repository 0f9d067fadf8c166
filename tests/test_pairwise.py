"""Pairwise judges: two responses shown in both orders, positions mapped back to A or B, the
run's win rate, its interval, the sign test, position consistency and length bias."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval)
from engine import load_scorer
from engine.cli.main import app
from engine.interpret.pairwise import orders_for, winner_of
from engine.run.pairwise_stats import wilson_interval
from engine.spec.plans import PairwisePlan
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": None}


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def shown(prompt: str) -> tuple[str, str]:
    """The responses a pairwise prompt shows at positions A and B."""
    first = prompt.split("RESPONSE A:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
    second = prompt.split("RESPONSE B:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
    return first, second


def better_wherever_placed(prompt: str) -> dict:
    """A judge that picks the response marked GOOD, wherever it is placed."""
    first, _ = shown(prompt)
    return {"winner": "A" if "GOOD" in first else "B", "reason": "it is the good one"}


def request_prompt(request: dict) -> str:
    return request["messages"][-1]["content"]


def pairs(n_a: int = 15, n_b: int = 5) -> list[dict]:
    """`n_a` items where output_a is the better response, then `n_b` where output_b is; the
    better response is the shorter one in every item."""
    items = [{"id": f"a{i}", "input": f"question {i}", "output_a": f"GOOD {i}", "output_b": f"a worse answer {i}"}
             for i in range(n_a)]
    items += [{"id": f"b{i}", "input": f"question b{i}", "output_a": f"a worse answer b{i}", "output_b": f"GOOD b{i}"}
              for i in range(n_b)]
    return items


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def eval_json(server: FakeOpenAIServer, data: Path, out: Path, *more: object) -> tuple[dict, list[dict]]:
    result = invoke("eval", "pairwise_preference", "--data", data, "--model", "openai/test-model", "--base-url",
                    server.base_url, "--out", out, "--no-cache", "--quiet", "--json", *more)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return json.loads(result.stdout), lines


def test_a_judge_that_picks_the_better_response_wins_fifteen_of_twenty_pairs_in_both_orders(tmp_path):
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs())
    with FakeOpenAIServer(lambda request: better_wherever_placed(request_prompt(request))) as server:
        summary, lines = eval_json(server, data, tmp_path / "out.jsonl")
        assert len(server.requests) == 40
    scores = {line["id"]: line["score"] for line in lines}
    assert sorted(scores.values()) == [0.0] * 5 + [1.0] * 15
    assert all(scores[f"a{i}"] == 1.0 for i in range(15)) and all(scores[f"b{i}"] == 0.0 for i in range(5))
    figures = summary["scorers"]["pairwise_preference"]["pairwise"]
    assert (figures["wins"], figures["ties"], figures["losses"]) == (15, 0, 5)
    assert figures["winRate"] == 0.75
    assert figures["winRateCi"]["method"] == "wilson" and figures["winRateCi"]["low"] > 0.5
    assert figures["positionConsistency"] == 1.0
    assert figures["signTestP"] == pytest.approx(0.041389, abs=1e-6)
    assert figures["lengthBias"] == {"longerWon": 0, "decided": 20, "share": 0.0}


def test_a_judge_that_always_picks_the_first_position_makes_every_pair_a_tie(tmp_path):
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs())
    with FakeOpenAIServer({"winner": "A", "reason": "the first one"}) as server:
        summary, lines = eval_json(server, data, tmp_path / "out.jsonl")
    assert {line["score"] for line in lines} == {0.5}
    assert all(line["pairwise"]["consistent"] is False for line in lines)
    figures = summary["scorers"]["pairwise_preference"]["pairwise"]
    assert (figures["wins"], figures["ties"], figures["losses"]) == (0, 20, 0)
    assert figures["positionConsistency"] == 0.0 and figures["winRate"] == 0.5 and figures["signTestP"] is None


# --- the order mapping -------------------------------------------------------------------------


def test_a_position_maps_back_to_the_response_shown_there():
    assert [winner_of("AB", p) for p in ("A", "B", "tie")] == ["A", "B", "tie"]
    assert [winner_of("BA", p) for p in ("A", "B", "tie")] == ["B", "A", "tie"]


def test_both_orders_show_a_first_then_b_first_and_keep_both_answers():
    judge = FakeJudge({"judge": lambda call: better_wherever_placed(call.messages[-1]["content"])})
    result = load_scorer("pairwise_preference", judge=judge).run(input="q", output_a="bad", output_b="GOOD")
    assert [shown(call.messages[-1]["content"]) for call in judge.calls] == [("bad", "GOOD"), ("GOOD", "bad")]
    assert [call.order for call in judge.calls] == ["AB", "BA"]
    assert result.score == 0.0
    stage = result.stages["judge"]
    assert stage.result["winner"] == "B" and stage.result["consistent"] is True
    assert [(o["order"], o["position"], o["winner"]) for o in stage.result["orders"]] == [("AB", "B", "B"),
                                                                                        ("BA", "A", "B")]
    assert len(json.loads(stage.raw_answer)) == 2 and stage.prompt.startswith("[AB]\n")
    assert result.pairwise.model_dump() == {"winner": "B", "consistent": True, "orders": ["AB", "BA"],
                                            "positions": ["B", "A"], "winners": ["B", "B"], "longer": "B"}


def test_a_tie_in_both_orders_is_a_consistent_tie_scored_half_of_the_scale():
    judge = FakeJudge({"judge": {"winner": "tie", "reason": "equal"}})
    scorer = load_scorer("pairwise_preference", judge=judge, options={"scale": 10})
    result = scorer.run(output_a="x", output_b="y")
    assert result.score == 5.0 and result.pairwise.winner == "tie" and result.pairwise.consistent is True
    assert result.reason.startswith("A tie: the judge found neither response better.")


def test_a_tie_in_one_order_only_is_an_inconsistent_tie():
    judge = FakeJudge({"judge": [{"winner": "A", "reason": "a"}, {"winner": "tie", "reason": "same"}]})
    result = load_scorer("pairwise_preference", judge=judge).run(output_a="x", output_b="y")
    assert result.score == 0.5 and result.pairwise.consistent is False


def test_an_answer_off_the_enum_is_asked_again_and_then_fails_the_item():
    judge = FakeJudge({"judge": {"winner": "first", "reason": "r"}})
    result = load_scorer("pairwise_preference", judge=judge).run(output_a="x", output_b="y")
    assert result.status == "failed" and result.score is None and result.pairwise is None
    assert result.error.stage == "judge" and result.error.message.startswith("order AB: ")
    assert len(judge.calls) == 3  # the first answer and two re-asks (max_reasks 2)


def test_an_answer_in_another_case_counts_as_its_position():
    judge = FakeJudge({"judge": [{"winner": " a ", "reason": "r"}, {"winner": "b", "reason": "r"}]})
    result = load_scorer("pairwise_preference", judge=judge).run(output_a="x", output_b="y")
    assert result.score == 1.0 and result.pairwise.consistent is True


def test_a_pair_with_one_side_missing_fails_as_an_input_error_before_any_call():
    judge = FakeJudge({"judge": {"winner": "A", "reason": "r"}})
    result = load_scorer("pairwise_preference", judge=judge).run(input="q", output_a="only one")
    assert result.status == "failed" and result.error.kind == "input"
    assert "needs 'output_b'" in result.error.message and judge.calls == []


def test_messages_and_tool_calls_are_shown_as_responses():
    judge = FakeJudge({"judge": {"winner": "tie", "reason": "r"}})
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [{
                    "id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "4C"},
                {"role": "assistant", "content": "It is 4C in Oslo."}]
    calls = [{"name": "weather", "arguments": {"city": "Oslo"}, "error": "timeout"}]
    load_scorer("pairwise_preference", judge=judge).run(input="weather?", output_a=messages, output_b=calls)
    first, second = shown(judge.calls[0].messages[-1]["content"])
    assert first == 'Let me look.\n\nIt is 4C in Oslo.\n[called weather({"city": "Oslo"}) -> 4C]'
    assert second == '[called weather({"city": "Oslo"}) -> error: timeout]'


def test_random_order_is_drawn_from_the_item_and_fixed_order_asks_a_first():
    random = PairwisePlan(order="random")
    drawn = {orders_for(random, f"a{i}", "b", "q") for i in range(20)}
    assert drawn == {("AB",), ("BA",)}
    assert all(orders_for(random, f"a{i}", "b", "q") == orders_for(random, f"a{i}", "b", "q") for i in range(20))
    assert orders_for(PairwisePlan(order="fixed"), "a", "b", "q") == ("AB",)
    assert orders_for(PairwisePlan(), "a", "b", "q") == ("AB", "BA")


def test_wilson_interval_of_fifteen_in_twenty():
    low, high = wilson_interval(15, 20)
    assert low == pytest.approx(0.5313, abs=1e-4) and high == pytest.approx(0.8881, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


# --- resume and the cache ----------------------------------------------------------------------


def test_a_resumed_run_asks_only_the_failed_pairs_and_counts_every_pair_in_its_summary(tmp_path):
    from engine.testing.fake_replies import Fault

    data = write_jsonl(tmp_path / "pairs.jsonl", pairs())
    out = tmp_path / "out.jsonl"
    failing = [True]

    def reply(request: dict):
        prompt = request_prompt(request)
        if failing[0] and "question b" in prompt:
            return Fault.status(400)
        return better_wherever_placed(prompt)

    with FakeOpenAIServer(reply) as server:
        first = invoke("eval", "pairwise_preference", "--data", data, "--model", "openai/test-model", "--base-url",
                       server.base_url, "--out", out, "--no-cache", "--quiet", "--json")
        assert first.exit_code == 2, first.output
        assert json.loads(first.stdout)["scorers"]["pairwise_preference"]["pairwise"]["items"] == 15
        asked = len(server.requests)
        failing[0] = False
        summary, lines = eval_json(server, data, out, "--resume")
        assert len(server.requests) - asked == 10  # the 5 failed pairs, in both orders
    figures = summary["scorers"]["pairwise_preference"]["pairwise"]
    assert (figures["wins"], figures["ties"], figures["losses"]) == (15, 0, 5) and figures["winRate"] == 0.75
    assert len(lines) == 20


def test_each_order_is_cached_on_its_own_even_when_both_prompts_are_the_same(tmp_path):
    data = write_jsonl(tmp_path / "pairs.jsonl", [{"id": 1, "input": "q", "output_a": "same", "output_b": "same"}])
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAIServer({"winner": "A", "reason": "first"}) as server:
        for attempt, out in enumerate((tmp_path / "one.jsonl", tmp_path / "two.jsonl")):
            result = invoke("eval", "pairwise_preference", "--data", data, "--model", "openai/test-model",
                            "--base-url", server.base_url, "--out", out, "--cache", cache, "--quiet", "--json")
            assert result.exit_code == 0, result.output
            assert len(server.requests) == 2  # both orders asked the first time, none the second
            line = json.loads(out.read_text(encoding="utf-8"))
            assert line["usage"]["cacheHits"] == 2 * attempt
            assert line["pairwise"]["winners"] == ["A", "B"]  # each order's own answer: A first, then B first


def test_the_order_is_part_of_the_cache_key():
    from engine.judge.cache.base import CallIdentity

    common = dict(provider="openai", model="m", base_url=None, structured_mode="tool_call",
                  messages=[{"role": "user", "content": "same"}], schema={"type": "object"}, temperature=0.0,
                  max_tokens=10, seed=None, sample_index=0)
    keys = {CallIdentity(**common, order=order).key() for order in (None, "AB", "BA")}
    assert len(keys) == 3


# --- what the console, the CI files and the HTML report show ------------------------------------


def judge_first_position_for_some(request: dict) -> dict:
    """Picks the better response, except for questions 1x, where it always picks position A."""
    prompt = request_prompt(request)
    return {"winner": "A", "reason": "first"} if "question 1" in prompt else better_wherever_placed(prompt)


def test_the_console_the_ci_files_and_the_html_report_show_the_pairwise_figures(tmp_path):
    pytest.importorskip("altair")
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs())
    files = {name: tmp_path / name for name in ("out.jsonl", "junit.xml", "summary.md", "report.html")}
    with FakeOpenAIServer(judge_first_position_for_some) as server:
        result = invoke("eval", "pairwise_preference", "--data", data, "--model", "openai/test-model", "--base-url",
                        server.base_url, "--out", files["out.jsonl"], "--no-cache", "--junit", files["junit.xml"],
                        "--summary-md", files["summary.md"], "--report", files["report.html"])
    assert result.exit_code == 0, result.output
    line = ("A 9 · tie 6 · B 5 of 20 · win rate 0.60 (95 % Wilson 0.39–0.78) · sign test p 0.424 · "
            "position consistency 0.70 of 20 · longer won 0 of 14 (0.00)")
    assert f"pairwise: pairwise_preference: {line}" in result.stdout
    assert f"- pairwise\\_preference: {line}" in files["summary.md"].read_text(encoding="utf-8")
    junit = files["junit.xml"].read_text(encoding="utf-8")
    assert f'<property name="pairwise" value="{line}" />' in junit
    assert '<property name="positionConsistency" value="0.7" />' in junit
    page = files["report.html"].read_text(encoding="utf-8")
    assert 'class="winbar" src="data:image/svg+xml;base64,' in page and line in page
    assert "<dt>inconsistent</dt><dd class=\"bad\">6 (" in page
    rows = json.loads(page.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0]
                      .replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&"))["rows"]
    assert [row["result"]["pairwise"]["consistent"] for row in rows[:7]] == [False] * 6 + [True]


def test_the_win_bar_draws_each_share_at_its_width():
    from engine.report.pairwise_view import win_bar_svg

    svg = win_bar_svg(15, 0, 5)
    assert 'width="240.00" height="18" fill="#2e7d32"><title>A wins: 15 of 20</title>' in svg
    assert 'x="240.00" y="0" width="80.00"' in svg and "ties" not in svg


# --- two files joined into pairs ----------------------------------------------------------------


def test_two_files_joined_by_item_id_give_the_same_scores_and_report_one_sided_items(tmp_path):
    items = pairs()
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": i["id"], "input": i["input"], "output": i["output_a"]}
                                               for i in items] + [{"id": "only-new", "output": "x"}])
    old = write_jsonl(tmp_path / "old.jsonl", [{"id": i["id"], "output": i["output_b"]} for i in reversed(items)]
                      + [{"id": "only-old", "output": "y"}])
    with FakeOpenAIServer(lambda request: better_wherever_placed(request_prompt(request))) as server:
        summary, lines = eval_json(server, new, tmp_path / "out.jsonl", "--pair-with", old)
        assert len(server.requests) == 40
        result = invoke("eval", "pairwise_preference", "--data", new, "--pair-with", tmp_path / "missing.jsonl",
                        "--model", "openai/test-model", "--base-url", server.base_url, "--quiet")
    assert {line["id"]: line["score"] for line in lines} == {i["id"]: 1.0 if i["id"].startswith("a") else 0.0
                                                             for i in items}
    figures = summary["scorers"]["pairwise_preference"]["pairwise"]
    assert figures["winRate"] == 0.75 and figures["positionConsistency"] == 1.0 and summary["items"] == 20
    assert result.exit_code == 2 and "--pair-with" in result.stderr and "no such file" in result.stderr


def test_one_sided_items_are_named_and_left_out():
    from engine.run.pairing import pair_items

    told: list[str] = []
    joined = pair_items([{"id": 1, "output": "a1"}, {"id": 2, "output": "a2"}],
                        [{"id": "1", "output": "b1"}, {"id": 3, "output": "b3"}], note=told.append)
    assert [(i["id"], i["output_a"], i["output_b"]) for i in joined] == [(1, "a1", "b1")]
    assert told == ["1 item(s) of --data have no item of the same id in --pair-with, not scored: 2",
                    "1 item(s) of --pair-with have no item of the same id in --data, not scored: 3"]


# --- the pairwise block checked at load ---------------------------------------------------------


PAIR_SPEC = """
format: 1
id: mine
name: Mine
description: A pairwise judge.
version: 1
fields:
  output_a: {required: true}
  output_b: {required: true}
stages:
  - id: judge
    prompt: t/pair.j2
    pairwise: {order: fixed}
    output_schema:
      type: object
      required: [winner]
      properties:
        winner: {type: string, enum: WINNERS}
    EXTRA
score:
  formula: "1 if judge.winner == 'A' else 0"
"""


@pytest.mark.parametrize(("winners", "extra", "message"), [
    ('["first", "second"]', "", "must be a top-level property with enum [A, B] or [A, B, tie]"),
    ('["A", "B"]', "for_each: \"[1, 2]\"", "a pairwise stage has no for_each"),
    ('["A", "B"]', "samples: 3", "a pairwise stage has no samples"),
])
def test_a_pairwise_block_the_stage_cannot_keep_is_a_load_error(write_spec, winners, extra, message):
    from engine.core.errors import SpecError

    path = write_spec("mine", PAIR_SPEC.replace("WINNERS", winners).replace("EXTRA", extra),
                      {"t/pair.j2": "{{ pair.first }} / {{ pair.second }}"})
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path))
    assert message in str(caught.value)


def test_a_pairwise_prompt_reading_a_key_pair_does_not_have_is_a_load_error(write_spec):
    from engine.core.errors import SpecError

    path = write_spec("mine", PAIR_SPEC.replace("WINNERS", '["A", "B"]').replace("EXTRA", ""),
                      {"t/pair.j2": "{{ pair.third }}"})
    with pytest.raises(SpecError) as caught:
        load_scorer(str(path))
    assert "'pair.third'" in str(caught.value)


def test_a_fixed_order_asks_once_a_first_and_measures_no_consistency(write_spec):
    path = write_spec("mine", PAIR_SPEC.replace("WINNERS", '["A", "B"]').replace("EXTRA", ""),
                      {"t/pair.j2": "{{ pair.first }} / {{ pair.second }} ({{ pair.order }})"})
    judge = FakeJudge({"judge": {"winner": "B"}})
    result = load_scorer(str(path), judge=judge).run(output_a="x", output_b="y")
    assert [call.messages[-1]["content"] for call in judge.calls] == ["x / y (AB)"]
    assert result.score == 0 and result.pairwise.consistent is None and result.pairwise.winner == "B"


# --- a target in both arms ----------------------------------------------------------------------


def test_run_evals_runs_two_versions_on_the_same_inputs_and_judges_their_pairs():
    from engine import run_evals

    async def new_version(question):
        return f"GOOD answer to {question}"

    def old_version(question):
        return f"a worse answer to {question}"

    judge = FakeJudge({"judge": lambda call: better_wherever_placed(call.messages[-1]["content"])})
    scorer = load_scorer("pairwise_preference", judge=judge)
    items = [{"id": i, "input": f"question {i}"} for i in range(4)]
    summary = run_evals(items, [scorer], target=new_version, against=old_version, store=False)
    figures = summary.scorers["pairwise_preference"].pairwise
    assert (figures["wins"], figures["losses"]) == (4, 0) and len(judge.calls) == 8
    first_call = judge.calls[0].messages[-1]["content"]
    assert shown(first_call) == ("GOOD answer to question 0", "a worse answer to question 0")
    with pytest.raises(ValueError, match="against needs a target"):
        run_evals(items, [scorer], against=old_version, store=False)


def test_the_command_line_takes_both_arms_as_module_functions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pair_arms.py").write_text(
        "async def new(question):\n    return 'GOOD ' + question\n\n"
        "def old(question):\n    return 'worse ' + question\n", encoding="utf-8")
    data = write_jsonl(tmp_path / "questions.jsonl", [{"id": i, "input": f"question {i}"} for i in range(3)])
    with FakeOpenAIServer(lambda request: better_wherever_placed(request_prompt(request))) as server:
        summary, lines = eval_json(server, data, tmp_path / "out.jsonl", "--target", "pair_arms:new",
                                   "--target-b", "pair_arms:old")
        assert len(server.requests) == 6
        missing = invoke("eval", "pairwise_preference", "--data", data, "--target", "pair_arms:nothing",
                         "--model", "openai/test-model", "--base-url", server.base_url, "--quiet")
        alone = invoke("eval", "pairwise_preference", "--data", data, "--target-b", "pair_arms:old",
                       "--model", "openai/test-model", "--base-url", server.base_url, "--quiet")
    assert [line["score"] for line in lines] == [1.0, 1.0, 1.0]
    assert summary["scorers"]["pairwise_preference"]["pairwise"]["winRate"] == 1.0
    assert missing.exit_code == 2 and "--target pair_arms:nothing: 'pair_arms' has no 'nothing'" in missing.stderr
    assert alone.exit_code == 2 and "--target-b: give the first version with --target too" in alone.stderr


# --- calibrate on human preference labels -------------------------------------------------------


def test_calibrate_on_preference_labels_gives_agreement_without_ties_kappa_and_position_consistency():
    from engine import calibrate

    def judge_answer(call):
        first, _ = shown(call.messages[-1]["content"])
        if "SAME" in call.messages[-1]["content"]:
            return {"winner": "A", "reason": "first"}  # position bias on these: an inconsistent tie
        return {"winner": "A" if "GOOD" in first else "B", "reason": "r"}

    items = [{"id": 1, "output_a": "GOOD", "output_b": "bad", "label": "A"},
             {"id": 2, "output_a": "bad", "output_b": "GOOD", "label": "B"},
             {"id": 3, "output_a": "GOOD", "output_b": "bad", "label": "B"},   # the judge disagrees
             {"id": 4, "output_a": "SAME x", "output_b": "SAME y", "label": " tie "},
             {"id": 5, "output_a": "SAME x", "output_b": "SAME z", "label": "A"},
             {"id": 6, "output_a": "GOOD", "output_b": "bad", "label": "a"}]
    scorer = load_scorer("pairwise_preference", judge=FakeJudge({"judge": judge_answer}))
    report = calibrate(scorer, items, label_field="label", store=False)
    figures = report.pairwise
    assert report.kind == "pairwise" and figures["items"] == 6
    assert figures["decided"] == 4 and figures["accuracyWithoutTies"] == 0.75  # items 1, 2, 3, 6
    assert figures["accuracy"] == 4 / 6  # 1, 2, 4 and 6 agree
    assert figures["positionConsistency"] == 4 / 6
    assert figures["confusion"]["B"] == {"A": 1, "B": 1, "tie": 0}
    from sklearn.metrics import cohen_kappa_score

    human = ["A", "B", "B", "tie", "A", "A"]
    judged = ["A", "B", "A", "tie", "tie", "A"]
    assert figures["cohenKappa"] == pytest.approx(cohen_kappa_score(human, judged))
    assert report.to_json_dict()["pairwise"]["accuracyWithoutTies"] == 0.75


def test_the_calibrate_command_prints_the_pairwise_agreement(tmp_path):
    rows = pairs(3, 2)
    for row in rows:
        row["label"] = "A" if row["id"].startswith("a") else "B"
    data = write_jsonl(tmp_path / "pairs.jsonl", rows)
    with FakeOpenAIServer(lambda request: better_wherever_placed(request_prompt(request))) as server:
        result = invoke("calibrate", "pairwise_preference", "--data", data, "--label-field", "label", "--model",
                        "openai/test-model", "--base-url", server.base_url)
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    table = {line.split("  ")[0]: line.split("  ")[-1].strip() for line in lines if "  " in line}
    assert table["accuracy without ties"] == "1 of 5 decided by both"
    assert table["Cohen's kappa (three classes)"] == "1" and table["position consistency"] == "1 of 5"

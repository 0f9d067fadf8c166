"""Juries: a spec's (or a stage's) panel of judge models, checked at load, resolved with the caller's
and the environment's, asked juror by juror with failed jurors left out, reduced as samples are;
the reductions unanimous, min and max; Fleiss' kappa; the jury carried by a Ray recipe."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.bind.recipe import scorer_recipe
from engine.core.errors import ScorerRunError, SpecError
from engine.interpret.reduce import central, unanimous
from engine.judge.settings import JudgeSettings
from engine.run.jury_stats import JuryStats, fleiss_kappa, jury_of
from engine.spec.compile import compile_file
from engine.testing import FakeJudge

PROMPTS = {"t/ask.j2": "Is this right?\n{{ run.output }}\n", "t/each.j2": "Is this claim right? {{ each }}\n",
           "t/bad.j2": "Is this right? {{ run.output | int // 0 }}\n"}
VERDICT = '{type: string, enum: ["yes", "no", "unsure"]}'
THREE = "[openai/a, openai/b, openai/c]"


def spec(write_spec, jury: str = f"{{models: {THREE}}}", *, stage: str = "", props: str = f"verdict: {VERDICT}",
         formula: str = "1 if a.verdict == 'yes' else 0") -> Path:
    extra = "".join(f"    {line}\n" for line in stage.strip().splitlines())
    judge = f"judge:\n  jury: {jury}\n" if jury else ""
    text = (f"format: 1\nid: panel\nname: Panel\ndescription: d\nversion: 1\n{judge}"
            "stages:\n  - id: a\n    prompt: t/ask.j2\n    output_schema:\n      type: object\n"
            f"      properties:\n        {props}\n{extra}score:\n  formula: \"{formula}\"\n")
    return write_spec("panel", text, PROMPTS)


def problems(path: Path) -> list[tuple[str, int, str]]:
    with pytest.raises(SpecError) as info:
        compile_file(path)
    return [(p.key_path, p.line, p.message) for p in info.value.problems]


def by_juror(votes: dict[str, object]):
    """A FakeJudge reply: each juror's answer, or the exception it raises."""

    def reply(call):
        found = votes[call.model]
        if isinstance(found, BaseException):
            raise found
        return found

    return reply


def down(model: str = "openai/c") -> ScorerRunError:
    return ScorerRunError("transport", f"{model}: HTTP 503 after 4 retries")


# --- the spec ------------------------------------------------------------------------------------


def test_a_jury_of_one_is_an_error_at_its_key_and_line(write_spec):
    path = spec(write_spec, "{models: [openai/a], min_successful: 2}")
    assert problems(path) == [("judge.jury.models", 7, "a jury of one is a single judge")]


def test_a_juror_named_twice_and_a_minimum_above_the_jurors_are_errors(write_spec):
    path = spec(write_spec, "{models: [openai/a, openai/b, openai/a], min_successful: 3}")
    assert [(key, message) for key, _, message in problems(path)] == [
        ("judge.jury.models[2]", "'openai/a' is named twice"),
        ("judge.jury.min_successful", "min_successful: 3 is more than the 2 jurors")]


def test_a_unanimous_jury_needs_the_value_for_a_split(write_spec):
    path = spec(write_spec, f"{{models: {THREE}, reduce: unanimous}}")
    assert [key for key, _, _ in problems(path)] == ["judge.jury.tie"]


def test_a_jury_compiles_to_its_models_minimum_and_the_stages_reduction(write_spec):
    plan = compile_file(spec(write_spec))
    jury = plan.stages[0].jury
    assert (jury.models, jury.min_successful, jury.reduction.method, jury.reduction.fields, jury.reduction.n) == (
        ("openai/a", "openai/b", "openai/c"), 2, "majority", ("verdict",), 3)


def test_a_stages_own_jury_replaces_the_judge_blocks(write_spec):
    path = spec(write_spec, stage="jury: {models: [openai/x, openai/y], min_successful: 1, reduce: unanimous, "
                "tie: unsure}")
    jury = compile_file(path).stages[0].jury
    assert (jury.models, jury.min_successful, jury.reduction.method, jury.reduction.tie) == (
        ("openai/x", "openai/y"), 1, "unanimous", ("unsure",))


# --- settings: the caller's, the spec's, the environment's ------------------------------------------


def test_the_callers_jury_replaces_the_specs_and_a_jury_of_one_is_refused(write_spec):
    path = spec(write_spec)
    scorer = load_scorer(str(path), judge=FakeJudge(default={"verdict": "yes"}),
                         settings=JudgeSettings(jury="openai/p, openai/q", jury_min=1))
    assert (scorer.plan.stages[0].jury.models, scorer.plan.stages[0].jury.min_successful) == (
        ("openai/p", "openai/q"), 1)
    with pytest.raises(ValueError, match="a jury needs two or more distinct models"):
        JudgeSettings(jury="openai/p,openai/p")
    with pytest.raises(ValueError, match="from 1 to the 2 jurors"):
        JudgeSettings(jury="openai/p,openai/q", jury_min=3)


def test_the_environments_jury_asks_a_spec_without_one_but_not_a_spec_with_one(write_spec, monkeypatch):
    monkeypatch.setenv("SCORESPEC_JURY", "openai/e1,openai/e2")
    monkeypatch.setenv("SCORESPEC_JURY_MIN", "1")
    monkeypatch.delenv("SCORESPEC_MODEL", raising=False)
    single = load_scorer(str(spec(write_spec, "")), judge=FakeJudge(default={"verdict": "yes"}))
    assert (single.plan.stages[0].jury.models, single.plan.stages[0].jury.min_successful) == (
        ("openai/e1", "openai/e2"), 1)
    panel = load_scorer(str(spec(write_spec)), judge=FakeJudge(default={"verdict": "yes"}))
    assert panel.plan.stages[0].jury.models == ("openai/a", "openai/b", "openai/c")
    assert JudgeSettings().resolved("openai/spec-model").jury == ("openai/e1", "openai/e2")


# --- asking the jury -------------------------------------------------------------------------------


def test_each_juror_is_asked_once_and_the_majority_of_their_answers_is_the_stages(write_spec):
    judge = FakeJudge(default=by_juror({"openai/a": {"verdict": "no"}, "openai/b": {"verdict": "yes"},
                                        "openai/c": {"verdict": "yes"}}))
    result = load_scorer(str(spec(write_spec)), judge=judge).run(output="x")
    assert [call.model for call in judge.calls] == ["openai/a", "openai/b", "openai/c"]
    record = result.stages["a"]
    assert (result.score, record.result, record.agreement) == (1.0, {"verdict": "yes"}, pytest.approx(2 / 3))
    assert record.jury_votes == [{"openai/a": "no", "openai/b": "yes", "openai/c": "yes"}]
    assert {model: juror.answer for model, juror in record.jurors.items()} == {
        "openai/a": {"verdict": "no"}, "openai/b": {"verdict": "yes"}, "openai/c": {"verdict": "yes"}}
    assert record.usage.calls == 3 and all(t.usage.calls == 1 for t in result.jurors.values())


def test_a_tie_between_jurors_goes_where_a_tie_between_samples_goes(write_spec):
    judge = FakeJudge(default=by_juror({"openai/a": {"verdict": "no"}, "openai/b": {"verdict": "yes"},
                                        "openai/c": down()}))
    result = load_scorer(str(spec(write_spec)), judge=judge).run(output="x")
    assert result.stages["a"].result == {"verdict": "no"}  # the earliest tied answer's, as for samples
    tied = load_scorer(str(spec(write_spec, f"{{models: {THREE}, tie: unsure}}")), judge=judge).run(output="x")
    assert tied.stages["a"].result == {"verdict": "unsure"}


def test_a_failed_juror_is_left_out_and_too_few_answers_fail_the_item_naming_it(write_spec):
    judge = FakeJudge(default=by_juror({"openai/a": {"verdict": "yes"}, "openai/b": down("openai/b"),
                                        "openai/c": down()}))
    result = load_scorer(str(spec(write_spec)), judge=judge).run(output="x")
    assert (result.score, result.error.kind, result.error.stage) == (None, "judge", "a")
    assert result.error.message.startswith("the jury needs 2 of its 3 jurors' answers and got 1: failed openai/b "
                                           "(transport: openai/b: HTTP 503")
    assert "; openai/c (transport:" in result.error.message
    assert {m: t.failed for m, t in result.jurors.items()} == {"openai/a": 0, "openai/b": 1, "openai/c": 1}


def test_a_prompt_that_cannot_render_fails_the_item_instead_of_leaving_the_juror_out(write_spec):
    judge = FakeJudge(default={"verdict": "yes"})
    path = spec(write_spec)
    path.write_text(path.read_text().replace("t/ask.j2", "t/bad.j2"))
    result = load_scorer(str(path), judge=judge).run(output="3")
    assert (result.error.kind, list(result.jurors), judge.calls) == ("expression", ["openai/a"], [])


def test_a_for_each_stage_keeps_each_jurors_answer_per_element(write_spec):
    text = ("format: 1\nid: each_panel\nname: P\ndescription: d\nversion: 1\n"
            "judge:\n  jury: {models: [openai/a, openai/b]}\n"
            "stages:\n  - id: a\n    prompt: t/each.j2\n    for_each: \"['x', 'y']\"\n    output_schema:\n"
            f"      type: object\n      properties:\n        ok: {{type: boolean}}\n"
            "score:\n  formula: \"(a | selectattr('ok') | list | length) / 2\"\n")
    path = write_spec("each_panel", text, PROMPTS)

    def reply(call):
        return {"ok": call.model == "openai/a" or "x" in call.messages[-1]["content"]}

    result = load_scorer(str(path), judge=FakeJudge(default=reply)).run(output="o")
    record = result.stages["a"]
    assert record.jurors["openai/b"].answer == [{"ok": True}, {"ok": False}]
    assert record.jury_votes == [{"openai/a": True, "openai/b": True}, {"openai/a": True, "openai/b": False}]
    assert record.agreement == 0.5  # the lowest element's: a tie at one of two
    assert result.score == 1.0  # a tie goes to the earliest juror's answer


def test_render_shows_a_jurys_question_once(write_spec):
    shown = load_scorer(str(spec(write_spec)), judge=FakeJudge({})).render(output="x")
    assert [stage for stage, _ in shown] == ["a"]


def test_a_ray_recipe_carries_the_callers_jury(write_spec):
    scorer = load_scorer(str(spec(write_spec)), model="openai/m", base_url="http://127.0.0.1:9/v1",
                         settings=JudgeSettings(jury=("openai/p", "openai/q", "openai/r"), jury_min=3))
    recipe = pickle.loads(pickle.dumps(scorer_recipe(scorer)))
    assert recipe.juries == {"a": (("openai/p", "openai/q", "openai/r"), 3)}
    jury = recipe.build().plan.stages[0].jury
    assert (jury.models, jury.min_successful, jury.reduction.method) == (("openai/p", "openai/q", "openai/r"), 3,
                                                                           "majority")


# --- reductions and statistics ------------------------------------------------------------------------


def test_unanimous_takes_the_common_value_or_the_tie_value_on_a_split():
    same = unanimous([{"v": "yes", "r": 1}, {"v": "yes", "r": 2}], ["v"], ("unsure",))
    assert (same.answer, same.agreement) == ({"v": "yes", "r": 1}, 1.0)
    split = unanimous([{"v": "yes", "r": 1}, {"v": "yes", "r": 2}, {"v": "no", "r": 3}], ["v"], ("no",))
    assert (split.answer, split.agreement) == ({"v": "no", "r": 3}, pytest.approx(1 / 3))
    unseen = unanimous([{"v": "yes", "r": 1}, {"v": "no", "r": 2}], ["v"], ("unsure",))
    assert (unseen.answer, unseen.agreement) == ({"v": "unsure", "r": 1}, 0.0)


def test_min_and_max_take_the_least_and_the_greatest_number():
    samples = [{"score": 3, "why": "a"}, {"score": 5, "why": "b"}, {"score": 4, "why": "c"}]
    schema = {"properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}}
    low, high = central(samples, ["score"], "min", schema), central(samples, ["score"], "max", schema)
    assert (low.answer, high.answer) == ({"score": 3, "why": "a"}, {"score": 5, "why": "a"})
    assert low.spread == {"score": 2.0} and low.agreement == 0.5


def test_fleiss_kappa_of_the_textbook_table():
    # the worked example of Fleiss' kappa (10 subjects, 14 raters each, 5 categories): kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_kappa_is_none_without_two_votes_or_when_every_vote_agrees():
    assert fleiss_kappa([[1, 0], [0, 1]]) is None
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    assert fleiss_kappa([[2, 0], [0, 2]]) == 1.0


def test_the_summary_counts_labels_by_kappa_and_binary_verdicts_by_the_share_agreeing():
    labels, verdicts = JuryStats(), JuryStats()
    for votes in ([["yes", "yes", "no"]] * 2 + [["unsure", "unsure", "unsure"]]):
        labels.add(jury_of({"jurors": {"a": {"failed": 0}}, "stages": {"s": {"juryVotes": [
            dict(zip("abc", votes))]}}}))
    for votes in ([True, True], [True, False]):
        verdicts.add(jury_of({"jurors": {"a": {"failed": 1}}, "stages": {"s": {"juryVotes": [
            dict(zip("ab", votes))]}}}))
    label_summary = labels.summary()["stages"]["s"]
    expected = fleiss_kappa([[2, 1, 0], [2, 1, 0], [0, 0, 3]])
    assert label_summary == {"questions": 3, "agreeing": pytest.approx(1 / 3), "kappa": pytest.approx(expected)}
    assert verdicts.summary() == {"stages": {"s": {"questions": 2, "agreeing": 0.5, "kappa": None}},
                                  "failed": {"a": 2}}
    assert json.dumps(labels.summary())  # plain JSON


# --- calibrate: each juror beside the jury ----------------------------------------------------------


def test_each_juror_keeps_its_own_score_and_calibrate_sets_each_beside_the_jury(write_spec, tmp_path):
    from engine.analysis.calibration import calibrate

    items = [{"id": i, "output": f"o{i}", "label": "good" if i % 2 else "bad"} for i in range(10)]
    right = {f"o{i}": {"verdict": "yes" if i % 2 else "no"} for i in range(10)}

    def reply(call):  # a is always right, b always says yes, c right but on o0 and o1
        text = call.messages[-1]["content"].split("\n")[1]
        if call.model == "openai/b":
            return {"verdict": "yes"}
        if call.model == "openai/c" and text in ("o0", "o1"):
            return {"verdict": "unsure"}
        return right[text]

    scorer = load_scorer(str(spec(write_spec)), judge=FakeJudge(default=reply))
    report = calibrate(scorer, items, positive=["good"], cutoff=0.5, store=False, out=tmp_path / "out.jsonl")
    assert report.accuracy == 1.0  # a and c outvote b wherever c is right; on o1 a and b agree
    assert report.jurors["openai/a"] == {"items": 10, "accuracy": 1.0, "balancedAccuracy": 1.0, "rocAuc": 1.0,
                                         "cohenKappa": 1.0}
    assert report.jurors["openai/b"]["accuracy"] == 0.5 and report.jurors["openai/b"]["balancedAccuracy"] == 0.5
    assert report.jurors["openai/c"]["accuracy"] == 0.9  # o1 scored 0 (unsure), labelled good
    assert report.to_json_dict()["jurors"]["openai/a"]["items"] == 10


def test_a_jury_minimum_without_a_jury_is_refused(write_spec):
    with pytest.raises(ValueError, match="a jury minimum \\(2\\) needs a jury"):
        load_scorer(str(spec(write_spec, "")), model="openai/m", jury_min=2)

"""Named sub-scores (`scores:`) and label results (`label:`): compiled and checked at load, computed
per item, counted in the summary, gated on by thresholds and item cut-offs, and shown in the CI
reports; `response_quality` end to end through the CLI with the fake OpenAI server."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval and calibrate)
from engine import load_scorer, run_evals
from engine.cli.main import app
from engine.core.errors import SpecError
from engine.spec.compile import load_spec
from engine.testing import FakeJudge, WithProbs
from engine.testing.fake_openai import FakeOpenAIServer

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}

RATE_STAGE = """
stages:
  - id: rate
    prompt: rate.j2
    output_schema:
      type: object
      required: [accuracy, style]
      additionalProperties: false
      properties:
        accuracy: {type: integer, minimum: 1, maximum: 5}
        style: {type: integer, minimum: 1, maximum: 5}
"""


def spec_file(tmp_path: Path, body: str, name: str = "graded") -> Path:
    """A spec `name` with the 1–5 rating stage and `body` (its scores, score, label…)."""
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "rate.j2").write_text("Rate {{ run.output_text }}.\n", encoding="utf-8")
    (tmp_path / "prompts" / "pick.j2").write_text("Pick a label for {{ run.output_text }}.\n", encoding="utf-8")
    folder = tmp_path / "scorer_specs"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(f"format: 1\nid: {name}\nname: G\ndescription: d\nversion: 1\n"
                    "options:\n  scale: {type: number, default: 10}\n" + body, encoding="utf-8")
    return path


SUB_SCORES = RATE_STAGE + """
scores:
  accuracy: {formula: "(rate.accuracy - 1) / 4 * options.scale", cutoff: 5}
  style: {formula: "(rate.style - 1) / 4 * options.scale"}
  # a sub-score over the ones above it, lower is better
  gap: {formula: "(scores.accuracy - scores.style) | abs", direction: lower_is_better, round: 1}
score:
  formula: "scores.accuracy * 0.75 + scores.style * 0.25"
"""


def rated(accuracy: int, style: int) -> dict:
    return {"accuracy": accuracy, "style": style}


def test_sub_scores_read_the_answer_and_each_other_and_the_main_formula_reads_them(tmp_path):
    scorer = load_scorer(str(spec_file(tmp_path, SUB_SCORES)), judge=FakeJudge({"rate": rated(5, 2)}))
    result = scorer.run(output="x")
    assert result.scores == {"accuracy": 10.0, "style": 2.5, "gap": 7.5}
    assert result.score == pytest.approx(10 * 0.75 + 2.5 * 0.25)
    data = result.to_json_dict()
    assert data["scores"] == {"accuracy": 10.0, "style": 2.5, "gap": 7.5}
    assert "labelValue" not in data


def test_without_a_score_the_main_score_is_the_sub_scores_mean(tmp_path):
    body = SUB_SCORES.split("score:\n  formula")[0]
    scorer = load_scorer(str(spec_file(tmp_path, body)), judge=FakeJudge({"rate": rated(3, 1)}))
    result = scorer.run(output="x")
    assert result.scores == {"accuracy": 5.0, "style": 0.0, "gap": 5.0}
    assert result.score == pytest.approx(10 / 3)


def test_a_spec_of_sub_scores_alone_with_no_options_validates_and_scores_on_the_default_scale(tmp_path):
    path = spec_file(tmp_path, SUB_SCORES.split("score:\n  formula")[0].replace("* options.scale", "").replace(
        "cutoff: 5", "cutoff: 0.5"))
    path.write_text(path.read_text(encoding="utf-8").replace("options:\n  scale: {type: number, default: 10}\n", ""),
                    encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(path)], env=ENV)
    assert result.exit_code == 0, result.output
    scorer = load_scorer(str(path), judge=FakeJudge({"rate": rated(5, 3)}))
    assert scorer.scale == 1.0
    assert scorer.run(output="x").scores == {"accuracy": 1.0, "style": 0.5, "gap": 0.5}


def test_a_sub_score_outside_the_scale_fails_the_item_and_keeps_no_sub_scores(tmp_path):
    body = RATE_STAGE + 'scores:\n  over: {formula: "rate.accuracy * options.scale"}\n'
    result = load_scorer(str(spec_file(tmp_path, body)), judge=FakeJudge({"rate": rated(2, 2)})).run(output="x")
    assert result.status == "failed"
    assert result.error.kind == "formula"
    assert "scores.over.formula" in result.error.message and "outside [0, 10]" in result.error.message
    assert result.scores is None and result.score is None


@pytest.mark.parametrize(("body", "where", "code"), [
    (RATE_STAGE + 'scores:\n  a: {formula: "grade.accuracy"}\n', "scores.a.formula", "undefined-name"),
    (RATE_STAGE + 'scores:\n  a: {formula: "rate.acuracy"}\n', "scores.a.formula", "undefined-name"),
    (RATE_STAGE + 'scores:\n  a: {formula: "rate.style"}\nscore:\n  formula: "scores.b"\n', "score.formula",
     "undefined-name"),
    (RATE_STAGE + 'scores:\n  a: {formula: "scores.b"}\n  b: {formula: "rate.style"}\n', "scores.a.formula",
     "undefined-name"),
    (RATE_STAGE + 'scores:\n  a: {formula: "rate.style", cutoff: 11}\n', "scores.a.cutoff", "invalid-value"),
])
def test_validate_names_a_sub_score_reading_what_is_not_there(tmp_path, body, where, code):
    with pytest.raises(SpecError) as caught:
        load_spec(spec_file(tmp_path, body))
    assert [(p.key_path, p.code) for p in caught.value.problems] == [(where, code)]


PICK_STAGE = """
stages:
  - id: pick
    prompt: pick.j2
    probabilities: true
    output_schema:
      type: object
      required: [label]
      additionalProperties: false
      properties:
        label: {type: string, enum: [good, fair, bad, unsure]}
"""


@pytest.mark.parametrize(("label", "where", "message"), [
    ("{stage: pick, field: label, scores: {good: 1, great: 0.5}}", "label.scores.great", "'great' is not one of"),
    ("{stage: pick, field: label, values: [good, grand]}", "label.values", "'grand' is not in the enum"),
    ("{stage: pik, field: label}", "label.stage", "'pik' is no prompt stage"),
    ("{stage: pick, field: lable}", "label.field", "has no field 'lable'"),
])
def test_validate_names_a_label_outside_the_enum_or_a_missing_stage_or_field(tmp_path, label, where, message):
    with pytest.raises(SpecError) as caught:
        load_spec(spec_file(tmp_path, PICK_STAGE + f"label: {label}\n"))
    assert [p.key_path for p in caught.value.problems] == [where]
    assert message in caught.value.problems[0].message


def test_a_label_scores_by_its_place_in_the_enum_by_default(tmp_path):
    path = spec_file(tmp_path, PICK_STAGE + "label: {stage: pick, field: label}\n")
    scores = {value: load_scorer(str(path), judge=FakeJudge({"pick": {"label": value}})).run(output="x").score
              for value in ("good", "fair", "bad", "unsure")}
    assert scores == pytest.approx({"good": 10.0, "fair": 20 / 3, "bad": 10 / 3, "unsure": 0.0})


def test_a_label_not_in_the_map_makes_the_item_not_scorable_and_keeps_the_label(tmp_path):
    path = spec_file(tmp_path, PICK_STAGE + "label: {stage: pick, field: label, scores: {good: 1, fair: 0.6, bad: 0}}\n")
    probs = {"label": {"good": 0.1, "fair": 0.1, "bad": 0.2, "unsure": 0.6}}
    judge = FakeJudge({"pick": [{"label": "fair"}, WithProbs({"label": "unsure"}, probs)]})
    scorer = load_scorer(str(path), judge=judge)
    fair, unsure = scorer.run(output="x"), scorer.run(output="y")
    assert (fair.status, fair.score, fair.label_value) == ("scored", 6.0, "fair")
    assert (unsure.status, unsure.score, unsure.label_value) == ("not_scorable", None, "unsure")
    assert unsure.not_scorable.reason == "The label unsure has no score (label.scores names none)."
    assert unsure.to_json_dict()["labelProbs"] == probs["label"]


def test_a_label_outside_the_labels_the_options_allow_fails_the_item(tmp_path):
    body = PICK_STAGE.replace("enum: [good, fair, bad, unsure]", "enum: [good, fair, bad, unsure]") + \
        "label: {stage: pick, field: label, values: [good, fair]}\n"
    result = load_scorer(str(spec_file(tmp_path, body)), judge=FakeJudge({"pick": {"label": "bad"}})).run(output="x")
    assert (result.status, result.error.kind) == ("failed", "judge")
    assert "gave 'bad', not one of the labels (good, fair)" in result.error.message


def test_the_summary_counts_labels_and_gives_each_sub_score_its_statistics(tmp_path):
    labelled = spec_file(tmp_path, PICK_STAGE + "label: {stage: pick, field: label}\n", "picked")
    graded = spec_file(tmp_path, SUB_SCORES)
    judge = FakeJudge({"pick": [{"label": v} for v in ("good", "bad", "good")],
                       "rate": [rated(5, 1), rated(3, 3), rated(1, 5)]})
    scorers = [load_scorer(str(labelled), judge=judge), load_scorer(str(graded), judge=judge)]
    summary = run_evals([{"id": i, "output": str(i)} for i in range(3)], scorers, store=False, concurrency=1,
                        thresholds={"graded.gap": 2, "graded.style": 4})
    assert summary.scorers["picked"].labels == {"bad": 1, "good": 2}
    subs = summary.scorers["graded"].scores
    assert {name: (s.mean, s.min, s.max) for name, s in subs.items()} == {
        "accuracy": (5.0, 0.0, 10.0), "style": (5.0, 0.0, 10.0), "gap": (20 / 3, 0.0, 10.0)}
    # the gap is lower-is-better: a limit of 2 is a maximum, and its mean misses it
    assert (str(subs["gap"].threshold), subs["gap"].threshold_met) == ("≤ 2", False)
    assert (str(subs["style"].threshold), subs["style"].threshold_met) == ("≥ 4", True)
    assert summary.verdict == "below_threshold"
    data = summary.to_json_dict()["scorers"]
    assert data["graded"]["scores"]["gap"]["direction"] == "lower_is_better"
    assert data["picked"]["labels"] == {"bad": 1, "good": 2}


def test_an_item_cut_off_on_a_sub_score_follows_its_direction(tmp_path):
    graded = spec_file(tmp_path, SUB_SCORES)
    judge = FakeJudge({"rate": [rated(5, 5), rated(5, 1)]})  # gaps 0 and 10
    summary = run_evals([{"id": i, "output": str(i)} for i in range(2)], [load_scorer(str(graded), judge=judge)],
                        store=False, concurrency=1, item_cutoffs={"graded.gap": 5})
    assert summary.verdict == "below_threshold"
    with pytest.raises(ValueError, match="--item-cutoff for 'graded.gpa'"):
        run_evals([{"id": 1, "output": "1"}], [load_scorer(str(graded), judge=judge)], store=False,
                  item_cutoffs={"graded.gpa": 5})


def quality_reply(request: dict) -> dict:
    """response_quality's ratings: the item's output text says them (``r 5 4 2 3``)."""
    text = request["messages"][-1]["content"]
    ratings = text.split("ANSWER:\n<<<\nr ", 1)[1].split("\n", 1)[0].split()
    names = ("correctness", "completeness", "clarity", "concision")
    return {**{name: int(v) for name, v in zip(names, ratings)}, "reason": "As rated."}


def test_response_quality_end_to_end_sub_scores_summary_and_a_gate_on_one_also_on_resume(tmp_path):
    data = tmp_path / "items.jsonl"
    outputs = ["r 5 4 2 3", "r 4 4 1 5", "r 3 5 3 4"]
    data.write_text("".join(json.dumps({"id": f"i{n}", "input": "Q?", "output": o}) + "\n"
                            for n, o in enumerate(outputs)), encoding="utf-8")
    junit = tmp_path / "junit.xml"
    with FakeOpenAIServer(quality_reply) as fake:
        args = ["eval", "response_quality", "--data", str(data), "--model", "openai/test-model", "--base-url",
                fake.base_url, "--no-cache", "--json", "--out", str(tmp_path / "out.jsonl"), "--quiet"]
        passed = CliRunner().invoke(app, [*args, "--threshold", "response_quality.correctness=0.75"], env=ENV)
        # the results of the first attempt, their sub-scores counted again: no judge call
        gated = CliRunner().invoke(app, [*args, "--resume", "--threshold", "response_quality.clarity=0.5",
                                         "--junit", str(junit), "--report", str(tmp_path / "report.html")], env=ENV)
        asked = len(fake.requests)
    assert passed.exit_code == 0, passed.output
    assert gated.exit_code == 1, gated.output
    assert asked == len(outputs)  # one judge call an item
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["scores"] for line in lines] == [
        {"correctness": 1.0, "completeness": 0.75, "clarity": 0.25, "concision": 0.5},
        {"correctness": 0.75, "completeness": 0.75, "clarity": 0.0, "concision": 1.0},
        {"correctness": 0.5, "completeness": 1.0, "clarity": 0.5, "concision": 0.75}]
    assert [line["score"] for line in lines] == [0.63, 0.63, 0.69]  # 2.5 / 4 = 0.625, half away from zero
    summary = json.loads(gated.stdout)["scorers"]["response_quality"]
    assert summary["scores"]["clarity"]["mean"] == pytest.approx(0.25)
    assert summary["scores"]["clarity"]["thresholdMet"] is False
    assert summary["scores"]["correctness"]["median"] == 0.75
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<dt>clarity</dt><dd class="sub-score">mean 0.25 · median 0.25 · 0–0.5 · ≥ 0.5 <span class="bad">missed' in page
    cases = [case.get("classname") for case in ET.parse(junit).getroot().iter("testcase")]
    names = ("clarity", "completeness", "concision", "correctness")
    assert {c: cases.count(c) for c in set(cases)} == {"checks": 1, "response_quality": 3,
                                                       **{f"response_quality.{n}": 3 for n in names}}


def test_item_cutoff_spec_takes_a_sub_scores_documented_cut_off():
    from engine.cli.ci_files import spec_cutoff_pairs

    scorer = load_scorer("response_quality", judge=FakeJudge({}))
    assert spec_cutoff_pairs(["response_quality.correctness=spec"], [scorer]) == ["response_quality.correctness=0.75"]
    with pytest.raises(ValueError, match="'clarity' of response_quality documents no cut-off"):
        spec_cutoff_pairs(["response_quality.clarity=spec"], [scorer])


def test_render_shows_the_sub_scores_and_the_label():
    quality = CliRunner().invoke(app, ["render", "response_quality", "--output", "Fine."], env=ENV)
    assert quality.exit_code == 0, quality.output
    shown = quality.stdout.split("===== scores =====\n", 1)[1]
    assert shown.startswith("correctness = (rate.correctness - 1) / 4 * options.scale (higher is better, cut-off "
                            "0.75) — Whether what the answer says is true and answers what was asked.\n")
    assert shown.count(" = ") == 4
    labels = CliRunner().invoke(app, ["render", "classify", "--output", "Fine.", "--option",
                                      'classify.labels=["on topic","off topic"]'], env=ENV)
    assert "===== scores =====\nlabel = classify.label (one of on topic, off topic)\n" in labels.stdout

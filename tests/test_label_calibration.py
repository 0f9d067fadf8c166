"""`calibrate` on label results against gold labels of more than two classes (confusion matrix,
per-class precision and recall, accuracy, macro F1, Cohen's kappa), `classify` through the CLI, and
`calibrate --score NAME` on a sub-score."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401  (registers eval and calibrate)
from engine import calibrate, load_scorer
from engine.analysis.label_calibration import label_figures
from engine.cli.main import app
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
CLASSES = ["relevant", "partial", "irrelevant"]


def test_label_figures_by_hand_on_an_uneven_table():
    gold = ["a", "a", "a", "b", "b", "c"]
    judged = ["a", "a", "b", "b", "c", "c"]
    figures = label_figures(gold, judged, ["a", "b", "c"])
    assert figures.confusion == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    # p_o = 4/6; p_e = (3·2 + 2·2 + 1·2) / 36 = 1/3; kappa = (2/3 − 1/3) / (1 − 1/3)
    assert figures.cohen_kappa == pytest.approx(0.5)
    assert figures.accuracy == pytest.approx(4 / 6)
    assert {k: (v["precision"], v["recall"]) for k, v in figures.per_class.items()} == pytest.approx(
        {"a": (1.0, 2 / 3), "b": (0.5, 0.5), "c": (0.5, 1.0)})
    assert figures.macro_f1 == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)


def test_a_class_nobody_gave_has_no_precision_or_recall_and_stays_out_of_macro_f1():
    figures = label_figures(["a", "b"], ["a", "b"], ["a", "b", "c"])
    assert figures.per_class["c"] == {"precision": None, "recall": None, "f1": 0.0, "support": 0}
    assert (figures.macro_f1, figures.cohen_kappa) == (1.0, 1.0)
    one_class = label_figures(["a", "a"], ["a", "a"])
    assert one_class.cohen_kappa is None and one_class.accuracy == 1.0


def gold_items() -> list[dict]:
    """30 items, 10 of each class; the judge is right on 8 of each 10, its 2 errors one to each
    other class (so its labels too are 10 of each)."""
    items = []
    for k, gold in enumerate(CLASSES):
        for i in range(10):
            said = {8: CLASSES[(k + 1) % 3], 9: CLASSES[(k + 2) % 3]}.get(i, gold)
            items.append({"id": f"{gold}-{i}", "input": "Q?", "output": f"{gold} {i}", "label": gold, "said": said})
    return items


def test_calibrate_classify_on_three_gold_classes_gives_the_confusion_and_kappa(tmp_path):
    items = gold_items()
    data = tmp_path / "gold.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    said = {item["output"]: item["said"] for item in items}

    def reply(request: dict) -> dict:
        output = request["messages"][-1]["content"].split("ANSWER:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
        return {"label": said[output], "reason": "As said."}

    with FakeOpenAIServer(reply) as fake:
        result = CliRunner().invoke(app, ["calibrate", "classify", "--data", str(data), "--model", "openai/test-model",
                                          "--base-url", fake.base_url, "--no-cache", "--json", "--quiet", "--option",
                                          'classify.labels=["relevant","partial","irrelevant"]'], env=ENV)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    figures = report["labelFigures"]
    assert (report["kind"], report["used"]) == ("labels", 30)
    assert figures["classes"] == CLASSES
    assert figures["confusion"] == [[8, 1, 1], [1, 8, 1], [1, 1, 8]]
    assert figures["cohenKappa"] == pytest.approx(0.70)
    assert (figures["accuracy"], figures["macroF1"]) == pytest.approx((0.8, 0.8))
    assert all(v["precision"] == pytest.approx(0.8) and v["recall"] == pytest.approx(0.8)
               for v in figures["perClass"].values())
    assert "gold partial → judge relevant 1 · partial 8 · irrelevant 1" in " ".join(result.stderr.split())


def test_calibrate_score_name_calibrates_a_sub_score(tmp_path):
    items = [{"id": i, "output": str(i), "label": "good" if i < 2 else "bad"} for i in range(4)]
    ratings = [5, 4, 2, 1]  # correctness: the two good items rated high
    answers = [{"correctness": r, "completeness": 5 - r + 1, "clarity": 3, "concision": 3, "reason": "r"}
               for r in ratings]
    scorer = load_scorer("response_quality", judge=FakeJudge({"rate": answers}))
    report = calibrate(scorer, items, positive=["good"], score="correctness", store=False, concurrency=1)
    assert (report.cutoff, report.balanced_accuracy, report.roc_auc) == (0.75, 1.0, 1.0)
    with pytest.raises(ValueError, match="has no sub-score 'correct'"):
        calibrate(scorer, items, positive=["good"], score="correct", store=False)


def test_compare_score_name_compares_one_sub_score_by_its_direction():
    from engine import compare

    items = [{"id": i, "output": str(i)} for i in range(3)]
    base = [{"correctness": 3, "completeness": 3, "clarity": c, "concision": 3, "reason": "r"} for c in (2, 2, 2)]
    better = [{**answer, "clarity": 5} for answer in base]
    versions = [load_scorer("response_quality", label="a", judge=FakeJudge({"rate": base})),
                load_scorer("response_quality", label="b", judge=FakeJudge({"rate": better}))]
    comparison = compare(versions, items, score="clarity", store=False, concurrency=1)
    assert [v.mean for v in comparison.versions.values()] == pytest.approx([0.25, 1.0])
    assert comparison.versions["b"].cutoff is None

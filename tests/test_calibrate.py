"""`engine.calibrate` (engine/analysis/calibration.py) and `scorespec calibrate`: agreement statistics checked against values
worked out by hand, and the command end to end with a scripted judge."""

from __future__ import annotations

import json
import math
import re

import pytest
from typer.testing import CliRunner

import engine.cli.eval  # noqa: F401 - registers the batch commands
from engine import load_scorer
from engine.analysis.calibration import agreement, calibrate
from engine.analysis.labelled import LabelError
from engine.cli.main import app
from engine.core.errors import ScorerRunError
from engine.run.store import Store
from engine.testing import FakeJudge

# --- the statistics, by hand --------------------------------------------------------------------

SCORES = [0.9, 0.8, 0.3, 0.1, 0.5, 0.6]
LABELS = ["good", "good", "bad", "bad", "good", "bad"]


def test_binary_figures_by_hand():
    # at 0.5: predicted 1 1 0 0 1 1 against 1 1 0 0 1 0 -> tp 3, fp 1, tn 2, fn 0
    got = agreement(SCORES, LABELS, positive=["good"])
    assert got["threshold"] == 0.5
    assert got["confusion"] == {"tp": 3, "fp": 1, "tn": 2, "fn": 0}
    assert got["accuracy"] == pytest.approx(5 / 6)
    assert got["balanced_accuracy"] == pytest.approx((3 / 3 + 2 / 3) / 2)
    # 8 of the 9 (positive, negative) pairs are ordered right: only 0.5 < 0.6 is not
    assert got["roc_auc"] == pytest.approx(8 / 9)
    # 0.8 and 0.5 both give 5/6; ties go to the higher threshold
    assert got["best_threshold"] == 0.8
    assert got["best_balanced_accuracy"] == pytest.approx(5 / 6)
    assert got["best_accuracy"] == pytest.approx(5 / 6)  # 1 1 0 0 0 0: one positive missed
    assert (got["positives"], got["negatives"], got["notes"]) == (3, 3, [])


def test_binary_given_threshold_and_scale():
    got = agreement([9, 8, 3, 1, 5, 6], LABELS, positive=["good"], threshold=7, scale=10)
    # predicted 1 1 0 0 0 0 -> tp 2 fn 1 tn 3
    assert got["confusion"] == {"tp": 2, "fp": 0, "tn": 3, "fn": 1}
    assert got["balanced_accuracy"] == pytest.approx((2 / 3 + 1) / 2)
    assert got["best_threshold"] == 8


def test_ties_between_classes_count_half():
    got = agreement([0.5, 0.5, 1.0], ["y", "n", "y"], positive=["y"])
    # pairs: (0.5 vs 0.5) = 1/2, (1.0 vs 0.5) = 1 -> 1.5 / 2
    assert got["roc_auc"] == pytest.approx(0.75)
    assert got["best_threshold"] == 1.0  # 1.0: tp 1 fn 1 tn 1 -> 0.75; 0.5: tp 2 fp 1 -> 0.75 (tie, higher)
    assert got["best_balanced_accuracy"] == pytest.approx(0.75)


def test_single_class_leaves_class_figures_undefined():
    got = agreement([1.0, 0.2], ["y", "y"], positive=["y"])
    assert got["accuracy"] == pytest.approx(0.5)
    assert got["confusion"] == {"tp": 1, "fp": 0, "tn": 0, "fn": 1}
    assert got["balanced_accuracy"] is None and got["roc_auc"] is None and got["best_threshold"] is None
    assert got["notes"] == ["only positive items: balanced accuracy, best threshold and ROC AUC are undefined"]


def test_no_items():
    got = agreement([], [], positive=["y"])
    assert got["accuracy"] is None and got["notes"] == ["no scored item: no statistic"]


def test_graded_correlations_by_hand_with_ties():
    # ranks of the scores: 1, 2.5, 2.5, 4; the Spearman and Pearson values are both 3 / sqrt(10)
    got = agreement([1, 2, 2, 3], [1, 2, 3, 4])
    assert got["spearman"] == pytest.approx(3 / math.sqrt(10))
    assert got["pearson"] == pytest.approx(3 / math.sqrt(10))
    assert agreement([0.1, 0.9, 0.5], ["1", "5", "3"])["spearman"] == pytest.approx(1.0)


def test_graded_undefined_cases_are_none_not_nan():
    got = agreement([0.5, 0.5, 0.5], [1, 2, 3])
    assert got["spearman"] is None and got["pearson"] is None
    assert got["notes"] == ["constant scores: correlations are undefined"]
    assert agreement([0.5], [1])["notes"] == ["fewer than two scored items: no correlation"]
    with pytest.raises(LabelError, match="label 'faithful' is not a number"):
        agreement([0.5, 0.2], ["faithful", "no"])


# --- over a scorer ------------------------------------------------------------------------------


def _claims(call):
    text = call.messages[-1]["content"]
    return {"claims": re.findall(r"\b(?:ok|bad)-\d+\b", text.split("TEXT")[-1])}


def _claim(prompt: str) -> str:
    """The one claim a faithfulness verify prompt asks about."""
    return re.search(r"CLAIM:\n<<<\n(.*?)\n>>>", prompt).group(1)


def _verdicts(call):
    claim = _claim(call.messages[-1]["content"])
    return {"verdict": "yes" if claim.startswith("ok") else "no", "reason": f"checked {claim}"}


DATA = [
    {"id": "a", "output": "ok-1 ok-2", "context": ["c"], "label": "faithful"},
    {"id": "b", "output": "ok-3 bad-4", "context": ["c"], "label": "faithful"},  # 0.5
    {"id": "c", "output": "bad-5", "context": ["c"], "label": "hallucinated"},  # 0
    {"id": "d", "output": "ok-6", "context": ["c"], "label": "hallucinated"},  # 1: a disagreement
    {"id": "e", "output": "nothing here", "context": ["c"], "label": "faithful"},  # not scorable
    {"id": "f", "output": "ok-7", "context": ["c"], "label": "generic"},  # left out with negative=
    {"id": "g", "output": "ok-8", "context": ["c"]},  # no label: left out
]


def _judge():
    return FakeJudge({"preprocess": _claims, "analyze": _verdicts})


def test_calibrate_over_a_scripted_judge(tmp_path):
    report = calibrate(load_scorer("faithfulness", judge=_judge()), DATA, positive=["faithful"],
                       negative=["hallucinated"], store=tmp_path / "s.sqlite")
    assert (report.labelled, report.left_out, report.scored, report.not_scorable, report.failed, report.used) \
        == (5, 2, 4, 1, 0, 4)
    assert (report.unlabelled, report.other_labels) == (1, {"generic": 1})  # g has no label; f's is neither
    # scores a 1, b 0.5, c 0, d 1 against labels 1 1 0 0; at 0.5: tp 2, fp 1, tn 1
    assert report.confusion == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    assert report.balanced_accuracy == pytest.approx(0.75)
    assert report.roc_auc == pytest.approx(0.625)  # pairs: (1>0, 1=1 half, 0.5>0, 0.5<1) -> 2.5 / 4
    assert [d.id for d in report.disagreements] == ["d", "b"]
    assert report.disagreements[0].gap == 1.0 and "ok-6" in report.disagreements[0].reason
    assert report.notes == ["1 not scorable item(s) are not in the figures"]
    assert report.model == "fake/judge" and report.spec_hash
    with Store(tmp_path / "s.sqlite") as db:
        (stored,) = db.calibrations("faithfulness")
    assert stored["run_id"] == report.run_id and stored["spec_hash"] == report.spec_hash
    assert stored["figures"]["balancedAccuracy"]["value"] == pytest.approx(0.75)
    assert stored["figures"]["confusion"] == report.confusion


def test_not_scorable_score_and_failed_items(tmp_path):
    def flaky(call):
        if "bad-5" in call.messages[-1]["content"]:
            raise ScorerRunError("transport", "server down")
        return _claims(call)

    report = calibrate(load_scorer("faithfulness", judge=FakeJudge({"preprocess": flaky, "analyze": _verdicts})),
                       DATA, positive=["faithful"], not_scorable_score=1.0, store=False)
    # every labelled item is used (generic counts as negative); c failed and is not in the figures
    assert (report.labelled, report.left_out, report.scored, report.not_scorable, report.failed, report.used) \
        == (6, 1, 4, 1, 1, 5)
    assert (report.unlabelled, report.other_labels) == (1, {})  # without negative=, 'generic' is negative
    assert report.failures == {"transport": 1}
    assert report.positives == 3 and report.negatives == 2
    assert "1 failed item(s) are not in the figures (resume the run to retry them)" in report.notes


def test_calibrate_resume_uses_earlier_results(tmp_path):
    out = tmp_path / "cal.jsonl"
    judge = _judge()
    first = calibrate(load_scorer("faithfulness", judge=judge), DATA[:2], positive=["faithful"], out=out,
                      store=False)
    calls = len(judge.calls)
    second = calibrate(load_scorer("faithfulness", judge=judge), DATA[:4], positive=["faithful"], out=out,
                       resume=True, store=False)
    assert first.run_id == second.run_id
    assert len(judge.calls) == calls + 4  # c and d only: one claim each, so one extract and one verify call
    assert second.scored == 4 and second.balanced_accuracy == pytest.approx(0.75)


def test_no_usable_label():
    with pytest.raises(LabelError, match="no item has a usable label in 'verdict'"):
        calibrate(load_scorer("faithfulness", judge=_judge()), DATA, label_field="verdict", store=False)


# --- the command --------------------------------------------------------------------------------


def test_calibrate_command_end_to_end(fake_server, tmp_path):
    def reply(request):
        content = request["messages"][-1]["content"]
        if "CLAIM:\n<<<\n" in content:  # one claim per verify call
            return {"verdict": "yes" if _claim(content).startswith("ok") else "no", "reason": "r"}
        body = content.split("TEXT")[-1]
        return {"claims": re.findall(r"\b(?:ok|bad)-\d+\b", body)}

    fake_server.reply = reply
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in DATA))
    result = CliRunner().invoke(app, ["calibrate", "faithfulness", "--data", str(data), "--positive", "faithful",
                                      "--negative", "hallucinated", "--model", "openai/x", "--base-url",
                                      fake_server.base_url, "--store", str(tmp_path / "s.sqlite"), "--json",
                                      "--quiet"],
                                env={"OPENAI_API_KEY": "test", "COLUMNS": "200", "SCORESPEC_MODEL": None})
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["balancedAccuracy"]["value"] == pytest.approx(0.75)
    assert figures["rocAuc"] == pytest.approx(0.625)
    assert figures["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    assert figures["model"] == "openai/x"
    assert "balanced accuracy (score ≥ 0.5)" in result.stderr
    assert ("5 labelled · 4 scored · 1 not scorable · 0 failed · 2 left out: 1 with no label, 1 with a label "
            "neither positive nor negative ('generic' 1)") in result.stderr
    assert (figures["leftOut"], figures["unlabelled"], figures["otherLabels"]) == (2, 1, {"generic": 1})
    assert "largest disagreements:" in result.stderr and "d: label 'hallucinated', score 1" in result.stderr


def test_calibrations_command_lists_stored_figures(tmp_path):
    store = tmp_path / "s.sqlite"
    report = calibrate(load_scorer("faithfulness", judge=_judge()), DATA, positive=["faithful"],
                       negative=["hallucinated"], store=store)
    env = {"COLUMNS": "250"}
    listed = CliRunner().invoke(app, ["calibrations", "faithfulness", "--store", str(store), "--json"], env=env)
    assert listed.exit_code == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["run_id"] == report.run_id and row["figures"]["rocAuc"] == pytest.approx(0.625)
    table = CliRunner().invoke(app, ["calibrations", "--store", str(store)], env=env)
    assert report.run_id in table.stdout and "0.75" in table.stdout and "fake/judge" in table.stdout
    empty = CliRunner().invoke(app, ["calibrations", "other", "--store", str(store)], env=env)
    assert empty.exit_code == 0 and "no calibration stored for other" in empty.stderr


def test_calibrate_is_exported_from_engine():
    import engine
    import engine.api

    assert engine.calibrate is engine.api.calibrate  # the facade: the executor resolved, then `calibrate`
    assert engine.Calibration.__name__ == "Calibration"


def test_calibrate_takes_one_positive_label_as_a_string(tmp_path):
    report = calibrate(load_scorer("faithfulness", judge=_judge()), DATA, positive="faithful",
                       negative="hallucinated", store=False)
    assert report.positive_labels == ["faithful"] and report.kind == "binary"
    assert (report.labelled, report.other_labels) == (5, {"generic": 1})


def test_a_mistyped_positive_label_exits_2_before_any_judge_call_naming_the_labels_seen(fake_server, tmp_path):
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in DATA))
    env = {"OPENAI_API_KEY": "test", "COLUMNS": "300", "SCORESPEC_MODEL": None}
    cases = ((["--positive", "faithfull"], "--positive", "faithfull", "faithful"),
             (["--positive", "faithful", "--negative", "halucinated"], "--negative", "halucinated", "hallucinated"))
    for flags, flag, typo, meant in cases:
        result = CliRunner().invoke(app, ["calibrate", "faithfulness", "--data", str(data), *flags, "--model",
                                          "openai/x", "--base-url", fake_server.base_url, "--store",
                                          str(tmp_path / "s.sqlite"), "--quiet"], env=env)
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert f"no labelled item has the {flag} label '{typo}' in 'label'" in message
        assert "'faithful' (3), 'hallucinated' (2), 'generic' (1)" in message
        assert f"did you mean '{meant}'?" in message
    assert fake_server.requests == []

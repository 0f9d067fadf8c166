"""Judge statistics with intervals (`engine.analysis.judge_stats`), calibrate's new figures and the
pass rate corrected for the judge's errors (`engine.analysis.corrected`, ``eval --calibration``):
figures checked against SciPy and scikit-learn where they compute the same thing, by hand where
they do not, and end to end through the command line against a scripted judge."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

import engine.cli.compare  # noqa: F401 - registers compare
import engine.cli.eval  # noqa: F401 - registers the batch commands
from engine import load_scorer
from engine.analysis.calibration import calibrate
from engine.analysis.corrected import CalibrationError, CalibrationRecord, corrected_rates, load_calibration
from engine.analysis.judge_stats import (
    balanced_accuracy_estimate,
    cohen_kappa,
    cohen_kappa_estimate,
    corrected_pass_rate,
    length_bias,
    spearman_estimate,
    wilson,
)
from engine.cli.main import app
from engine.run.store import Store
from engine.testing import FakeJudge

# --- the statistics ------------------------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(45, 50), (40, 50), (0, 12), (12, 12), (3, 7), (120, 200)])
def test_wilson_interval_equals_scipys(k, n):
    from scipy.stats import binomtest

    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    got = wilson(k, n)
    assert got.value == pytest.approx(k / n)
    assert got.ci == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_wilson_interval_at_another_level_is_narrower():
    assert wilson(45, 50, 0.8).ci[0] > wilson(45, 50, 0.95).ci[0]
    assert wilson(0, 0).value is None and wilson(0, 0).ci is None


# 100 labelled items: the judge says yes on 45 of 50 positives and on 10 of 50 negatives
TRUTH = [1] * 50 + [0] * 50
JUDGED = [1] * 45 + [0] * 5 + [1] * 10 + [0] * 40


def test_cohen_kappa_equals_scikit_learns():
    from sklearn.metrics import cohen_kappa_score

    assert cohen_kappa(TRUTH, JUDGED) == pytest.approx(cohen_kappa_score(TRUTH, JUDGED)) == pytest.approx(0.70)
    mixed = [1, 0, 1, 1, 0, 0, 1, 0]
    assert cohen_kappa(mixed, [1, 1, 0, 1, 0, 1, 1, 0]) == pytest.approx(
        cohen_kappa_score(mixed, [1, 1, 0, 1, 0, 1, 1, 0]))


def test_kappa_and_balanced_accuracy_intervals_hold_their_value_and_repeat():
    kappa = cohen_kappa_estimate(TRUTH, JUDGED)
    assert kappa.ci[0] < 0.70 < kappa.ci[1] and 0.4 < kappa.ci[0] and kappa.ci[1] < 0.95
    assert cohen_kappa_estimate(TRUTH, JUDGED) == kappa  # seeded: the same data, the same interval
    balanced = balanced_accuracy_estimate(TRUTH, JUDGED)
    assert balanced.value == pytest.approx(0.85)
    assert balanced.ci[0] < 0.85 < balanced.ci[1]


def test_undefined_figures_are_none_never_nan():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # both raters on one class: p_e = 1
    assert cohen_kappa_estimate([1, 1, 1], [1, 1, 1]).value is None
    assert balanced_accuracy_estimate([1, 1, 1], [1, 0, 1]).value is None  # no negative
    assert spearman_estimate([0.1, 0.1, 0.1], [1, 2, 3]).value is None


def test_spearman_estimate_equals_scipys_with_an_interval():
    from scipy.stats import spearmanr

    scores = [0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6]
    grades = [1, 2, 2, 4, 3, 5, 1, 4]
    got = spearman_estimate(scores, grades)
    assert got.value == pytest.approx(spearmanr(scores, grades).statistic)
    assert got.ci[0] <= got.value <= got.ci[1]


def test_rogan_gladen_corrected_pass_rate():
    # (0.60 + 0.80 - 1) / (0.90 + 0.80 - 1) = 0.5714
    rate = corrected_pass_rate(120, 200, 45, 50, 40, 50)
    assert rate.estimate.value == pytest.approx(0.4 / 0.7)
    low, high = rate.estimate.ci
    assert low < rate.estimate.value < high
    # it carries the calibration's uncertainty too: wider than the observed rate's own interval
    observed_low, observed_high = wilson(120, 200).ci
    assert high - low > observed_high - observed_low
    assert rate.observed.value == pytest.approx(0.6)


def test_corrected_rate_is_not_given_for_a_judge_no_better_than_chance():
    rate = corrected_pass_rate(50, 100, 25, 50, 25, 50)  # TPR 0.5 + TNR 0.5 = 1
    assert rate.estimate.value is None and rate.estimate.ci is None
    assert "no better than chance" in rate.reason


@pytest.mark.parametrize("passed,expected", [(0, 0.0), (200, 1.0)])
def test_corrected_rate_is_clipped_to_the_unit_interval(passed, expected):
    rate = corrected_pass_rate(passed, 200, 45, 50, 40, 50)  # raw estimates -0.29 and 1.29
    assert rate.estimate.value == expected
    assert 0.0 <= rate.estimate.ci[0] <= rate.estimate.ci[1] <= 1.0


def test_corrected_rate_without_a_class_in_the_calibration_says_why():
    assert corrected_pass_rate(10, 20, 5, 5, 0, 0).reason == "the calibration has no negative item"


def test_length_bias_within_each_label_tells_length_apart_from_quality():
    # long answers are the good ones: across labels the score follows length, within a label it does not
    scores = [0.9, 0.8, 0.9, 0.8, 0.1, 0.2, 0.1, 0.2]
    lengths = [100, 110, 120, 130, 10, 11, 12, 13]
    labels = ["good"] * 4 + ["bad"] * 4
    got = length_bias(scores, lengths, labels)
    assert got["spearman"] > 0.7 and got["pValue"] < 0.05 and got["n"] == 8
    assert abs(got["byLabel"]["good"]["spearman"]) < 0.5 and abs(got["byLabel"]["bad"]["spearman"]) < 0.5


# --- calibrate and eval end to end ----------------------------------------------------------------

YES_NO_SPEC = """
format: 1
id: grounded
name: Grounded
description: Whether the output is grounded.
version: 1
fields:
  output: {required: true}
cutoff: 0.5
stages:
  - id: judge
    prompt: grounded/judge.j2
    output_schema:
      type: object
      required: [verdict, reason]
      properties:
        verdict: {type: string, enum: ["yes", "no"]}
        reason: {type: string}
score:
  formula: "1 if judge.verdict == 'yes' else 0"
reason:
  - template: "{{ judge.reason }}"
"""
YES_NO_PROMPT = """
Is the OUTPUT grounded? "yes" or "no", then a short reason.

OUTPUT:
<<<
{{ run.output_text }}
>>>
"""


def _labelled_rows() -> list[dict]:
    """100 items: the judge answers yes on items whose output says 'yes' (45 of the 50 positives,
    10 of the 50 negatives)."""
    rows = []
    for i in range(100):
        positive = i < 50
        says_yes = i < 45 or 50 <= i < 60
        rows.append({"id": f"c{i}", "output": ("yes " if says_yes else "no ") + "x" * (i % 7),
                     "label": "good" if positive else "bad"})
    return rows


def _reply(request):
    text = request["messages"][-1]["content"].split("OUTPUT:")[-1]
    return {"verdict": "yes" if "yes " in text else "no", "reason": "scripted"}


def _cli(fake_server, args, tmp_path):
    return CliRunner().invoke(app, [*args, "--model", "openai/x", "--base-url", fake_server.base_url, "--store",
                                    str(tmp_path / "s.sqlite"), "--quiet"],
                              env={"OPENAI_API_KEY": "test", "COLUMNS": "200", "SCORESPEC_MODEL": None})


def test_calibrate_then_eval_with_the_corrected_pass_rate(fake_server, tmp_path, write_spec, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_spec("grounded", YES_NO_SPEC, {"grounded/judge.j2": YES_NO_PROMPT})
    fake_server.reply = _reply
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in _labelled_rows()))
    result = _cli(fake_server, ["calibrate", "grounded", "--data", str(labelled), "--positive", "good", "--json"],
                  tmp_path)
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["truePositiveRate"]["value"] == pytest.approx(0.90)
    assert figures["truePositiveRate"]["ci"] == pytest.approx([0.786, 0.957], abs=5e-4)
    assert figures["trueNegativeRate"]["value"] == pytest.approx(0.80)
    assert figures["trueNegativeRate"]["ci"] == pytest.approx([0.670, 0.888], abs=5e-4)
    kappa = figures["cohenKappa"]
    assert kappa["value"] == pytest.approx(0.70) and kappa["ci"][0] < 0.70 < kappa["ci"][1]
    assert figures["baseRate"] == pytest.approx(0.5)
    assert figures["balancedAccuracy"]["value"] == pytest.approx(0.85)
    assert figures["lengthBias"]["spearman"] is not None and set(figures["lengthBias"]["byLabel"]) == {"good", "bad"}
    assert "true-positive rate [95 % Wilson]" in result.stderr and "0.9 [0.786, 0.957]" in result.stderr
    cal_file = tmp_path / "cal.json"
    cal_file.write_text(result.stdout)

    # 200 unlabelled items, 120 of which the judge passes
    production = tmp_path / "production.jsonl"
    production.write_text("".join(json.dumps({"id": f"p{i}", "output": ("yes " if i < 120 else "no ") + str(i)})
                                  + "\n" for i in range(200)))
    result = _cli(fake_server, ["eval", "grounded", "--data", str(production), "--calibration", str(cal_file),
                                "--json"], tmp_path)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)["scorers"]["grounded"]
    corrected = summary["correctedPassRate"]
    assert corrected["value"] == pytest.approx(0.5714, abs=1e-4)
    low, high = corrected["ci"]
    assert low < corrected["value"] < high
    observed_low, observed_high = corrected["observed"]["ci"]
    assert corrected["observed"]["value"] == pytest.approx(0.6)
    assert high - low > observed_high - observed_low
    assert (corrected["passed"], corrected["n"], corrected["cutoff"]) == (120, 200, 0.5)
    assert "corrected pass rate 0.5714" in result.stderr

    # the stored calibration, by scorer id, gives the same; a gate above it fails the run, and the CI
    # files and the HTML report show the corrected rate
    junit, markdown, page = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "r.html"
    result = _cli(fake_server, ["eval", "grounded", "--data", str(production), "--calibration", "grounded",
                                "--threshold-corrected", "grounded=0.6", "--json", "--junit", str(junit),
                                "--summary-md", str(markdown), "--report", str(page)], tmp_path)
    assert result.exit_code == 1, result.stderr
    again = json.loads(result.stdout)["scorers"]["grounded"]["correctedPassRate"]
    assert again["value"] == pytest.approx(corrected["value"]) and again["gate"] == {"min": 0.6, "met": False}
    text = f"0.5714 (95 % CI {low:.4f}..{high:.4f}; observed 0.6 of 200 at score ≥ 0.5)"
    assert f'name="correctedPassRate" value="{text}"' in junit.read_text()
    assert "corrected pass rate grounded" in junit.read_text() and "<failure" in junit.read_text()
    assert text in markdown.read_text() and "misses the least 0.6" in markdown.read_text()
    assert text in page.read_text()


def test_a_calibration_of_another_spec_version_warns(fake_server, tmp_path, write_spec, monkeypatch):
    record = CalibrationRecord("grounded", "a" * 64, 0.5, 45, 5, 40, 10, "cal.json")
    (correction,) = corrected_rates({"grounded": [1.0] * 6 + [0.0] * 4}, {"grounded": ("grounded", "b" * 64)},
                                    [record]).values()
    assert correction.rate.estimate.value == pytest.approx((0.6 + 0.8 - 1) / 0.7)
    assert correction.warnings and "the spec changed since its calibration" in correction.warnings[0]


def test_a_graded_or_missing_calibration_is_refused(tmp_path):
    graded = tmp_path / "graded.json"
    graded.write_text(json.dumps({"scorer": "x", "kind": "graded", "spearman": {"value": 0.4}}))
    with pytest.raises(CalibrationError, match="graded labels"):
        load_calibration(graded)
    with Store(tmp_path / "s.sqlite") as db, pytest.raises(CalibrationError, match="no stored calibration"):
        load_calibration("nothing-by-this-name", db)


def test_calibrate_in_python_reports_intervals_at_the_level_asked(write_spec):
    path = write_spec("grounded", YES_NO_SPEC, {"grounded/judge.j2": YES_NO_PROMPT})
    judge = FakeJudge({"judge": lambda call: _reply({"messages": call.messages})})
    report = calibrate(load_scorer(str(path), judge=judge), _labelled_rows(), positive=["good"], confidence=0.8,
                       store=False)
    assert report.confidence == 0.8
    assert report.true_positive_rate.ci == pytest.approx(wilson(45, 50, 0.8).ci)
    assert report.to_json_dict()["truePositiveRate"]["confidence"] == 0.8
    assert report.base_rate == 0.5 and report.cohen_kappa.value == pytest.approx(0.70)


def test_difference_of_corrected_rates_adds_both_variances():
    from engine.analysis.judge_stats import corrected_difference

    a = corrected_pass_rate(120, 200, 45, 50, 40, 50)
    b = corrected_pass_rate(140, 200, 45, 50, 40, 50)
    diff = corrected_difference(a, b)
    assert diff.value == pytest.approx(b.estimate.value - a.estimate.value)
    half = 1.959963984540054 * (a.standard_error ** 2 + b.standard_error ** 2) ** 0.5
    assert diff.ci == pytest.approx((diff.value - half, diff.value + half))
    chance = corrected_pass_rate(50, 100, 25, 50, 25, 50)
    assert corrected_difference(a, chance).value is None


def test_compare_reports_the_difference_of_corrected_pass_rates(fake_server, tmp_path, write_spec, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_spec("grounded", YES_NO_SPEC, {"grounded/judge.j2": YES_NO_PROMPT})
    draft = tmp_path / "draft" / "grounded.yaml"
    draft.parent.mkdir()
    draft.write_text(textwrap.dedent(YES_NO_SPEC).lstrip().replace("grounded/judge.j2", "grounded/draft.j2"))
    (tmp_path / "prompts" / "grounded" / "draft.j2").write_text("Be careful. " + textwrap.dedent(YES_NO_PROMPT))
    fake_server.reply = _reply
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in _labelled_rows()))
    files = []
    for version in ("grounded", f"grounded@draft={draft}"):
        result = _cli(fake_server, ["calibrate", version, "--data", str(labelled), "--positive", "good", "--json"],
                      tmp_path)
        assert result.exit_code == 0, result.stderr
        files.append(tmp_path / f"cal{len(files)}.json")
        files[-1].write_text(result.stdout)
    production = tmp_path / "production.jsonl"
    production.write_text("".join(json.dumps({"id": f"p{i}", "output": ("yes " if i < 120 else "no ") + str(i)})
                                  + "\n" for i in range(200)))
    result = _cli(fake_server, ["compare", "grounded", f"grounded@draft={draft}", "--data", str(production),
                                "--calibration", str(files[0]), "--calibration", str(files[1]), "--json"], tmp_path)
    assert result.exit_code == 0, result.stderr
    corrected = json.loads(result.stdout)["corrected"]
    assert corrected["rates"]["grounded"]["value"] == pytest.approx(0.4 / 0.7)
    assert corrected["rates"]["grounded@draft"]["value"] == pytest.approx(0.4 / 0.7)
    diff = corrected["differences"]["grounded@draft"]
    assert diff["value"] == pytest.approx(0.0, abs=1e-12) and diff["ci"][0] < 0 < diff["ci"][1]
    assert "grounded@draft − grounded: +0.0000" in result.stderr


def test_graded_calibration_gives_spearman_with_an_interval(write_spec):
    path = write_spec("grounded", YES_NO_SPEC, {"grounded/judge.j2": YES_NO_PROMPT})
    judge = FakeJudge({"judge": lambda call: _reply({"messages": call.messages})})
    rows = [{"id": f"g{i}", "output": ("yes " if i % 3 else "no ") + str(i), "label": 1 + (i % 3) * 2}
            for i in range(30)]
    report = calibrate(load_scorer(str(path), judge=judge), rows, store=False)
    assert report.kind == "graded" and report.spearman == pytest.approx(report.spearman_ci.value)
    low, high = report.spearman_ci.ci
    assert low <= report.spearman <= high
    figures = report.to_json_dict()
    assert figures["spearman"]["value"] == pytest.approx(report.spearman) and figures["spearman"]["ci"] == [low, high]
    assert "spearmanCi" not in figures and figures["truePositiveRate"] is None

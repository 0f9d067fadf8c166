"""The settings objects refuse bad values when built, and the entry points refuse a settings
object of the wrong class with a `TypeError` naming the expected class and what was given
(`RunSettings`, `CalibrationSettings`, `CompareSettings`, `JudgeSettings`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import calibrate, compare, load_scorer, run_evals
from engine.analysis.calibration import CalibrationSettings
from engine.analysis.compare import CompareSettings
from engine.bind.stack import bind, make_judge
from engine.judge.settings import JudgeSettings
from engine.run.settings import RunSettings
from engine.spec.compile import load_spec

NUMERIC = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")
DATA = [{"id": "a", "output": "0.5", "label": "good"}, {"id": "b", "output": "1", "label": "bad"}]


# --- a settings object of the wrong class ---------------------------------------------------------

@pytest.mark.parametrize("wrong", [{"concurrency": 2}, JudgeSettings(), CalibrationSettings()])
def test_run_evals_refuses_settings_that_are_not_run_settings(wrong):
    with pytest.raises(TypeError, match=rf"RunSettings.*not {type(wrong).__name__}"):
        run_evals(DATA, [NUMERIC], wrong, store=False)


@pytest.mark.parametrize("wrong", [{"model": "openai/gpt-4o-mini"}, RunSettings()])
def test_load_scorer_refuses_settings_that_are_not_judge_settings(wrong):
    with pytest.raises(TypeError, match=rf"JudgeSettings.*not {type(wrong).__name__}"):
        load_scorer("faithfulness", settings=wrong)


def test_make_judge_and_bind_refuse_settings_that_are_not_judge_settings():
    with pytest.raises(TypeError, match="JudgeSettings.*not dict"):
        make_judge("openai/gpt-4o-mini", {"timeout_s": 5})
    with pytest.raises(TypeError, match="JudgeSettings.*not RunSettings"):
        bind(load_spec(NUMERIC), RunSettings())


def test_calibrate_refuses_run_settings_in_place_of_calibration_settings():
    with pytest.raises(TypeError, match="CalibrationSettings.*not RunSettings"):
        calibrate(NUMERIC, DATA, RunSettings(concurrency=2), store=False)


def test_compare_refuses_calibration_settings_in_place_of_compare_settings():
    with pytest.raises(TypeError, match="CompareSettings.*not CalibrationSettings"):
        compare([NUMERIC, f"b={NUMERIC}"], DATA, CalibrationSettings(positive=["good"]), store=False)


def test_calibrate_and_compare_refuse_a_wrong_run_settings_object():
    with pytest.raises(TypeError, match="RunSettings.*not dict"):
        calibrate(NUMERIC, DATA, None, {"concurrency": 2}, store=False)
    with pytest.raises(TypeError, match="RunSettings.*not CompareSettings"):
        compare([NUMERIC, f"b={NUMERIC}"], DATA, None, CompareSettings(), store=False)


# --- RunSettings checks its values when built -------------------------------------------------

@pytest.mark.parametrize(("values", "error", "message"), [
    ({"concurrency": "many"}, TypeError, "concurrency must be an int ≥ 1, not str"),
    ({"concurrency": True}, TypeError, "concurrency must be an int ≥ 1, not bool"),
    ({"concurrency": 2.0}, TypeError, "concurrency must be an int"),
    ({"concurrency": 0}, ValueError, "concurrency must be ≥ 1, not 0"),
    ({"concurrency": -1}, ValueError, "concurrency must be ≥ 1, not -1"),
    ({"limit": 0}, ValueError, "limit must be ≥ 1, not 0"),
    ({"limit": "3"}, TypeError, "limit must be an int"),
    ({"samples": 0}, ValueError, "samples: an integer from 1 to 50 is needed, got 0"),
    ({"samples": 51}, ValueError, "samples: an integer from 1 to 50"),
    ({"samples": True}, TypeError, "samples: an integer"),
    ({"rate_limit": -2.5}, ValueError, "rate_limit"),
    ({"rate_limit": "fast"}, TypeError, "rate_limit"),
    ({"max_cost": 0}, ValueError, "max_cost: a positive number of US dollars is needed"),
    ({"max_cost": float("nan")}, ValueError, "max_cost"),
    ({"max_cost": float("inf")}, ValueError, "max_cost"),
    ({"max_cost": "5"}, TypeError, "max_cost"),
    ({"max_cost": True}, TypeError, "max_cost"),
])
def test_run_settings_refuse_a_bad_value_when_built(values, error, message):
    with pytest.raises(error, match=message):
        RunSettings(**values)
    with pytest.raises(error, match=message):
        RunSettings.build(None, **values)
    with pytest.raises(error, match=message):  # the keyword form of the entry points
        run_evals(DATA, [NUMERIC], store=False, **values)


def test_run_settings_keep_good_values():
    settings = RunSettings(concurrency=4, limit=1, samples=50, rate_limit=0.5, max_cost=2)
    assert (settings.concurrency, settings.limit, settings.samples, settings.rate_limit, settings.max_cost) \
        == (4, 1, 50, 0.5, 2)
    assert RunSettings.build(settings, concurrency=1).concurrency == 1


# --- CalibrationSettings and CompareSettings --------------------------------------------------

@pytest.mark.parametrize("cls", [CalibrationSettings, CompareSettings])
def test_a_single_label_value_is_one_label_not_its_characters(cls):
    assert cls(positive="good", negative="bad").positive == ("good",)
    assert cls(positive="good", negative="bad").negative == ("bad",)
    assert cls(positive=1, negative=0).positive == (1,) and cls(positive=True).positive == (True,)
    assert cls(positive=["good", "fine"]).positive == ("good", "fine")
    assert cls.build(None, positive="good").positive == ("good",)


@pytest.mark.parametrize("cls", [CalibrationSettings, CompareSettings])
@pytest.mark.parametrize(("values", "error", "message"), [
    ({"top": -1}, ValueError, "top must be ≥ 0, not -1"),
    ({"top": "5"}, TypeError, "top must be an int"),
    ({"top": True}, TypeError, "top must be an int"),
    ({"label_field": 3}, TypeError, "label_field must be a str"),
    ({"label_field": " "}, ValueError, "label_field"),
    ({"positive": {"good": 1}}, TypeError, "positive must be a label value"),
])
def test_label_settings_refuse_a_bad_value_when_built(cls, values, error, message):
    with pytest.raises(error, match=message):
        cls(**values)


def test_label_settings_refuse_a_cut_off_or_seed_that_is_not_a_number():
    with pytest.raises(TypeError, match="cutoff must be a number"):
        CalibrationSettings(cutoff="0.5")
    with pytest.raises(TypeError, match="not_scorable_score must be a number"):
        CalibrationSettings(not_scorable_score="0")
    with pytest.raises(TypeError, match="cutoff must be a number"):
        CompareSettings(cutoff="half")
    with pytest.raises(TypeError, match="seed must be an int"):
        CompareSettings(seed=1.5)


def test_calibrate_takes_a_single_positive_label():
    report = calibrate(NUMERIC, DATA, positive="good", negative="bad", store=False)
    assert report.positive_labels == ["good"] and report.kind == "binary"
    assert report.labelled == 2 and report.left_out == 0


def test_a_rate_limit_of_zero_means_no_limit_as_it_always_has():
    assert RunSettings(rate_limit=0).rate_limit is None
    stored = RunSettings.from_json_dict({"rate_limit": 0, "concurrency": 2})
    assert stored.rate_limit is None and stored.concurrency == 2

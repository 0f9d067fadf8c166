"""Calibration names its score cut-off `cutoff`, as specs and `compare` do; the old name
`threshold` is still read, with a deprecation warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import calibrate
from engine.analysis.calibration import CalibrationSettings

NUMERIC = str(Path(__file__).resolve().parent / "specs" / "numeric.yaml")
DATA = [{"id": "a", "output": "0.9", "label": "good"}, {"id": "b", "output": "0.7", "label": "good"},
        {"id": "c", "output": "0.6", "label": "bad"}, {"id": "d", "output": "0.1", "label": "bad"}]


def test_calibration_reports_its_cut_off_as_cutoff():
    report = calibrate(NUMERIC, DATA, positive="good", cutoff=0.65, store=False)
    record = report.to_json_dict()
    assert record["cutoff"] == 0.65 and record["bestCutoff"] == 0.7
    assert "threshold" not in record and "bestThreshold" not in record
    assert record["confusion"] == {"tp": 2, "fp": 0, "tn": 2, "fn": 0}


def test_the_old_name_threshold_is_read_as_cutoff_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="use cutoff"):
        settings = CalibrationSettings(threshold=0.65)
    assert settings.cutoff == 0.65 and settings.threshold == 0.65
    with pytest.warns(DeprecationWarning):
        report = calibrate(NUMERIC, DATA, positive="good", threshold=0.65, store=False)
    assert report.cutoff == 0.65
    with pytest.warns(DeprecationWarning, match="use .cutoff"):
        assert report.threshold == 0.65
    with pytest.raises(ValueError, match="old name of cutoff"):
        CalibrationSettings(cutoff=0.5, threshold=0.6)

"""The calibration's score cut-off is named ``cutoff``, as specs and ``compare`` name it; its old
name ``threshold`` (and ``best_threshold``) is still read, with a `DeprecationWarning`.

`OldCutoffNames` gives a calibration report the old names as read-only properties; `settle_cutoff`
reads ``threshold=`` given to `CalibrationSettings` as ``cutoff``; `REPORT_NAMES` maps the keys of
`engine.analysis.calibration.agreement` to the report's fields.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["REPORT_NAMES", "OldCutoffNames", "settle_cutoff"]

REPORT_NAMES = {"threshold": "cutoff", "best_threshold": "best_cutoff"}


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)


class OldCutoffNames:
    """``threshold`` and ``best_threshold``: the old names of ``cutoff`` and ``best_cutoff``."""

    cutoff: float | None
    best_cutoff: float | None

    @property
    def threshold(self) -> float | None:
        _deprecated("Calibration.threshold", ".cutoff")
        return self.cutoff

    @property
    def best_threshold(self) -> float | None:
        _deprecated("Calibration.best_threshold", ".best_cutoff")
        return self.best_cutoff


def settle_cutoff(settings: Any) -> None:
    """On frozen `settings` with ``cutoff`` and ``threshold`` fields: a ``threshold`` given alone
    becomes the ``cutoff`` (with a `DeprecationWarning`); afterwards ``threshold`` equals
    ``cutoff``. Raises `ValueError` when both are given and differ."""
    old, new = settings.threshold, settings.cutoff
    if old is not None and old != new:
        if new is not None:
            raise ValueError(f"threshold {old!r} is the old name of cutoff: give only cutoff")
        warnings.warn("CalibrationSettings(threshold=…) is deprecated: use cutoff=…", DeprecationWarning,
                      stacklevel=4)
        object.__setattr__(settings, "cutoff", old)
    object.__setattr__(settings, "threshold", settings.cutoff)

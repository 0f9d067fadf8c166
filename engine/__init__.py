"""scorespec: LLM-evaluation scorers as data.

Public API (imported lazily, so ``import engine`` stays cheap)::

    from engine import load_spec, load_scorer, JudgeSettings, run_evals, RunSettings, calibrate, compare, align, SpecError, ScoreResult
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy exports below give, for type checkers and IDEs
    from .alignment.result import AlignResult
    from .alignment.settings import AlignSettings
    from .analysis.calibration import Calibration, CalibrationSettings
    from .analysis.compare import CompareSettings
    from .analysis.comparison import Comparison
    from .api import align, arun_evals, calibrate, compare, run_evals
    from .bind.load import load_scorer
    from .core.errors import ErrorKind, Problem, SpecError
    from .core.result import ScoreResult
    from .interpret.scorer import OptionError, Scorer
    from .judge.settings import JudgeSettings
    from .run.settings import RunSettings
    from .run.summary import EvalSummary
    from .spec.compile import load_spec
    from .spec.models import spec_json_schema
    from .spec.plans import ScorerPlan

__version__ = "0.1.0"

_EXPORTS = {
    "load_spec": "spec.compile",
    "ScorerPlan": "spec.plans",
    "ErrorKind": "core.errors",
    "load_scorer": "bind.load",
    "JudgeSettings": "judge.settings",
    "Scorer": "interpret.scorer",
    "OptionError": "interpret.scorer",
    "SpecError": "core.errors",
    "Problem": "core.errors",
    "ScoreResult": "core.result",
    "run_evals": "api",
    "arun_evals": "api",
    "RunSettings": "run.settings",
    "EvalSummary": "run.summary",
    "spec_json_schema": "spec.models",
    "calibrate": "api",
    "Calibration": "analysis.calibration",
    "CalibrationSettings": "analysis.calibration",
    "compare": "api",
    "Comparison": "analysis.comparison",
    "CompareSettings": "analysis.compare",
    "align": "api",
    "AlignResult": "alignment.result",
    "AlignSettings": "alignment.settings",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"engine.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = [
    "AlignResult",
    "AlignSettings",
    "Calibration",
    "CalibrationSettings",
    "CompareSettings",
    "Comparison",
    "ErrorKind",
    "EvalSummary",
    "JudgeSettings",
    "OptionError",
    "Problem",
    "RunSettings",
    "ScoreResult",
    "Scorer",
    "ScorerPlan",
    "SpecError",
    "align",
    "arun_evals",
    "calibrate",
    "compare",
    "load_scorer",
    "load_spec",
    "run_evals",
    "spec_json_schema",
]

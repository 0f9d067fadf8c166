"""scorespec: LLM-evaluation scorers as data.

Public API (imported lazily, so ``import engine`` stays cheap)::

    from engine import load_spec, load_scorer, run_evals, calibrate, compare, SpecError, ScoreResult
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_spec": "spec.compile",
    "ScorerPlan": "spec.plans",
    "ErrorKind": "core.errors",
    "load_scorer": "bind.load",
    "Scorer": "interpret.scorer",
    "OptionError": "interpret.scorer",
    "SpecError": "core.errors",
    "Problem": "core.errors",
    "ScoreResult": "core.result",
    "run_evals": "run.evals",
    "EvalSummary": "run.evals",
    "spec_json_schema": "spec.models",
    "calibrate": "analysis.calibration",
    "Calibration": "analysis.calibration",
    "compare": "analysis.compare",
    "Comparison": "analysis.comparison",
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


__all__ = list(_EXPORTS)

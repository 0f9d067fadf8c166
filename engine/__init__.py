"""scorespec: LLM-evaluation scorers as data.

Public API (imported lazily, so ``import engine`` stays cheap)::

    from engine import load_spec, load_scorer, run_evals, calibrate, compare, SpecError, ScoreResult
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_spec": "compile",
    "ScorerPlan": "plans",
    "ErrorKind": "errors",
    "load_scorer": "scorer",
    "Scorer": "scorer",
    "OptionError": "scorer",
    "SpecError": "errors",
    "Problem": "errors",
    "ScoreResult": "result",
    "run_evals": "evals",
    "EvalSummary": "evals",
    "spec_json_schema": "spec",
    "calibrate": "calibration",
    "Calibration": "calibration",
    "compare": "compare_versions",
    "Comparison": "comparison",
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

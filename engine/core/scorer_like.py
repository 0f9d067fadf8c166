"""What a batch run needs of a scorer: `ScorerLike`, and `ForeignScorer` for any other object.

A run (`engine.run`, `engine.ray`, `engine.analysis`, `engine.alignment`) reads a scorer only
through `ScorerLike`: its id and label, its judge model, what its compiled spec says (`PlanLike`:
the fields it declares, whether it asks a judge, its version, hash, direction and text), its
options, scale and cut-off, and the calls that score an item or derive a twin.
`engine.interpret.scorer.Scorer` is one as it is. Another object (anything with ``id``, ``run``
and ``arun``) is wrapped once, when the run resolves its scorers (`engine.run.evals.resolve_scorers`),
in a `ForeignScorer`: the one place a missing capability gets its default, so nothing past it
asks an object what it can do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .direction import HIGHER_IS_BETTER
from .result import ScoreResult

__all__ = ["ForeignScorer", "NO_PLAN_VERSION", "PlanLike", "ScorerLike", "SpecFree"]

#: The version a scorer without a compiled spec reports.
NO_PLAN_VERSION = 0


class PlanLike(Protocol):
    """What a run reads of a scorer's compiled spec (`engine.spec.plans.ScorerPlan` is one).
    `declared`: the fields it declares, by name; `uses_judge`: whether a stage asks a judge;
    `hash`: the spec's content hash (None: no spec); `direction`: ``higher_is_better`` or
    ``lower_is_better``; `sources`: (file, text) of every spec file (empty: nothing to keep);
    `templates`: template name → text."""

    @property
    def id(self) -> str: ...

    @property
    def version(self) -> int | str: ...

    @property
    def hash(self) -> str | None: ...

    @property
    def declared(self) -> Mapping[str, Any]: ...

    @property
    def uses_judge(self) -> bool: ...

    @property
    def direction(self) -> str: ...

    @property
    def sources(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def templates(self) -> Mapping[str, str]: ...


class ScorerLike(Protocol):
    """A scorer as a batch run uses it. `label`: its name in the run (its id unless given),
    which keys its results; `model`: its judge model string, None when it asks none; `scale`:
    its scores' upper bound (scores in [0, scale]; may raise when its options cannot compute
    one); `cutoff`: its documented cut-off on that scale, or None. `run` / `arun` score one item
    given its fields by name (``output``, ``input``, …, ``run_id``) and return a `ScoreResult`;
    `aclose` releases what the scorer holds on the running event loop; `with_samples` and
    `with_language` return a twin (this one unchanged)."""

    @property
    def id(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def plan(self) -> PlanLike: ...

    @property
    def options(self) -> Mapping[str, Any]: ...

    @property
    def scale(self) -> float: ...

    @property
    def cutoff(self) -> float | None: ...

    def run(self, **fields: Any) -> ScoreResult: ...

    async def arun(self, **fields: Any) -> ScoreResult: ...

    async def aclose(self) -> None: ...

    def with_samples(self, samples: int | None) -> ScorerLike: ...

    def with_language(self, language: str) -> ScorerLike: ...


@dataclass(frozen=True)
class SpecFree:
    """The `PlanLike` of a scorer object without a compiled spec: it declares no field, is
    taken to ask a judge, has version 0, no hash and no text, and the direction it names
    (``higher_is_better`` when it names none)."""

    id: str
    direction: str = HIGHER_IS_BETTER
    version: int = NO_PLAN_VERSION
    hash: str | None = None
    uses_judge: bool = True
    declared: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[tuple[str, str], ...] = ()
    templates: Mapping[str, str] = field(default_factory=dict)


class ForeignScorer:
    """Another object used as a scorer (it has ``id``, ``run`` and ``arun``), seen as a
    `ScorerLike`: ``label`` its own or its id; ``model``, ``plan``, ``options``, ``cutoff`` its
    own or None, a `SpecFree`, ``{}``, None; ``scale`` its own (`AttributeError` without one);
    ``aclose`` its own or nothing to do; ``with_samples`` / ``with_language`` its own (the twin
    wrapped again) or itself unchanged. Any other attribute is the object's own (a ``with_…``
    method's result wrapped again)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.id: str = inner.id
        self.label: str = getattr(inner, "label", None) or inner.id
        self.model: str | None = getattr(inner, "model", None)
        self.options: Mapping[str, Any] = getattr(inner, "options", None) or {}
        self.cutoff: float | None = getattr(inner, "cutoff", None)
        plan = getattr(inner, "plan", None)
        self.plan: PlanLike = plan if plan is not None else SpecFree(
            inner.id, getattr(inner, "direction", None) or HIGHER_IS_BETTER)

    @property
    def scale(self) -> float:
        return float(self.inner.scale)

    def run(self, **fields: Any) -> ScoreResult:
        return self.inner.run(**fields)

    async def arun(self, **fields: Any) -> ScoreResult:
        return await self.inner.arun(**fields)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def with_samples(self, samples: int | None) -> ScorerLike:
        derive = getattr(self.inner, "with_samples", None)
        return self if derive is None else ForeignScorer(derive(samples))

    def with_language(self, language: str) -> ScorerLike:
        derive = getattr(self.inner, "with_language", None)
        return self if derive is None else ForeignScorer(derive(language))

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. while unpickling)
            raise AttributeError(name)
        value = getattr(self.inner, name)
        if name.startswith("with_") and callable(value):
            return lambda *args, **kwargs: ForeignScorer(value(*args, **kwargs))
        return value

    def __repr__(self) -> str:
        return f"ForeignScorer({self.inner!r})"


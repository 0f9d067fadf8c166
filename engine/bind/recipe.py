"""A scorer as text and values: what a Ray actor needs to build the same scorer again.

A run's scorers are compiled objects holding live judges; a Ray actor on another machine is
given each as a `ScorerRecipe` instead — its label, the spec's full text (every source file and
template, `engine.spec.snapshot`) with its hash, the options, the judge model, the samples each
prompt stage asks, the jury of each stage one asks, and how its judge was built
(`engine.judge.recipe`) and cached — and
`ScorerRecipe.build` compiles it there from that text alone, checking the hash, so an actor
scores with exactly the spec the run recorded, whatever the files on its machine say.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..interpret.scorer import Scorer
from ..judge.model import is_local
from ..judge.recipe import JudgeRecipe, cache_setting, judge_recipe
from ..judge.settings import JudgeSettings
from ..spec.jury import stage_with_jury
from ..spec.plans import PromptStagePlan, ScorerPlan
from ..spec.snapshot import compile_kept
from .stack import bind

__all__ = ["ScorerRecipe", "scorer_recipe"]


@dataclass(frozen=True)
class ScorerRecipe:
    """One scorer of a run (see the module docstring). `sources`: (file, text) of every spec
    file merged into it, its own first; `templates`: name → text; `sampling`: stage id → the
    samples that prompt stage asks; `judge`: how its judge was built (None for a rule-only
    scorer); `cache`, `refresh`: its judge-call cache (`engine.judge.recipe.cache_setting`);
    `language`: its language setting (``auto`` or an ISO 639-1 code); `juries`: stage id → (the
    models, the fewest answers) of each prompt stage a jury asks (`engine.spec.plans.JuryPlan`).
    Picklable."""

    label: str
    spec_id: str
    spec_hash: str
    sources: tuple[tuple[str, str], ...]
    templates: dict[str, str]
    options: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    sampling: dict[str, int] = field(default_factory=dict)
    judge: JudgeRecipe | None = None
    cache: Any = None
    refresh: bool = False
    language: str = "auto"
    juries: dict[str, tuple[tuple[str, ...], int]] = field(default_factory=dict)

    def plan(self) -> ScorerPlan:
        """The spec compiled from the recipe's text, its hash checked, each prompt stage asking
        the recipe's samples and asked by its juries. Raises `engine.core.errors.SpecError` when it does not compile here,
        `engine.spec.snapshot.SpecHashMismatch` when it compiles to another hash."""
        plan = compile_kept({"sources": self.sources, "templates": self.templates}, self.spec_hash)
        stages = []
        for stage in plan.stages:
            n = self.sampling.get(stage.id) if isinstance(stage, PromptStagePlan) else None
            if n is not None and stage.sampling is not None and stage.sampling.n != n:
                stage = dataclasses.replace(stage, sampling=dataclasses.replace(stage.sampling, n=n))
            if isinstance(stage, PromptStagePlan) and stage.id in self.juries:
                stage = stage_with_jury(stage, *self.juries[stage.id])
            stages.append(stage)
        return dataclasses.replace(plan, stages=tuple(stages))

    def build(self) -> Scorer:
        """The scorer again: compiled from text (`plan`), with the recipe's options, label and
        model; its judge built on first use the way the original was, under the same cache.
        Raises what `plan` raises, `engine.interpret.scorer.OptionError`, `engine.judge.model.ModelError`."""
        built = {} if self.judge is None else {**self.judge.keywords(), "cache": self.cache, "refresh": self.refresh}
        scorer = bind(self.plan(), JudgeSettings(model=self.model, **built), options=self.options, label=self.label)
        return scorer.with_language(self.language)


def scorer_recipe(scorer: Any) -> ScorerRecipe:
    """The recipe of `scorer`, an `engine.interpret.scorer.Scorer` (its judge is built here if it was not
    yet). Raises `ValueError` naming the scorer for one that cannot be built again elsewhere: not
    a `Scorer`, a spec without its text, an embedded judge model (``local``…: every actor would
    load it), or a judge `engine.bind.stack.make_judge` did not build (a test double, your own judge
    object)."""
    label = getattr(scorer, "label", None) or getattr(scorer, "id", "?")
    plan = getattr(scorer, "plan", None)
    if not isinstance(scorer, Scorer) or not isinstance(plan, ScorerPlan):
        raise ValueError(f"scorer {label!r}: the Ray executor runs scorers loaded from specs (load_scorer or a spec "
                         f"id), not {type(scorer).__name__} objects")
    if not plan.sources:
        raise ValueError(f"scorer {label!r}: its spec's text is not known, so a Ray actor cannot compile it")
    recipe, cache, refresh = None, None, False
    if plan.uses_judge:
        if is_local(str(scorer.model or "")):  # checked before the judge is built: that loads the model
            raise ValueError(f"scorer {label!r}: the Ray executor asks a judge served over HTTP (a hosted model, or "
                             f"an OpenAI-compatible server: --model openai/NAME --base-url URL), not the embedded "
                             f"model {scorer.model!r}, which every actor would load (serve a GGUF model with "
                             "llama.cpp's server instead)")
        judge = scorer.judge
        recipe = judge_recipe(judge)
        if recipe is None:
            raise ValueError(f"scorer {label!r}: its judge ({type(judge).__name__}) was not built from a model string, "
                             "so a Ray actor cannot build it again; give the scorer a model (load_scorer(..., "
                             "model=...)) or a judge made by engine.bind.stack.make_judge")
        cache, refresh = cache_setting(judge)
    sampling = {s.id: s.sampling.n for s in plan.stages if isinstance(s, PromptStagePlan) and s.sampling is not None}
    juries = {s.id: (s.jury.models, s.jury.min_successful) for s in plan.stages
              if isinstance(s, PromptStagePlan) and s.jury is not None}
    return ScorerRecipe(label=label, spec_id=plan.id, spec_hash=plan.hash, sources=tuple(plan.sources),
                        templates=dict(plan.templates), options=dict(scorer.options), model=scorer.model,
                        sampling=sampling, judge=recipe, cache=cache, refresh=refresh,
                        language=getattr(scorer, "language", "auto"), juries=juries)

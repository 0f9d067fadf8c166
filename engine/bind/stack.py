"""A judge built from a model string, and a scorer bound to its judge.

`make_judge` builds the provider judge for a model string — hosted ones through
`engine.judge.clients`, embedded ones through `engine.embedded.judge` — from its settings
resolved once (`engine.judge.settings.JudgeSettings.resolved`), records how (`engine.judge.
recipe.JudgeRecipe`, so another process builds it again), and composes it under its layers
(`engine.judge.stack.compose`, the order `engine.judge.stack.LAYERS`), with the parts a run
adds (`engine.judge.stack.JudgeParts`: a shared rate limiter, a cache, a progress hook). `bind`
gives a scorer plan its judge: the model decided and checked once (`engine.judge.model.
check_model`), the cache opened once; the API's `engine.bind.load.load_scorer`, the CLI and the
Ray actors all use it. `for_run` hands a built scorer the parts of a run, before its judge is
built (`engine.run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..embedded.judge import make_local_judge
from ..interpret.scorer import Scorer
from ..judge.cache.layer import open_cache
from ..judge.call import Judge
from ..judge.clients import hosted_judge
from ..judge.jury import JurorJudges
from ..judge.model import check_model, is_local
from ..judge.recipe import JudgeRecipe
from ..judge.retries import RetryPolicy
from ..judge.secret import reveal
from ..judge.settings import JudgeSettings
from ..judge.stack import GivenJudge, JudgeParts, compose
from ..spec.jury import with_jury
from ..spec.plans import PromptStagePlan, ScorerPlan

__all__ = ["LOCAL_RETRY", "JudgeFactory", "bind", "for_run", "make_judge"]

# a local model has no transport to fail; a small budget for transient binding errors
LOCAL_RETRY = RetryPolicy(max_retries=1, base_s=0.1)


def make_judge(model: str, settings: JudgeSettings | None = None, parts: JudgeParts | None = None,
               **keywords: Any) -> Judge:
    """Build the judge for a model string: the provider judge under the layers `settings` and
    `parts` ask for (`engine.judge.stack.compose`; the order is `engine.judge.stack.LAYERS`).

    model: ``provider/model``, ``local``, ``local-tiny`` or ``llamacpp/PATH.gguf``
    (`engine.judge.model`); it is used whatever ``settings.model`` says. settings: a
    `JudgeSettings` (base URL, API key, mode, timeout, retry policy — default `RetryPolicy()`,
    `LOCAL_RETRY` for embedded models —, context window, rate limit, cache, refresh), resolved
    here (`JudgeSettings.resolved`: the environment fills what it leaves unset); keyword
    arguments are its fields, given over it (``make_judge(m, base_url=..., cache=True)``). parts:
    what a run adds (`engine.judge.stack.JudgeParts`). The provider judge keeps the resolved
    settings but the key as its ``recipe`` (`engine.judge.recipe.JudgeRecipe`), which builds it
    again in another process. Raises `ModelError` (a `ValueError`) for a model string that
    cannot work here, `TypeError` for a keyword that is not a setting or `settings` that is not a
    `JudgeSettings`, `ValueError` for a bad mode, window, timeout or rate,
    `engine.core.errors.LocalJudgeError` for a missing embedded model,
    `engine.judge.call.MissingCredentials` for a hosted provider whose client has no API key.
    """
    settings = JudgeSettings.of(settings).replace(model=model, **keywords).resolved()
    check_model(model)
    recipe = JudgeRecipe.of(settings)
    if is_local(model):
        provider: Judge = make_local_judge(model, mode=settings.mode, context_window=settings.context_window)
        settings = settings.replace(retry=settings.retry or LOCAL_RETRY)
    else:
        provider = hosted_judge(model, base_url=settings.base_url, api_key=reveal(settings.api_key), mode=settings.mode,
                                timeout_s=settings.timeout_s, context_window=settings.context_window,
                                family=settings.family, reasoning_tokens=settings.reasoning_tokens)
    try:
        provider.recipe = recipe  # how to build it again in another process (`engine.judge.recipe`)
    except AttributeError:  # a provider object that takes no attributes: it cannot be rebuilt elsewhere
        pass
    return compose(provider, settings, parts)


@dataclass(frozen=True)
class JudgeFactory:
    """Builds a scorer's judge on its first use: ``factory(model, parts)`` is ``make_judge(model,
    settings, parts)`` (the scorer gives the model, and the parts its run added); with `jury`, a
    `engine.judge.jury.JurorJudges` building each juror's judge alike on its first call."""

    settings: JudgeSettings
    jury: bool = False

    def __call__(self, model: str, parts: JudgeParts | None = None) -> Judge:
        if self.jury:
            return JurorJudges(lambda juror: make_judge(juror, self.settings, parts), model)
        return make_judge(model, self.settings, parts)


def bind(plan: ScorerPlan, settings: JudgeSettings | None = None, *, judge: Judge | None = None,
         options: Mapping[str, Any] | None = None, label: str | None = None, samples: int | None = None) -> Scorer:
    """`plan` as a `Scorer` with its options and its judge: `judge` when given (put under the
    settings' cache and rate limit, when they name one: `engine.judge.stack.GivenJudge`), else the
    judge `make_judge` builds on first use from `settings` for the scorer's model, decided here
    once (`JudgeSettings.resolved`: ``settings.model`` > ``$SCORESPEC_MODEL`` > the spec's >
    ``local``) and checked once (`engine.judge.model.check_model`, for a plan that uses a judge).
    The cache is opened once here, so every judge built for the scorer shares it. label, samples:
    see `Scorer`. Raises `TypeError` for `settings` that is not a `JudgeSettings`, `ModelError`
    for a model string that cannot work here, `ValueError` for a bad context window, endpoint
    variable or label, `engine.interpret.scorer.OptionError` for a bad option, what `open_cache`
    raises for a bad cache setting. A jury (``settings.jury``, else the spec's, else
    ``$SCORESPEC_JURY``: `JudgeSettings.resolved`) is set on the plan's prompt stages
    (`engine.spec.jury.with_jury`), each juror's model checked here too; a jury minimum without a jury
    is a `ValueError`."""
    spec_jury = next((s.jury.models for s in plan.stages if isinstance(s, PromptStagePlan) and s.jury), None)
    settings = JudgeSettings.of(settings).resolved(plan.model, spec_jury)
    settings = settings.replace(cache=open_cache(settings.cache))
    plan = with_jury(plan, settings.jury if settings.jury != spec_jury else None, settings.jury_min)
    jurors = sorted({m for s in plan.stages if isinstance(s, PromptStagePlan) and s.jury for m in s.jury.models})
    if settings.jury_min is not None and not jurors and plan.uses_judge:
        raise ValueError(f"{plan.id}: a jury minimum ({settings.jury_min}) needs a jury, and neither the spec nor "
                         "the caller names one (give --jury A,B,C, or jury= in Python)")
    if judge is not None:
        factory: Any = GivenJudge(judge, settings)
        return Scorer(plan, judge=factory(None), options=options, judge_factory=factory, label=label,
                      samples=samples)
    if plan.uses_judge:
        for model in (settings.model, *jurors):
            check_model(model)
    return Scorer(plan, model=settings.model, options=options, judge_factory=JudgeFactory(settings, bool(jurors)),
                  label=label, samples=samples)


def for_run(scorer: Any, parts: JudgeParts) -> Any:
    """`scorer` asking a judge built with a run's `parts` (`Scorer.with_parts`: composed once, on
    first use), as a twin; the scorer itself is left as it is. Unchanged for a rule-only scorer
    and for a scorer object without ``with_parts`` (a user's own)."""
    if not getattr(getattr(scorer, "plan", None), "uses_judge", True) or not hasattr(scorer, "with_parts"):
        return scorer
    return scorer.with_parts(parts)

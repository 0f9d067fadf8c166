"""The judge stack, built in one place, and a scorer bound to its judge.

Every judge has one async method, ``ask(call) -> JudgeAnswer`` (`engine.judge.call`). A judge is
a provider judge under layers with that same interface, in this order, innermost first (`LAYERS`;
`compose` is the one function that puts them together):

    provider      one try through instructor: schema, re-asks     engine.judge.provider
                  (engine.judge.clients for hosted models, engine.embedded.judge for embedded)
    retries       transport failures repeated and counted         engine.judge.retries
    rate_limit    a token per call (only with a rate limit)       engine.judge.rate_limit
    cache         answers already given, served (only with one)   engine.judge.cache.layer
    progress      each answer reported (only in a batch run)      engine.judge.progress

So a cache hit takes no token, and progress counts hits too. `make_judge` builds the provider
judge for a model string and stacks the layers its `JudgeSettings` ask for. `restack` takes a
judge built earlier apart (`taken_apart`) and stacks it again with a run's parts — a rate limiter
several judges share, a cache, a progress hook — in the same order. `bind` gives a scorer plan its
judge (the API's `engine.bind.load.load_scorer`, the CLI and the Ray actors all use it); `rebind`
gives a built scorer's judge a run's parts (`engine.run`). What an answer must satisfy travels
with each call (`engine.judge.contract`); model strings and their checks are in
`engine.judge.model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..embedded.judge import make_local_judge
from ..embedded.settings import local_settings
from ..interpret.scorer import Scorer
from ..judge import model as judge_model
from ..judge.cache.layer import CachedJudge, CacheSetting, open_cache
from ..judge.call import Judge, JudgeAnswer, JudgeCall, JudgeLayer, TransportFailure
from ..judge.clients import hosted_judge, parse_mode
from ..judge.contract import AnswerContract, AnswerInvalid
from ..judge.model import DEFAULT_MODEL, LOCAL_PREFIXES, ModelError, is_local, resolve_model
from ..judge.progress import ProgressJudge
from ..judge.provider import InstructorJudge
from ..judge.rate_limit import RateLimitedJudge, RateLimiter
from ..judge.recipe import JudgeRecipe
from ..judge.retries import RetryingJudge, RetryPolicy
from ..judge.secret import reveal
from ..judge.settings import JudgeSettings
from ..judge.window import configured_window
from ..spec.plans import ScorerPlan

# a local model has no transport to fail; a small budget for transient binding errors
LOCAL_RETRY = RetryPolicy(max_retries=1, base_s=0.1)

#: The layers over a provider judge, innermost first: the one place their order is declared.
LAYERS = ("retries", "rate_limit", "cache", "progress")
_LAYER_TYPES: dict[str, type] = {"retries": RetryingJudge, "rate_limit": RateLimitedJudge, "cache": CachedJudge,
                                 "progress": ProgressJudge}

Wrap = Callable[[Judge], Judge]  # a layer put over a judge: inner → layer


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


#: `restack`'s and `rebind`'s default for `cache`: the cache layer the judge has (if any) stays.
KEEP: Any = _Keep()


@dataclass(frozen=True)
class JudgeStack:
    """A judge as parts: `provider`, the judge under every layer (a provider judge, a test double,
    or a stack of layers in another order, kept whole), and per layer of `LAYERS` the wrappers to
    put over it, innermost first (each ``inner → layer``; zero or more per layer)."""

    provider: Judge
    retries: tuple[Wrap, ...] = ()
    rate_limit: tuple[Wrap, ...] = ()
    cache: tuple[Wrap, ...] = ()
    progress: tuple[Wrap, ...] = ()


def compose(stack: JudgeStack) -> Judge:
    """The judge `stack` describes: its provider under its layers in the order of `LAYERS`."""
    judge = stack.provider
    for layer in LAYERS:
        for wrap in getattr(stack, layer):
            judge = wrap(judge)
    return judge


def taken_apart(judge: Judge) -> JudgeStack:
    """`judge` as a `JudgeStack`: its outer layers that follow the order of `LAYERS`, each kept
    with its settings and state (``layer.over``), and the judge below them as the provider.
    ``compose(taken_apart(j))`` asks like `j`."""
    found: dict[str, list[Wrap]] = {layer: [] for layer in LAYERS}
    depth = len(LAYERS) - 1
    while True:
        layer = next((n for n, kind in _LAYER_TYPES.items() if isinstance(judge, kind)), None)
        if layer is None or LAYERS.index(layer) > depth:
            break
        depth = LAYERS.index(layer)
        assert isinstance(judge, JudgeLayer)
        found[layer].insert(0, judge.over)
        judge = judge.inner
    return JudgeStack(judge, **{layer: tuple(wraps) for layer, wraps in found.items()})


def restack(judge: Judge, *, cache: CacheSetting = KEEP, refresh: bool = False, rate_limit: Any = None,
            on_answer: Callable[[JudgeCall, JudgeAnswer | None], None] | None = None) -> Judge:
    """`judge` (any judge; it is left as it is) with more layers, each in its place of `LAYERS`:
    `cache` replaces its cache layer (`open_cache`: None or False takes it off; `KEEP` leaves
    it), with `refresh`; `rate_limit` (requests per second > 0, a `RateLimiter` several judges
    share, or any object with an async ``acquire()``, e.g. the Ray executor's cluster-wide limiter)
    adds a rate limit below the cache, so a cache hit takes no token; `on_answer(call, answer)` is
    called after each answer, None for a failed call (`engine.judge.progress`). Raises
    `ValueError` for a rate that is not > 0, what `open_cache` raises for a bad cache setting."""
    stack = taken_apart(judge)
    if cache is not KEEP:
        stack = _replace(stack, cache=_cache_wraps(open_cache(cache), refresh))
    if rate_limit is not None:
        stack = _replace(stack, rate_limit=stack.rate_limit + (_limit_wrap(rate_limit),))
    if on_answer is not None:
        stack = _replace(stack, progress=stack.progress + (lambda inner: ProgressJudge(inner, on_answer),))
    return compose(stack)


def check_model(model: str) -> None:
    """Raise `ModelError` unless `model` names a judge this machine can build: the checks of
    `engine.judge.model.check_model`, and before them an embedded model's options after ``?``
    (`engine.embedded.settings.local_settings`: a known option, a whole number in range)."""
    if isinstance(model, str) and is_local(model):
        try:
            local_settings(model)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
    judge_model.check_model(model)


def make_judge(model: str, settings: JudgeSettings | None = None, **keywords: Any) -> Judge:
    """Build the judge for a model string: the provider judge under the layers `settings` ask for
    (see the module; the order is `LAYERS`).

    model: ``provider/model``, ``local``, ``local-tiny`` or ``llamacpp/PATH.gguf``
    (`engine.judge.model`); it is used whatever ``settings.model`` says. settings: a
    `JudgeSettings` (base URL, API key, mode, timeout, retry policy — default `RetryPolicy()`,
    `LOCAL_RETRY` for embedded models —, context window, rate limit, cache, refresh); keyword
    arguments are its fields, given over it (``make_judge(m, base_url=..., cache=True)``). The
    provider judge keeps these settings but the key as its ``recipe`` (`engine.judge.recipe.
    JudgeRecipe`), which builds it again in another process. Raises `ModelError` (a
    `ValueError`) for a model string that cannot work here, `TypeError` for a keyword that is not
    a setting or `settings` that is not a `JudgeSettings`, `ValueError` for a bad mode, window,
    timeout or rate, `engine.embedded.llama.
    LocalJudgeError` for a missing embedded model, `engine.judge.call.MissingCredentials` for a
    hosted provider whose client has no API key.
    """
    settings = JudgeSettings.of(settings).replace(**keywords)
    check_model(model)
    retry = settings.retry
    recipe = JudgeRecipe.of(model, base_url=settings.base_url, mode=settings.mode, timeout_s=settings.timeout_s,
                            retry=retry, context_window=settings.context_window)
    if is_local(model):
        provider: Judge = make_local_judge(model, mode=settings.mode, context_window=settings.context_window)
        retry = retry or LOCAL_RETRY
    else:
        provider = hosted_judge(model, base_url=settings.base_url, api_key=reveal(settings.api_key), mode=settings.mode,
                                timeout_s=settings.timeout_s, context_window=settings.context_window)
    try:
        provider.recipe = recipe  # how to build it again in another process (`engine.judge.recipe`)
    except AttributeError:  # a provider object that takes no attributes: it cannot be rebuilt elsewhere
        pass
    return stacked(provider, settings.replace(retry=retry))


def stacked(provider: Judge, settings: JudgeSettings | None = None) -> Judge:
    """`provider` (any judge: a provider judge, a test double) under the layers `settings` ask for,
    in the order of `LAYERS`: transport retries always (``settings.retry``, default `RetryPolicy()`),
    a rate limit and a cache when they name one. Raises what `open_cache` raises for a bad cache."""
    return compose(_settings_stack(provider, JudgeSettings.of(settings)))


@dataclass(frozen=True)
class JudgeFactory:
    """Builds a scorer's judge on its first use: ``make_judge(model, settings)`` (the scorer gives
    the model it resolved)."""

    settings: JudgeSettings

    def __call__(self, model: str) -> Judge:
        return make_judge(model, self.settings)


def bind(plan: ScorerPlan, settings: JudgeSettings | None = None, *, judge: Judge | None = None,
         options: Mapping[str, Any] | None = None, label: str | None = None, samples: int | None = None) -> Scorer:
    """`plan` as a `Scorer` with its options and its judge: `judge` when given (put under the
    settings' cache and rate limit, when they name one: `restack`), else the judge `make_judge`
    builds on first use from `settings` for the scorer's model (``settings.model`` >
    ``$SCORESPEC_MODEL`` > the spec's > ``local``). The cache is opened once here, so every judge
    built for the scorer shares it. label, samples: see `Scorer`. Raises `TypeError` for `settings`
    that is not a `JudgeSettings`, `ModelError` for a model
    string that cannot work here (checked now, for a plan that uses a judge), `ValueError` for a
    bad context window or label, `engine.interpret.scorer.OptionError` for a bad option, what
    `open_cache` raises for a bad cache setting."""
    settings = JudgeSettings.of(settings)
    configured_window(settings.context_window)  # a bad value is an error now, not on every item
    settings = settings.replace(cache=open_cache(settings.cache))
    if judge is not None and (settings.cache is not None or settings.rate_limit is not None):
        judge = restack(judge, cache=settings.cache if settings.cache is not None else KEEP,
                        refresh=settings.refresh, rate_limit=settings.rate_limit)
    if judge is None and plan.uses_judge:
        check_model(resolve_model(settings.model, plan.model))
    return Scorer(plan, judge=judge, model=settings.model, options=options, judge_factory=JudgeFactory(settings),
                  label=label, samples=samples)


def rebind(scorer: Any, *, cache: CacheSetting = KEEP, refresh: bool = False, rate_limit: Any = None,
           on_answer: Callable[[JudgeCall, JudgeAnswer | None], None] | None = None) -> Any:
    """`scorer` asking its judge with a run's layers (`restack`: `cache`, `refresh`,
    `rate_limit`, `on_answer`), as a twin (``scorer.with_judge``); the scorer itself is left as
    it is. Unchanged when nothing is asked, for a rule-only scorer, one without ``with_judge``,
    or when its judge cannot be built (that failure then shows on each item)."""
    if cache is KEEP and rate_limit is None and on_answer is None:
        return scorer
    if not getattr(getattr(scorer, "plan", None), "uses_judge", True) or not hasattr(scorer, "with_judge"):
        return scorer
    try:
        judge = scorer.judge
    except Exception:
        return scorer
    return scorer.with_judge(restack(judge, cache=cache, refresh=refresh, rate_limit=rate_limit,
                                     on_answer=on_answer))


def _settings_stack(provider: Judge, settings: JudgeSettings) -> JudgeStack:
    """The stack `settings` ask for over `provider`: retries always, a rate limit and a cache
    when they name one."""
    limit = () if settings.rate_limit is None else (_limit_wrap(settings.rate_limit),)
    return JudgeStack(provider, retries=(lambda inner: RetryingJudge(inner, settings.retry),), rate_limit=limit,
                      cache=_cache_wraps(open_cache(settings.cache), settings.refresh))


def _limit_wrap(rate_limit: Any) -> Wrap:
    limiter = rate_limit if hasattr(rate_limit, "acquire") else RateLimiter(rate_limit)
    return lambda inner: RateLimitedJudge(inner, limiter)


def _cache_wraps(store: Any, refresh: bool) -> tuple[Wrap, ...]:
    return () if store is None else (lambda inner: CachedJudge(inner, store, refresh=refresh),)


def _replace(stack: JudgeStack, **layers: tuple[Wrap, ...]) -> JudgeStack:
    return dataclasses.replace(stack, **layers)


__all__ = ["make_judge", "stacked", "restack", "compose", "taken_apart", "bind", "rebind",
           "check_model", "JudgeSettings", "JudgeStack", "JudgeFactory", "LAYERS", "KEEP", "Judge", "JudgeCall",
           "JudgeAnswer", "JudgeLayer", "AnswerContract", "AnswerInvalid", "TransportFailure", "RetryPolicy",
           "RetryingJudge", "RateLimiter", "RateLimitedJudge", "ModelError", "resolve_model", "DEFAULT_MODEL",
           "LOCAL_PREFIXES", "LOCAL_RETRY", "InstructorJudge", "parse_mode", "CachedJudge", "open_cache"]

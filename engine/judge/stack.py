"""The judge stack: a provider judge under its layers, composed once, in the order `LAYERS` declares.

Every judge has one async method, ``ask(call) -> JudgeAnswer`` (`engine.judge.call`). A judge is
a provider judge under layers with that same interface, innermost first:

    provider      one try through instructor: schema, re-asks     engine.judge.provider
                  (engine.judge.clients for hosted models, engine.embedded.judge for embedded)
    retries       transport failures repeated and counted         engine.judge.retries
    rate_limit    a token per call (only with a rate limit)       engine.judge.rate_limit
    cache         answers already given, served (only with one)   engine.judge.cache.layer
    progress      each answer reported (only in a batch run)      engine.judge.progress

So a cache hit takes no token, and progress counts hits too. Each layer is one `Layer` entry of
`LAYERS`: its name and the wrappers it puts over the judge below, decided from the judge's
`JudgeSettings` and the `JudgeParts` a run adds (its shared rate limiter, its cache, its progress
hook). A run hands its parts to a scorer before the scorer's judge is built
(`engine.interpret.scorer.Scorer.with_parts`), so the stack is composed once, never taken apart.
A new layer is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .cache.layer import CachedJudge, open_cache
from .call import Judge, JudgeAnswer, JudgeCall
from .progress import ProgressJudge
from .rate_limit import RateLimitedJudge, RateLimiter
from .retries import RetryingJudge, RetryPolicy
from .settings import JudgeSettings

__all__ = ["Composition", "JudgeParts", "Layer", "LAYERS", "Wrap", "compose", "GivenJudge"]

Wrap = Callable[[Judge], Judge]  # a layer put over a judge: inner → layer
AnswerHook = Callable[[JudgeCall, JudgeAnswer | None], None]


@dataclass(frozen=True)
class JudgeParts:
    """What a run adds to a judge before it is composed (all optional).

    - rate_limit: requests per second (> 0), or a limiter several judges share (any object with
      an async ``acquire()``: `engine.judge.rate_limit.RateLimiter`, the Ray executor's
      cluster-wide limiter), or a tuple of those (each one takes its token); put below the cache,
      beside the settings' own limit.
    - cache: the run's judge-call cache in place of the settings' one (anything
      `engine.judge.cache.layer.open_cache` takes, or a `JudgeCache`; False: none; None: the
      settings' cache stays); refresh: with that cache, ask every call again.
    - on_answer(call, answer): called after each answer, None for a failed call
      (`engine.judge.progress`).

    Raises `ValueError` for a rate that is not > 0.
    """

    rate_limit: Any = None
    cache: Any = None
    refresh: bool = False
    on_answer: AnswerHook | None = None

    def __post_init__(self) -> None:
        for limit in self.limits():
            if not hasattr(limit, "acquire") and not (
                    isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0):
                raise ValueError(f"rate_limit must be requests per second > 0 or a shared limiter, not {limit!r}")

    def limits(self) -> tuple[Any, ...]:
        """The rate limits, innermost first (none, one, or the tuple given)."""
        limit = self.rate_limit
        return () if limit is None else tuple(limit) if isinstance(limit, tuple) else (limit,)

    def over(self, earlier: "JudgeParts") -> "JudgeParts":
        """These parts laid over `earlier` ones: a rate limit is added to the earlier ones (each
        takes its token), a cache (with its refresh flag) and a progress hook set here win, the
        others are kept."""
        changes: dict[str, Any] = {}
        limits = earlier.limits() + self.limits()
        if limits:
            changes["rate_limit"] = limits[0] if len(limits) == 1 else limits
        if self.cache is not None:
            changes["cache"], changes["refresh"] = self.cache, self.refresh
        if self.on_answer is not None:
            changes["on_answer"] = self.on_answer
        return replace(earlier, **changes)


@dataclass(frozen=True)
class Layer:
    """One layer of the stack: `name`, and `wraps(settings, parts, given)`, the wrappers it puts
    over the judge below (innermost first; none when the layer is not asked for). `given` is True
    for a judge given whole (a test double, a user's own judge): it is asked as it is, without
    the transport retries a provider judge gets."""

    name: str
    wraps: Callable[[JudgeSettings, JudgeParts, bool], tuple[Wrap, ...]]


def _retries(settings: JudgeSettings, parts: JudgeParts, given: bool) -> tuple[Wrap, ...]:
    if given:
        return ()
    policy = settings.retry or RetryPolicy()
    return (lambda inner: RetryingJudge(inner, policy),)


def _limit(rate_limit: Any) -> Wrap:
    limiter = rate_limit if hasattr(rate_limit, "acquire") else RateLimiter(rate_limit)
    return lambda inner: RateLimitedJudge(inner, limiter)


def _rate_limit(settings: JudgeSettings, parts: JudgeParts, given: bool) -> tuple[Wrap, ...]:
    own = () if settings.rate_limit is None else (settings.rate_limit,)
    return tuple(_limit(limit) for limit in (*own, *parts.limits()))


def _cache(settings: JudgeSettings, parts: JudgeParts, given: bool) -> tuple[Wrap, ...]:
    setting, refresh = (settings.cache, settings.refresh) if parts.cache is None else (parts.cache, parts.refresh)
    store = open_cache(setting)
    return () if store is None else (lambda inner: CachedJudge(inner, store, refresh=refresh),)


def _progress(settings: JudgeSettings, parts: JudgeParts, given: bool) -> tuple[Wrap, ...]:
    hook = parts.on_answer
    return () if hook is None else (lambda inner: ProgressJudge(inner, hook),)


#: The layers over a provider judge, innermost first: the one place their order is declared.
LAYERS: tuple[Layer, ...] = (Layer("retries", _retries), Layer("rate_limit", _rate_limit), Layer("cache", _cache),
                             Layer("progress", _progress))


def compose(provider: Judge, settings: JudgeSettings | None = None, parts: JudgeParts | None = None, *,
            given: bool = False) -> Judge:
    """`provider` under the layers `settings` and `parts` ask for, in the order of `LAYERS`:
    transport retries (``settings.retry``, default `RetryPolicy()`; none for a judge `given`
    whole), the settings' rate limit and the run's, the cache (the run's, else the settings'), the
    progress hook. With nothing asked of a given judge, `provider` itself. Raises what
    `open_cache` raises for a bad cache setting."""
    settings, parts = JudgeSettings.of(settings), parts or JudgeParts()
    judge = provider
    for layer in LAYERS:
        for wrap in layer.wraps(settings, parts, given):
            judge = wrap(judge)
    if judge is not provider:  # a stack of ours: it remembers how it was composed (`GivenJudge`)
        judge.composition = Composition(provider, settings, parts, given)  # type: ignore[attr-defined]
    return judge


@dataclass(frozen=True)
class Composition:
    """How `compose` built a stack: its arguments, kept on the stack's outer layer, so a judge
    given whole is composed again with more parts from them (never taken apart)."""

    provider: Judge
    settings: JudgeSettings
    parts: JudgeParts
    given: bool


@dataclass(frozen=True)
class GivenJudge:
    """The judge factory of a scorer given its judge whole: ``factory(model, parts)`` is `judge`
    under the layers `settings` (a rate limit, a cache) and `parts` ask for. A stack `compose`
    built (`make_judge`'s judges) is composed again from its `Composition` with those parts laid
    over its own — so a run's cache replaces its cache —; any other judge is kept whole below
    them, without retries (``given=True``). The model string is the judge's own."""

    judge: Judge
    settings: JudgeSettings = JudgeSettings()

    def __call__(self, model: str | None, parts: JudgeParts | None = None) -> Judge:
        cache = self.settings.cache
        mine = JudgeParts(rate_limit=self.settings.rate_limit, cache=cache, refresh=self.settings.refresh)
        added = (parts or JudgeParts()).over(mine)
        if added == JudgeParts():
            return self.judge  # nothing to add: the judge as it was given
        built = getattr(self.judge, "composition", None)
        if not isinstance(built, Composition):
            return compose(self.judge, None, added, given=True)
        return compose(built.provider, built.settings, added.over(built.parts), given=built.given)

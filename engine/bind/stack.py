"""Building a judge: one factory composing the layers over a provider judge.

Every judge has one async method, ``ask(call) -> JudgeAnswer`` (`engine.judge.call`). The judge
`make_judge` builds is a stack of layers with that interface, outermost first:

    CachedJudge        engine.judge.cache.layer  answers already given, served (only with cache=)
    RateLimitedJudge   engine.judge.rate_limit   a token per call (only with rate_limit=)
    RetryingJudge      engine.judge.retries      transport failures repeated and counted
    provider judge     engine.judge.provider     one try through instructor: schema, re-asks
                       (engine.judge.clients for hosted models, engine.embedded.judge for embedded)

`layered` puts the layers over any provider judge; the cache is outside the rate limit, so a hit
costs no token (`with_rate_limit` puts a limiter below a cache layer). What an answer must
satisfy travels with each call (`engine.judge.contract`); model strings and their checks are in
`engine.judge.model`.
"""

from __future__ import annotations

from ..embedded.judge import make_local_judge
from ..judge.cache.layer import CachedJudge, CacheSetting, open_cache
from ..judge.call import Judge, JudgeAnswer, JudgeCall, JudgeLayer, TransportFailure
from ..judge.clients import hosted_judge, parse_mode
from ..judge.contract import AnswerContract, AnswerInvalid
from ..judge.model import DEFAULT_MODEL, LOCAL_PREFIXES, ModelError, check_model, is_local, resolve_model
from ..judge.provider import InstructorJudge
from ..judge.rate_limit import RateLimitedJudge, RateLimiter
from ..judge.recipe import JudgeRecipe
from ..judge.retries import RetryingJudge, RetryPolicy

# a local model has no transport to fail; a small budget for transient binding errors
LOCAL_RETRY = RetryPolicy(max_retries=1, base_s=0.1)


def make_judge(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    mode: str | None = None,
    timeout_s: float = 120.0,
    retry: RetryPolicy | None = None,
    context_window: int | None = None,
    rate_limit: float | RateLimiter | None = None,
    cache: CacheSetting = None,
    refresh: bool = False,
) -> Judge:
    """Build the judge for a model string: the provider judge under the layers (see `layered`).

    model: ``provider/model``, ``local``, ``local-tiny`` or ``llamacpp/PATH.gguf``
    (`engine.judge.model`). base_url/api_key: for an OpenAI-compatible server or the provider.
    mode (or ``SCORESPEC_MODE``): instructor's structured-output mode, e.g. ``json_schema`` or
    ``md_json`` for servers without tool calls. timeout_s: per-request timeout, seconds.
    retry: the transport retry policy (default `RetryPolicy()`, `LOCAL_RETRY` for embedded
    models). context_window: tokens for prompt + answer, 0 = no check (`engine.judge.window`).
    rate_limit: requests per second, or a `RateLimiter` shared with other judges.
    cache: the judge-call cache (`engine.judge.cache.layer.open_cache`: True for the default
    cache, a file path, a ``redis://`` URL, a `JudgeCache`; None or False for none); refresh: ask every call again and
    overwrite its entry. The provider judge keeps these settings but the key as its ``recipe``
    (`engine.judge.recipe.JudgeRecipe`), which builds it again in another process. Raises
    `ModelError` (a `ValueError`) for a model string that cannot work here, `ValueError` for a
    bad mode or window, `engine.embedded.llama.LocalJudgeError` for a missing embedded model.
    """
    check_model(model)
    recipe = JudgeRecipe.of(model, base_url=base_url, mode=mode, timeout_s=timeout_s, retry=retry,
                            context_window=context_window)
    if is_local(model):
        provider: Judge = make_local_judge(model, mode=mode, context_window=context_window)
        retry = retry or LOCAL_RETRY
    else:
        provider = hosted_judge(model, base_url=base_url, api_key=api_key, mode=mode, timeout_s=timeout_s,
                                context_window=context_window)
    try:
        provider.recipe = recipe  # how to build it again in another process (`engine.judge.recipe`)
    except AttributeError:  # a provider object that takes no attributes: it cannot be rebuilt elsewhere
        pass
    return layered(provider, retry=retry, rate_limit=rate_limit, cache=cache, refresh=refresh)


def layered(provider: Judge, *, retry: RetryPolicy | None = None,
            rate_limit: float | RateLimiter | None = None, cache: CacheSetting = None,
            refresh: bool = False) -> Judge:
    """`provider` under the layers, innermost first: transport retries (`retry`, default
    `RetryPolicy()`), the rate limit (when `rate_limit` is given), the judge-call cache (when
    `cache` names one; see `make_judge`)."""
    judge: Judge = RetryingJudge(provider, retry)
    if rate_limit is not None:
        judge = with_rate_limit(judge, rate_limit)
    store = open_cache(cache)
    if store is not None:
        judge = CachedJudge(judge, store, refresh=refresh)
    return judge


def with_rate_limit(judge: Judge, rate_limit: float | RateLimiter) -> Judge:
    """`judge` whose calls each first take a token from `rate_limit` (requests per second, or a
    `RateLimiter` several judges share, or any object with an async ``acquire()``, such as the Ray
    executor's cluster-wide limiter). Any judge may be wrapped, e.g. a scorer's own:
    ``scorer.with_judge(with_rate_limit(scorer.judge, limiter))``. A judge whose outer layer is
    a cache gets the limit below the cache, so a cache hit takes no token."""
    limiter = rate_limit if hasattr(rate_limit, "acquire") else RateLimiter(rate_limit)
    if isinstance(judge, CachedJudge):
        return judge.over(with_rate_limit(judge.inner, limiter))
    return RateLimitedJudge(judge, limiter)


__all__ = ["make_judge", "layered", "with_rate_limit", "Judge", "JudgeCall", "JudgeAnswer", "JudgeLayer",
           "AnswerContract", "AnswerInvalid", "TransportFailure", "RetryPolicy", "RetryingJudge", "RateLimiter",
           "RateLimitedJudge", "ModelError", "check_model", "resolve_model", "DEFAULT_MODEL", "LOCAL_PREFIXES",
           "LOCAL_RETRY", "InstructorJudge", "parse_mode", "CachedJudge", "open_cache"]

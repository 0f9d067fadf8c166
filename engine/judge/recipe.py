"""A judge as values: how `engine.bind.stack.make_judge` built it, so another process builds it again.

A Ray actor cannot be handed a live judge (its HTTP clients belong to one process and one event
loop). `make_judge` records on every provider judge it builds a `JudgeRecipe` — the model string
and its settings as they were resolved where it was built (`engine.judge.settings.JudgeSettings.
resolved`: the endpoint and mode the environment gave, made explicit) — and
``make_judge(recipe.model, **recipe.keywords())`` makes the same judge again anywhere. API keys
are never in a recipe: the process that builds the judge reads its own environment (the
provider's key variable, ``OPENAI_API_KEY``, …).

`judge_recipe` finds the recipe under a judge's layers; `cache_setting` says which judge-call
cache its outer cache layer uses, as a value that names the same cache elsewhere: a Redis cache
itself (one server for every machine), ``True`` for the default SQLite file (each machine's own),
or a SQLite file's path (that path on each machine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cache.layer import CachedJudge
from .jury import JurorJudges
from .retries import RetryPolicy
from .settings import JudgeSettings

__all__ = ["JudgeRecipe", "cache_setting", "judge_recipe"]


@dataclass(frozen=True)
class JudgeRecipe:
    """`make_judge`'s arguments for one judge (see the module docstring): `model` (``provider/
    model``, ``local``…), `base_url`, `mode` (instructor's structured-output mode, None: the
    provider's default), `timeout_s`, `retry` (None: `RetryPolicy()`, or `LOCAL_RETRY` for an
    embedded model), `context_window`, and how a reasoning model is asked: `family` and
    `reasoning_tokens` (None: the spec's, else the table's; `engine.judge.model_params`). Picklable."""

    model: str
    base_url: str | None = None
    mode: str | None = None
    timeout_s: float = 120.0
    retry: RetryPolicy | None = None
    context_window: int | None = None
    family: str | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def of(cls, settings: JudgeSettings) -> "JudgeRecipe":
        """The recipe of a judge built from `settings`, resolved (`JudgeSettings.resolved`: the
        endpoint and mode the environment gave already made explicit), so a judge built again
        elsewhere asks the same server the same way. Raises `ValueError` for settings without a
        model."""
        if not settings.model:
            raise ValueError("a judge recipe needs the model its settings resolved")
        return cls(settings.model, settings.base_url, settings.mode, settings.timeout_s, settings.retry,
                   settings.context_window, settings.family, settings.reasoning_tokens)

    def keywords(self) -> dict[str, Any]:
        """`make_judge`'s keyword arguments besides the model: ``make_judge(r.model,
        **r.keywords(), cache=…)`` builds the judge again."""
        return {"base_url": self.base_url, "mode": self.mode, "timeout_s": self.timeout_s, "retry": self.retry,
                "context_window": self.context_window, "family": self.family,
                "reasoning_tokens": self.reasoning_tokens}


def judge_recipe(judge: Any) -> JudgeRecipe | None:
    """The recipe `make_judge` recorded on `judge`'s provider (found under its layers), or None
    for a judge it did not build (a test double, a user's own judge)."""
    layer = judge
    while layer is not None:
        recipe = getattr(layer, "recipe", None)
        if isinstance(recipe, JudgeRecipe):
            return recipe
        layer = getattr(layer, "inner", None)
    return None


def cache_setting(judge: Any) -> tuple[Any, bool]:
    """(the cache `judge`'s outer cache layer uses, as a value naming it on another machine;
    its refresh flag) — (None, False) without a cache layer. See the module docstring."""
    if isinstance(judge, JurorJudges):  # a jury's: the scorer's own judge's cache, which every juror shares
        judge = judge.inner
    if not isinstance(judge, CachedJudge):
        return None, False
    store = judge.cache
    from .cache.sqlite_backend import SQLiteJudgeCache

    if isinstance(store, SQLiteJudgeCache):
        from .cache.base import default_cache_path

        return (True if store.path == default_cache_path() else str(store.path)), judge.refresh
    return store, judge.refresh

"""How a scorer's judge is built and layered, as one frozen value.

`JudgeSettings` gathers what `engine.bind.stack.make_judge` and `engine.bind.load.load_scorer`
take about the judge: the model and how to reach it (provider layer), the transport retries, the
rate limit and the judge-call cache. The API key is kept out of its ``repr`` and out of anything
stored: a pickled copy (e.g. sent to another process) and `stored` leave it out, so the process
that builds the judge there reads its own environment (``OPENAI_API_KEY``, …).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .cache.layer import CacheSetting
from .retries import RetryPolicy
from .secret import Secret

__all__ = ["DEFAULT_TIMEOUT_S", "JudgeSettings"]

#: Seconds a judge request may take before it counts as a transport failure, by default.
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class JudgeSettings:
    """The settings of one judge (all optional; the defaults build the default judge).

    - model: ``provider/model``, ``local``, ``local-tiny`` or ``llamacpp/PATH.gguf``
      (`engine.judge.model`); None: ``$SCORESPEC_MODEL``, else the spec's, else ``local``.
    - base_url, api_key: an OpenAI-compatible server and its key (None: the provider's
      environment variables). The key is held as a `engine.judge.secret.Secret`, so neither
      ``repr`` nor `dataclasses.asdict` shows it; never stored (see the module).
    - mode: instructor's structured-output mode (``tools``, ``json_schema``, ``md_json``…; None:
      ``$SCORESPEC_MODE``, else per provider).
    - timeout_s: per-request timeout, seconds (> 0; default 120).
    - retry: the transport retry policy (None: `RetryPolicy()`, fewer for embedded models).
    - context_window: tokens for prompt and answer (None: ``$SCORESPEC_CONTEXT_WINDOW``, else
      known per model; 0: no check; `engine.judge.window`).
    - rate_limit: requests per second (> 0), or a limiter shared with other judges (any object
      with an async ``acquire()``, e.g. `engine.judge.rate_limit.RateLimiter`); None: no limit.
    - cache: the judge-call cache (`engine.judge.cache.layer.open_cache`: True for the default,
      a file path, a ``redis://`` URL, a `JudgeCache`; None or False: none); refresh: with a
      cache, ask every call again and overwrite its entry.

    Raises `ValueError` for a timeout that is not > 0, a base URL without ``http://`` or
    ``https://``, or a rate limit number that is not > 0.
    """

    model: str | None = None
    base_url: str | None = None
    api_key: Secret | None = field(default=None, repr=False)  # a str given is held as a Secret
    mode: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    retry: RetryPolicy | None = None
    context_window: int | None = None
    rate_limit: Any = None
    cache: CacheSetting = None
    refresh: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", Secret(self.api_key))
        if self.timeout_s is None:
            object.__setattr__(self, "timeout_s", DEFAULT_TIMEOUT_S)
        if not (isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a number of seconds > 0, not {self.timeout_s!r}")
        url = self.base_url
        if url is not None and not (isinstance(url, str) and url.strip().lower().startswith(("http://", "https://"))):
            raise ValueError(f"base_url must be an http:// or https:// URL (such as http://localhost:8000/v1), "
                             f"not {url!r}")
        limit = self.rate_limit
        if limit is not None and not hasattr(limit, "acquire") and not (
                isinstance(limit, (int, float)) and limit > 0):
            raise ValueError(f"rate_limit must be requests per second > 0 or a shared limiter, not {limit!r}")

    @classmethod
    def of(cls, settings: "JudgeSettings | None") -> "JudgeSettings":
        """`settings`, or the defaults for None. Raises `TypeError` for anything else (a dict, a
        `RunSettings`…), naming what was given."""
        if settings is None:
            return cls()
        if not isinstance(settings, cls):
            raise TypeError(f"judge settings must be a {cls.__name__} (or None), not {type(settings).__name__}: "
                            f"{settings!r}"[:300])
        return settings

    def replace(self, **changes: Any) -> "JudgeSettings":
        """These settings with `changes` (field names as keywords). Raises `TypeError` for a
        name that is not a field, `ValueError` as the constructor does."""
        return dataclasses.replace(self, **changes)

    def stored(self) -> dict[str, Any]:
        """The settings as a mapping of field → value, without the API key (for records and logs)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "api_key"}

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without the API key (see the module)."""
        return (_rebuilt, (self.stored(),))


def _rebuilt(values: dict[str, Any]) -> JudgeSettings:
    return JudgeSettings(**values)

"""How a scorer's judge is built and layered, as one frozen value.

`JudgeSettings` gathers what `engine.bind.stack.make_judge` and `engine.bind.load.load_scorer`
take about the judge: the model and how to reach it (provider layer), the transport retries, the
rate limit and the judge-call cache. The API key is kept out of its ``repr`` and out of anything
stored: a pickled copy (e.g. sent to another process) and `stored` leave it out, so the process
that builds the judge there reads its own environment (``OPENAI_API_KEY``, …).

`JudgeSettings.resolved` decides every choice once, with one precedence: what the caller gives
(the CLI's flags, ``load_scorer``'s arguments) > the spec (its ``judge.model``) > the environment
(`engine.core.environment`) > the default. ``$SCORESPEC_MODEL`` stands for the caller's model, so
for the model it comes before the spec's. The resolved settings are what the judge is built from,
what its recipe records (`engine.judge.recipe`) and what another process builds it again from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..core import environment
from ..core.environment import ENDPOINT_VARIABLES, KEY_VARIABLES
from .cache.layer import CacheSetting
from .model import is_local, resolve_model
from .retries import RetryPolicy
from .secret import Secret
from .window import configured_window

__all__ = ["DEFAULT_TIMEOUT_S", "OLLAMA_DEFAULT_URL", "JudgeSettings"]

#: Seconds a judge request may take before it counts as a transport failure, by default.
DEFAULT_TIMEOUT_S = 120.0
#: The endpoint of ``ollama/…`` models when neither ``base_url`` nor ``$OLLAMA_BASE_URL`` gives one.
OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"


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
    - family: what the model accepts in a request, ``chat``, ``reasoning`` or ``thinking``
      (`engine.judge.model_params`; None: the spec's ``judge.family``, else
      ``$SCORESPEC_MODEL_FAMILY``, else the table's, else ``chat``).
    - reasoning_tokens: the reasoning budget (tokens > 0) added to each stage's ``max_tokens`` for a
      reasoning model (None: the spec's ``judge.reasoning_tokens``, else
      `engine.judge.model_params.DEFAULT_REASONING_TOKENS`).
    - jury: a panel of two or more distinct model strings (a tuple, or text with commas) asking every
      prompt stage instead of one judge (`engine.spec.jury.with_jury`); None: the spec's
      ``judge.jury``, else ``$SCORESPEC_JURY``, else one judge. jury_min: the fewest jurors that
      must answer (1..jurors; None: the spec's ``min_successful``, else ``$SCORESPEC_JURY_MIN``
      with that jury, else more than half). Each juror's judge is built from these settings with its
      model (`engine.bind.stack.make_judge`).

    Raises `ValueError` for a timeout that is not > 0, a base URL without ``http://`` or
    ``https://``, a rate limit number that is not > 0, an unknown family, a budget that is not a
    whole number > 0, a jury of fewer than two distinct models or a jury minimum outside 1..jurors.
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
    family: str | None = None
    reasoning_tokens: int | None = None
    jury: tuple[str, ...] | None = None
    jury_min: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "jury", _jurors(self.jury))
        _check_jury_min(self.jury_min, self.jury)
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", Secret(self.api_key))
        if self.timeout_s is None:
            object.__setattr__(self, "timeout_s", DEFAULT_TIMEOUT_S)
        if not (isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a number of seconds > 0, not {self.timeout_s!r}")
        url = self.base_url
        if url is not None and not _is_http(url):
            raise ValueError(f"base_url must be an http:// or https:// URL (such as http://localhost:8000/v1), "
                             f"not {url!r}")
        limit = self.rate_limit
        if limit is not None and not hasattr(limit, "acquire") and not (
                isinstance(limit, (int, float)) and limit > 0):
            raise ValueError(f"rate_limit must be requests per second > 0 or a shared limiter, not {limit!r}")
        if self.family is not None or self.reasoning_tokens is not None:
            from .model_params import shape_for

            shape_for("", self.family, self.reasoning_tokens)  # raises ValueError naming the bad one

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

    def resolved(self, spec_model: str | None = None, spec_jury: tuple[str, ...] | None = None) -> "JudgeSettings":
        """These settings with every choice made (see the module for the precedence):

        - model: this one > ``$SCORESPEC_MODEL`` > `spec_model` > ``local``;
        - for a hosted model, mode: this one > ``$SCORESPEC_MODE`` > None (per provider), and
          base_url: this one > the provider's endpoint variable (``OPENAI_BASE_URL``,
          ``ANTHROPIC_BASE_URL``, ``OLLAMA_BASE_URL``; `engine.core.environment.ENDPOINT_VARIABLES`)
          > for ``ollama/…`` `OLLAMA_DEFAULT_URL` > None (the provider's own API);
        - context_window: this one > ``$SCORESPEC_CONTEXT_WINDOW`` > None (known per model);
        - jury: this one > `spec_jury` (the models the spec's jury names) > ``$SCORESPEC_JURY`` >
          None; jury_min: this one > ``$SCORESPEC_JURY_MIN`` with the environment's jury > None (the
          spec's, else more than half); with a jury and no model given anywhere, the model (asked
          for a judge-written reason) is the first juror.

        The key stays as given (None: the provider's key variable, `key_variable`, read when the
        client is built). Resolving resolved settings changes nothing. Raises `ValueError` for a
        context window that is not a whole number ≥ 0 or an endpoint variable that is not an
        http(s) URL, naming the variable it came from, and for a jury variable that names fewer than two
        models or a minimum that is not a whole number in 1..jurors."""
        jury, jury_min = self.jury or spec_jury, self.jury_min
        if jury is None:
            jury = _jurors(environment.value("SCORESPEC_JURY"), "$SCORESPEC_JURY")
            if jury is not None and jury_min is None:
                jury_min = _env_min(jury)
        model = resolve_model(self.model, spec_model)
        if jury and not (self.model or environment.value("SCORESPEC_MODEL") or spec_model):
            model = jury[0]
        mode, base_url = self.mode, self.base_url
        if not is_local(model):
            provider = model.split("/", 1)[0]
            mode = mode or environment.value("SCORESPEC_MODE")
            variable = ENDPOINT_VARIABLES.get(provider)
            if base_url is None and variable is not None:
                base_url = environment.value(variable)
                if base_url is not None and not _is_http(base_url):
                    raise ValueError(f"${variable}={base_url!r}: expected an http:// or https:// URL (such as "
                                     "http://localhost:8000/v1)")
            if base_url is None and provider == "ollama":
                base_url = OLLAMA_DEFAULT_URL
        return dataclasses.replace(self, model=model, mode=mode, base_url=base_url, jury=jury, jury_min=jury_min,
                                   context_window=configured_window(self.context_window))

    @property
    def key_variable(self) -> str | None:
        """The environment variable the API key is read from when none is given (``OPENAI_API_KEY``
        for ``openai/…``; `engine.core.environment.KEY_VARIABLES`), None when scorespec reads none
        (embedded models, ``ollama/…``, providers whose clients read their own)."""
        if not self.model or is_local(self.model):
            return None
        return KEY_VARIABLES.get(self.model.split("/", 1)[0])

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


def _jurors(given: Any, where: str = "jury") -> tuple[str, ...] | None:
    """A jury's models as a tuple (text split at commas, blanks dropped, each named once); None for
    none. Raises `ValueError` for fewer than two models or one that is not text."""
    if given is None:
        return None
    items = given.split(",") if isinstance(given, str) else list(given)
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"{where}: model strings are needed, not {given!r}")
    models = tuple(dict.fromkeys(item.strip() for item in items if item.strip()))
    if len(models) < 2:
        raise ValueError(f"{where}: a jury needs two or more distinct models (e.g. openai/gpt-4o-mini,"
                         f"anthropic/claude-3-5-haiku-latest), not {given!r}")
    return models


def _check_jury_min(minimum: Any, jury: tuple[str, ...] | None, where: str = "jury_min") -> None:
    if minimum is None:
        return
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1 or (jury and minimum > len(jury)):
        most = f" to the {len(jury)} jurors" if jury else " or more"
        raise ValueError(f"{where}: the fewest jurors that must answer is a whole number from 1{most}, not {minimum!r}")


def _env_min(jury: tuple[str, ...]) -> int | None:
    text = environment.value("SCORESPEC_JURY_MIN")
    if text is None:
        return None
    try:
        minimum = int(text)
    except ValueError:
        raise ValueError(f"$SCORESPEC_JURY_MIN={text!r}: expected a whole number") from None
    _check_jury_min(minimum, jury, "$SCORESPEC_JURY_MIN")
    return minimum


def _is_http(url: Any) -> bool:
    return isinstance(url, str) and url.strip().lower().startswith(("http://", "https://"))

"""How a batch run runs: `RunSettings`, one frozen object instead of a long keyword list.

`engine.run.evals.arun_evals`, `engine.analysis.calibration.acalibrate` and
`engine.analysis.compare.acompare` take one (their keyword arguments build it:
`RunSettings.build`). A run records its settings whole in the store (``config["settings"]``,
`RunSettings.to_json_dict`) and ``--resume`` reads them back whole (`RunSettings.from_stored`,
which also reads the CLI's argument list that runs recorded before, ``config["cli"]``).

The executor is chosen through the `Executor` protocol (`engine.run.executor`): ``"local"``
(this process, the default) or an object implementing it, such as
`engine.ray.runner.RayExecutor`; the facade `engine.api` turns ``executor="ray"`` into one.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..core.language import check_language

__all__ = ["RESUMED_FIELDS", "RUN_RESUMED_FIELDS", "RunSettings"]

#: The settings a resumed run takes from the stored run when the resuming call does not give them
#: (a setting the call gives wins). The others belong to each attempt: concurrency, rate limit,
#: budget (``max_cost``: what earlier attempts spent counts against it), ``limit`` (the first
#: `limit` items of this attempt), cache and refresh.
RESUMED_FIELDS = ("fields", "thresholds", "samples", "prices", "executor", "ray", "item_cutoffs", "language")

#: The ones `engine.run.evals.arun_evals` fills itself: all but the executor and the Ray settings,
#: which are resolved before the run starts (the CLI reads them back; in Python give them again).
RUN_RESUMED_FIELDS = tuple(name for name in RESUMED_FIELDS if name not in ("executor", "ray"))

#: The Ray settings the CLI recorded one by one before settings were stored whole.
_OLD_RAY_KEYS = {"ray_address": "address", "actors": "actors", "cpus_per_actor": "cpus_per_actor"}


def _frozen(value: Any) -> Any:
    """A list given for a setting kept as a tuple (the settings are immutable)."""
    if isinstance(value, Mapping) or value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return tuple(value)
    return value


@dataclass(frozen=True)
class RunSettings:
    """The settings of one batch run (every field optional).

    concurrency: scorer runs at once (≥ 1; None: 8, or the slots of an embedded model; per actor
    on Ray). rate_limit: judge requests per second (None or 0: no limit). thresholds: ``{label: limit |
    (min, max)}`` or ``["LABEL=limit", "LABEL=min:max"]`` (`engine.run.summary.parse_thresholds`).
    fields: ``{"output": "answer"}`` or ``["output=answer"]``. samples: ask every prompt stage that
    can be sampled this many times (1..50; None: as each spec says). prices: a `PriceTable`, a
    price file, None for the default table, False for no cost. max_cost: a budget in US dollars
    (> 0). limit: score only the first `limit` readable items (≥ 1). executor: None or ``"local"``
    (this process), ``"ray"`` (resolved by `engine.api`), or an `engine.run.executor.Executor`.
    ray: the Ray settings (`engine.ray.cluster.RayOptions` or a mapping of its fields). cache: the
    judge-call cache every scorer's judge uses (True, a path, a ``redis://`` URL, a `JudgeCache`,
    False for none; None: as each scorer was built). refresh: with `cache`, ask every call again.
    out: the JSONL out file. resume: continue the run of `out` (or of `run_id`). run_id: the id
    of a new run, or of the run to resume. item_cutoffs: ``{label or scorer id: score}``: an item
    scored worse than its scorer's cut-off (by the direction) makes the verdict ``below_threshold``.
    language: the items' language for every scorer, ``"auto"`` (detected per item) or an ISO 639-1
    code in any case, kept in lower case (None: as each scorer was built, ``auto`` unless given);
    an item's own ``language`` field wins.

    The numbers are checked when the settings are built: `TypeError` for concurrency, limit or
    samples that is not an int (a bool is none), or rate_limit / max_cost that is not a number;
    `ValueError` for concurrency or limit < 1, samples outside 1..50, rate_limit or max_cost not
    > 0 (or not finite), and `engine.core.language.LanguageError` (a `ValueError`) for a language
    that is neither ``auto`` nor an ISO 639-1 code. The rest is checked where the run uses it (`engine.run.evals.arun_evals`
    lists the errors).
    """

    concurrency: int | None = None
    rate_limit: float | None = None
    thresholds: Mapping[str, Any] | tuple[str, ...] | None = None
    fields: Mapping[str, str] | tuple[str, ...] | None = None
    samples: int | None = None
    prices: Any = None
    max_cost: float | None = None
    limit: int | None = None
    executor: Any = None
    ray: Any = None
    cache: Any = field(default=None, compare=False)
    refresh: bool = False
    out: str | os.PathLike[str] | None = None
    resume: bool = False
    run_id: str | None = None
    item_cutoffs: Mapping[str, float] | None = None
    language: str | None = None

    def __post_init__(self) -> None:
        if self.language is not None:
            object.__setattr__(self, "language", check_language(self.language))
        for name in ("thresholds", "fields"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        if self.rate_limit == 0 and not isinstance(self.rate_limit, bool):  # 0 has always meant no limit
            object.__setattr__(self, "rate_limit", None)
        _check_numbers(self)

    @classmethod
    def build(cls, settings: RunSettings | None = None, **changes: Any) -> RunSettings:
        """`settings` (default: the defaults) with `changes` laid over it. Raises `TypeError`
        for `settings` that is not a `RunSettings` (e.g. a dict, or another settings class) and
        for a keyword that is no setting, as a function would for an unknown argument; the
        errors of the constructor for a bad value."""
        if settings is not None and not isinstance(settings, cls):
            raise TypeError(f"run settings must be a {cls.__name__} (or None), not {type(settings).__name__}: "
                            f"{settings!r}"[:300])
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        base = settings if settings is not None else cls()
        return dataclasses.replace(base, **changes) if changes else base

    @property
    def executor_name(self) -> str:
        """``"local"``, ``"ray"``, or the name an `Executor` object gives itself."""
        if self.executor is None or isinstance(self.executor, str):
            return self.executor or "local"
        return str(getattr(self.executor, "name", type(self.executor).__name__))

    def to_json_dict(self) -> dict[str, Any]:
        """The settings as JSON for the store: every field whose value has a JSON form (a price
        table or cache object given as an object, and an executor object, are kept by name or
        left out). `from_json_dict` reads it back."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "executor":
                value = value if value is None or isinstance(value, str) else self.executor_name
            elif f.name == "ray":
                value = _ray_json(value)
            elif isinstance(value, os.PathLike) or f.name == "prices" and isinstance(value, str):
                value = str(Path(value).resolve())
            elif f.name == "cache" and not isinstance(value, (str, bool, type(None))):
                value = None
            elif f.name == "prices" and not isinstance(value, (bool, type(None))):
                value = None
            elif isinstance(value, Mapping):
                value = {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> RunSettings:
        """Settings from `to_json_dict`'s JSON (keys it does not know are ignored)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if isinstance(values.get("thresholds"), Mapping):
            values["thresholds"] = {k: tuple(v) if isinstance(v, list) else v for k, v in values["thresholds"].items()}
        return cls(**values)

    @classmethod
    def from_stored(cls, config: Mapping[str, Any] | None) -> RunSettings:
        """The settings a stored run recorded (its ``config``): ``config["settings"]``, or for a
        run recorded before settings were stored whole, what the CLI recorded of them in
        ``config["cli"]`` (fields, thresholds, samples, prices, limit, executor and the Ray flags
        ray_address, actors, cpus_per_actor). No settings recorded: the defaults."""
        config = config or {}
        if isinstance(config.get("settings"), Mapping):
            return cls.from_json_dict(config["settings"])
        cli = config.get("cli") or {}
        ray = {new: cli[old] for old, new in _OLD_RAY_KEYS.items() if cli.get(old) is not None}
        return cls(fields=cli.get("fields") or None, thresholds=cli.get("thresholds") or None,
                   samples=cli.get("samples"), prices=cli.get("prices"), limit=cli.get("limit"),
                   executor=cli.get("executor"), ray=ray or None)

    def resumed_from(self, stored: RunSettings, names: Iterable[str] = RESUMED_FIELDS) -> RunSettings:
        """These settings with what they leave unset (None or empty; False is a value) among
        `names` (default `RESUMED_FIELDS`) taken from `stored`, the settings the run recorded:
        a setting given here wins; the Ray settings are merged key by key, these winning."""
        changes: dict[str, Any] = {}
        for name in names:
            mine, theirs = getattr(self, name), getattr(stored, name)
            if name == "ray" and isinstance(mine, Mapping) and isinstance(theirs, Mapping):
                changes[name] = {**theirs, **mine}
            elif not mine and mine is not False:
                changes[name] = theirs
        return dataclasses.replace(self, **changes)


#: The largest ``samples`` (as `engine.spec.models.MAX_SAMPLES`).
_MAX_SAMPLES = 50


def _check_numbers(settings: RunSettings) -> None:
    """`TypeError` / `ValueError` for a numeric setting of the wrong type or out of its range
    (the messages the run gives when it meets the value)."""
    for name in ("concurrency", "limit"):
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int ≥ 1, not {type(value).__name__}: {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be ≥ 1, not {value}")
    samples = settings.samples
    if samples is not None:
        message = f"samples: an integer from 1 to {_MAX_SAMPLES} is needed, got {samples!r}"
        if isinstance(samples, bool) or not isinstance(samples, int):
            raise TypeError(message)
        if not 1 <= samples <= _MAX_SAMPLES:
            raise ValueError(message)
    for name, message in (("rate_limit", "rate_limit must be requests per second > 0, not {!r}"),
                          ("max_cost", "max_cost: a positive number of US dollars is needed, got {!r}")):
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(message.format(value))
        if not math.isfinite(value) or value <= 0:
            raise ValueError(message.format(value))


def _ray_json(value: Any) -> Any:
    if value is None or isinstance(value, Mapping):
        return None if value is None else dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return None

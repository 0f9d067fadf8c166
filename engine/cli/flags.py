"""The flag groups of the batch commands, each declared once, and the one function that turns
them into a run's settings (`build_settings`: `RunSettings` and `JudgeSettings`).

A group is a class whose annotated attributes are typer options (`engine.cli.options`): `JudgeFlags`
(which judge, the scorers' options, the judge-call cache), `RunFlags` (the run's fields,
concurrency, rate limit, item limit, samples, language, prices, budget), `RayRunFlags`
(``eval``: those and the executor with its Ray flags), `OutFlags` (``--out``, ``--resume``) and
`StoredRunFlags` (those and ``--run-id``). A command declares a parameter of a group's type and
`with_flag_groups` gives typer the group's flags in its place, then calls the command with the
group built, e.g.::

    @app.command("calibrate")
    @with_flag_groups
    def calibrate_cmd(scorer: ..., judge: JudgeFlags, run: RunFlags, out: OutFlags, ...) -> None:
        run_settings, judge_settings = build_settings(judge, run, out)

So every batch command has every run flag, with one name, help text and range. Importing this
module imports only typer and `engine.cli.options`.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from .options import (
    ACTORS_HELP,
    CPUS_PER_ACTOR_HELP,
    EXECUTOR_HELP,
    RAY_ADDRESS_HELP,
    BaseUrl,
    Cache,
    Concurrency,
    Fields,
    Jury,
    JuryMin,
    Language,
    Limit,
    LocalConcurrency,
    MaxCost,
    Model,
    NoCache,
    Options,
    Out,
    Prices,
    RateLimit,
    Refresh,
    Resume,
    ResumeOut,
    RunId,
    Samples,
)

if TYPE_CHECKING:
    from ..judge.settings import JudgeSettings
    from ..run.settings import RunSettings

__all__ = ["FlagGroup", "JudgeFlags", "OutFlags", "RAY_FLAGS", "RayRunFlags", "RunFlags", "StoredRunFlags",
           "build_settings", "with_flag_groups"]

#: The Ray flags by `engine.ray.cluster.RayOptions` field.
RAY_FLAGS = {"address": "--ray-address", "actors": "--actors", "cpus_per_actor": "--cpus-per-actor"}


class FlagGroup:
    """A group of flags several commands share: each annotated class attribute is a flag (its
    annotation a typer option, its value the default), a subclass adding flags or changing one's
    option in place. Instances are immutable; ``Group(name=value, …)`` sets some, the others keep
    their defaults (a list default is copied). Plain classes rather than dataclasses: building a
    dataclass costs more than the whole of this module, and `scorespec run` imports it."""

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(self.names()))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected flag(s): {', '.join(unknown)}")
        for name in self.names():
            default = getattr(type(self), name)
            object.__setattr__(self, name, values[name] if name in values else
                               list(default) if isinstance(default, list) else default)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: use replace()")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @classmethod
    def names(cls) -> list[str]:
        """The group's flags by attribute name, in declaration order (a base's first)."""
        found: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            found.update(dict.fromkeys(vars(klass).get("__annotations__", {})))
        return list(found)

    def replace(self, **changes: Any) -> Any:
        """A copy with `changes` laid over these values."""
        return type(self)(**{**vars(self), **changes})


class JudgeFlags(FlagGroup):
    """Which judge the scorers ask, their ``--option`` values, and the judge-call cache."""

    model: Model = None
    base_url: BaseUrl = None
    jury: Jury = None
    jury_min: JuryMin = None
    option: Options = []
    cache: Cache = None
    no_cache: NoCache = False
    refresh: Refresh = False


class RunFlags(FlagGroup):
    """How a batch run runs, the same on every batch command (`RunSettings`' fields)."""

    field: Fields = []
    concurrency: LocalConcurrency = None
    rate_limit: RateLimit = None
    limit: Limit = None
    samples: Samples = None
    language: Language = None
    prices: Prices = None
    max_cost: MaxCost = None


class RayRunFlags(RunFlags):
    """`RunFlags` with the executor: ``--executor local|ray`` and its Ray flags."""

    concurrency: Concurrency = None
    executor: Annotated[Optional[str], typer.Option("--executor", metavar="local|ray", help=EXECUTOR_HELP)] = None
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", metavar="ADDR", help=RAY_ADDRESS_HELP)] = None
    actors: Annotated[Optional[int], typer.Option("--actors", min=1, help=ACTORS_HELP)] = None
    cpus_per_actor: Annotated[Optional[float], typer.Option("--cpus-per-actor", min=0.01,
                                                            help=CPUS_PER_ACTOR_HELP)] = None

    def ray(self) -> dict[str, Any]:
        """The Ray flags given, by `engine.ray.cluster.RayOptions` field."""
        given = {"address": self.ray_address, "actors": self.actors, "cpus_per_actor": self.cpus_per_actor}
        return {name: value for name, value in given.items() if value is not None}


class OutFlags(FlagGroup):
    """The run's out file, and continuing the run it holds."""

    out: Out = None
    resume: ResumeOut = False


class StoredRunFlags(OutFlags):
    """`OutFlags` and ``--run-id``: a run resumed by its out file or by its id in the store."""

    resume: Resume = False
    run_id: RunId = None


def build_settings(judge: JudgeFlags, run: RunFlags | None = None, out: OutFlags | None = None,
                   **more: Any) -> tuple[RunSettings, JudgeSettings]:
    """The run's settings and its judge's, from the command's flag groups: the one place the CLI
    builds a `RunSettings` and a `JudgeSettings`. `more`: the command's own run settings
    (``thresholds``, …), None or empty ones left unset. The judge-call cache is opened here
    (`engine.cli.cache.command_cache`). Exits 2 for a bad ``--base-url`` or cache flags that
    contradict each other; raises what `RunSettings` raises for a bad value (`ValueError`)."""
    from ..judge.settings import JudgeSettings
    from ..run.settings import RunSettings
    from .app import fail
    from .cache import command_cache

    values: dict[str, Any] = {}
    if run is not None:
        values.update(concurrency=run.concurrency, rate_limit=run.rate_limit, fields=run.field or None,
                      samples=run.samples, prices=run.prices, max_cost=run.max_cost, limit=run.limit,
                      language=run.language)
    if isinstance(run, RayRunFlags):
        values.update(executor=run.executor, ray=run.ray() or None)
    if out is not None:
        values.update(out=out.out, resume=out.resume, run_id=getattr(out, "run_id", None))
    values.update({name: value or None for name, value in more.items()})
    cache = command_cache(judge.cache, judge.no_cache, judge.refresh)
    try:
        judge_settings = JudgeSettings(model=judge.model, base_url=judge.base_url, cache=cache, refresh=judge.refresh,
                                       jury=judge.jury or None, jury_min=judge.jury_min)
    except ValueError as exc:  # a base URL that is no http(s) URL, a jury of one
        fail(str(exc))
    return RunSettings(**values), judge_settings


def with_flag_groups(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` as typer should see it: each parameter whose type is a `FlagGroup` replaced by
    the group's flags (keyword parameters in the group's order), the group built from them
    when typer calls it. Raises `TypeError` when two parameters or groups declare one name."""
    hints = typing.get_type_hints(command, include_extras=True)
    groups: dict[str, type[FlagGroup]] = {}
    parameters: list[inspect.Parameter] = []
    for parameter in inspect.signature(command).parameters.values():
        annotation = hints.get(parameter.name, parameter.annotation)
        if isinstance(annotation, type) and issubclass(annotation, FlagGroup):
            groups[parameter.name] = annotation
            parameters += _flag_parameters(annotation)
        else:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
    names = [p.name for p in parameters]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise TypeError(f"{command.__name__}: flag(s) declared twice: {', '.join(twice)}")

    @functools.wraps(command)
    def typer_command(**values: Any) -> Any:
        for name, group in groups.items():
            values[name] = group(**{flag: values.pop(flag) for flag in group.names()})
        return command(**values)

    typer_command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    typer_command.__annotations__ = {p.name: p.annotation for p in parameters}
    return typer_command


def _flag_parameters(group: type[FlagGroup]) -> list[inspect.Parameter]:
    """The group's flags as keyword parameters with their typer annotations and defaults."""
    hints = typing.get_type_hints(group, include_extras=True)
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=getattr(group, name),
                              annotation=hints[name]) for name in group.names()]

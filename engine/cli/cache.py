"""The judge-call cache on the command line.

``scorespec cache stats`` (what the cache holds) and ``scorespec cache clear [--older-than 30d]
[--model M]`` (`cache_app`, added to the ``scorespec`` command by `engine.cli.main`), and what the
judging commands (``run``, ``eval``, ``calibrate``) share: the ``--cache PATH|URL``,
``--no-cache`` and ``--refresh`` flags' texts, `command_cache` (the cache a command uses, on by default) and
`cache_line` (one scorer's calls and cache hits, for the summaries). This module imports little
(typer); the cache itself is imported when a command runs.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

__all__ = ["CACHE_HELP", "NO_CACHE_HELP", "REFRESH_HELP", "cache_app", "cache_line", "command_cache",
           "parse_age"]

CACHE_HELP = ("Judge-call cache: a SQLite file, or a Redis server's URL (redis://host:6379/0, ?ttl=30d) "
              "[default: $SCORESPEC_CACHE_URL, else the file $SCORESPEC_CACHE_DB, else judge-cache.sqlite in "
              "$SCORESPEC_CACHE or ~/.cache/scorespec].")
NO_CACHE_HELP = "Use no judge-call cache: ask the judge for every call, store nothing."
REFRESH_HELP = "Ask the judge again for every call and overwrite its cached answer."

cache_app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The judge-call cache: what it holds (stats) and removing entries (clear).",
)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _show_cache_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                        line: Any = None, _default: Any = warnings.showwarning) -> None:
    """`warnings.showwarning` for the CLI: a `JudgeCacheWarning` as one ``warning:`` line on
    stderr (the run goes on uncached), other warnings as Python shows them."""
    from ..judge.cache.base import JudgeCacheWarning

    if issubclass(category, JudgeCacheWarning):
        typer.echo(f"warning: {message}", err=True)
    else:
        _default(message, category, filename, lineno, file, line)


def command_cache(cache: Optional[str], no_cache: bool, refresh: bool) -> Any:
    """The judge-call cache a judging command uses: None with ``--no-cache``, else the one `cache`
    names (a file path or a Redis URL) or the default (``$SCORESPEC_CACHE_URL``, else the SQLite
    file `engine.judge.cache.base.default_cache_path`; see `engine.judge.cache.layer.open_cache`),
    opened on first use. A cache that cannot be used is reported once as a ``warning:`` line and
    the command goes on uncached. Exits (2) for ``--no-cache`` given with ``--cache`` or
    ``--refresh``, a URL that is not a Redis URL, or a Redis URL without the redis client."""
    if no_cache and cache is not None:
        _fail("--cache and --no-cache: give one of them")
    if no_cache and refresh:
        _fail("--refresh asks again and overwrites the cache: it cannot go with --no-cache")
    if no_cache:
        return None
    if warnings.showwarning is not _show_cache_warning:
        warnings.showwarning = _show_cache_warning
    return _open_cache(cache)


def cache_line(scorer: str, items: int, calls: int, hits: int) -> str:
    """``faithfulness: 96 items · 0 judge calls · 288 cache hits``: `calls` requests made to the
    judge, `hits` calls answered from the cache."""
    return (f"{scorer}: {items} item{'s' if items != 1 else ''} · {calls} judge call{'s' if calls != 1 else ''} · "
            f"{hits} cache hit{'s' if hits != 1 else ''}")


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` (a number and a unit) → seconds
    (`engine.judge.cache.base.parse_duration`). Raises ValueError naming ``--older-than`` and the
    accepted forms."""
    from ..judge.cache.base import parse_duration

    try:
        return parse_duration(text or "")
    except ValueError as exc:
        raise ValueError(f"--older-than {exc}") from None


def _open_cache(cache: Optional[str]) -> Any:
    """`open_cache` for the CLI: exits (2) for a cache that cannot be named (its ValueError or
    ImportError)."""
    from ..judge.cache.layer import open_cache

    try:
        return open_cache(cache if cache is not None else True)
    except (ValueError, ImportError) as exc:
        _fail(str(exc))


@contextmanager
def _open(cache: Optional[str]) -> Iterator[Any]:
    """The cache `cache` names (None: the default), opened for `stats` and `clear`. Its warnings
    are not shown: they say a *run* goes on uncached, and these commands report the reason
    themselves (`stats` as "not usable: …", `clear` as an error). Exits (2) for a cache that cannot
    be named (`open_cache`'s ValueError or ImportError)."""
    from ..judge.cache.base import JudgeCacheWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeCacheWarning)
        with _open_cache(cache) as store:
            yield store


def _when(epoch: float | None) -> str:
    from datetime import datetime, timezone

    return "—" if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _age(seconds: float) -> str:
    """Seconds in the largest unit that divides them: ``30d``, ``12h``, ``90s``."""
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)  # pragma: no cover


@cache_app.command("stats")
def stats_cmd(
    cache: Optional[str] = typer.Option(None, "--cache", metavar="PATH|URL", help=CACHE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON on stdout."),
) -> None:
    """Where the judge-call cache is, how many answers it holds (per model), its size (on disk, or
    in a Redis server's memory), the oldest and newest entry and, for Redis, the entries' time to
    live."""
    with _open(cache) as store:
        stats = store.stats()
    if as_json:
        sys.stdout.write(json.dumps({"location": stats.location, "entries": stats.entries,
                                     "sizeBytes": stats.size_bytes, "perModel": stats.per_model,
                                     "oldest": stats.oldest, "newest": stats.newest,
                                     "disabledReason": stats.disabled_reason}, ensure_ascii=False) + "\n")
        return
    lines = [f"judge cache {stats.location}"]
    if stats.disabled_reason:
        lines.append(f"not usable: {stats.disabled_reason}")
    elif isinstance(getattr(store, "path", None), Path) and not store.path.exists():
        lines.append("empty (no file yet: the first judged run creates it)")
    else:
        ttl = getattr(store, "ttl_s", None)
        if ttl is not None:
            lines.append(f"entries expire {_age(ttl)} after they are stored")
        lines.append(f"{stats.entries} answer{'s' if stats.entries != 1 else ''} · {_size(stats.size_bytes)} · "
                     f"oldest {_when(stats.oldest)} · newest {_when(stats.newest)}")
        for model, count in sorted(stats.per_model.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {model or '(no model)'}: {count}")
    typer.echo("\n".join(lines))


@cache_app.command("clear")
def clear_cmd(
    older_than: Optional[str] = typer.Option(None, "--older-than", help="Only answers older than this: 30d, 12h, "
                                             "90m, 45s or 2w."),
    model: Optional[str] = typer.Option(None, "--model", help="Only answers of this judge model (as given to "
                                        "--model, e.g. openai/gpt-4o-mini or local)."),
    cache: Optional[str] = typer.Option(None, "--cache", metavar="PATH|URL", help=CACHE_HELP),
) -> None:
    """Remove cached judge answers: all of them, or those older than --older-than and/or of the
    judge model --model (both: those matching both)."""
    try:
        age = parse_age(older_than) if older_than is not None else None
    except ValueError as exc:
        _fail(str(exc))
    with _open(cache) as store:
        deleted = store.clear(older_than_s=age, model=model)
        reason = store.disabled_reason
        models = sorted(store.stats().per_model) if model is not None and not deleted and not reason else []
    if reason:
        _fail(f"judge cache {store.location} {reason}")
    which = []
    if age is not None:
        which.append(f"older than {older_than}")
    if model is not None:
        which.append(f"of model {model}")
    typer.echo(f"removed {deleted} cached answer{'s' if deleted != 1 else ''}"
               + (f" ({', '.join(which)})" if which else "") + f" from {store.location}")
    if models and model not in models:  # a misspelled model matches nothing: say which there are
        from ..core.errors import did_you_mean

        hint = did_you_mean(model, models)
        typer.echo(f"no cached answer is of model {model}" + (f" ({hint})" if hint else ""), err=True)

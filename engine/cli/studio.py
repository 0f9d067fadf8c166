"""``scorespec studio`` (the prompt-engineering loop on a local web page) and ``scorespec watch``
(a run on every save, in the terminal): `engine.studio`, which needs the ``studio`` extra.

Both work on the files of a folder (the studio's ``DIR``, watch's current folder): its
``scorer_specs/``, ``prompts/`` and datasets, beside the built-in catalogue; runs are kept in
that folder's store (``.scorespec/store.sqlite``, or ``--store``) and every judge call goes
through the judge-call cache (the judging commands' ``--cache`` flags), so a re-run after an edit
asks only the stages whose prompt changed.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import app, fail, parse_option_value, stderr_console
from .flags import JudgeFlags, build_settings, with_flag_groups
from .options import StorePath

_MISSING = "the studio needs its extra: pip install 'scorespec[studio]' (starlette, uvicorn, watchfiles)"


def _check_extra() -> None:
    import importlib.util

    missing = [name for name in ("starlette", "uvicorn", "watchfiles") if importlib.util.find_spec(name) is None]
    if missing:
        fail(f"{_MISSING}; missing: {', '.join(missing)}")


def _options(pairs: list[str]) -> dict[str, dict[str, Any]]:
    """``--option ID.key=value`` pairs → options by spec id (values read as JSON, else text)."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        spec_id, dot, name = key.partition(".")
        if not sep or not dot or not spec_id or not name:
            fail(f"--option {pair!r}: the studio runs many scorers: write ID.key=value (e.g. faithfulness.scale=10)")
        out.setdefault(spec_id, {})[name] = parse_option_value(value, None)
    return out


def _session(folder: Path, judge: JudgeFlags, store: Optional[Path]) -> Any:
    from ..studio.session import Session
    from ..studio.workspace import Workspace

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    _, settings = build_settings(judge)
    return Session(Workspace(folder), settings, store=store, options=_options(judge.option))


@app.command("studio")
@with_flag_groups
def studio_cmd(
    folder: Annotated[Path, typer.Argument(metavar="[DIR]", help="The folder whose scorer_specs/, prompts/ and "
                                           "datasets the page edits and runs (default: this one).")] = Path("."),
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port to serve on.")] = 8765,
    host: Annotated[str, typer.Option("--host", help="The address to serve on: another than 127.0.0.1 lets "
                                      "other machines in, so the page then needs a token (printed).")] = "127.0.0.1",
    data: Annotated[Optional[str], typer.Option("--data", metavar="FILE", help="The dataset the page opens "
                                                "with (a file of DIR).")] = None,
    judge: JudgeFlags = JudgeFlags(),
    store: StorePath = None,
) -> None:
    """Serve the prompt-engineering loop on a local page: edit a spec and its prompts (each save
    validated), render a stage for an item, run a sample through the judge-call cache, compare
    two runs, label items. Ctrl-C stops it."""
    _check_extra()
    import uvicorn

    from ..studio.server import LOOPBACK, Studio, make_app

    session = _session(folder, judge, store)
    token = None if host in LOOPBACK else secrets.token_urlsafe(18)
    studio = Studio(session, token=token)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if data:
        url += ("&" if token else "?") + f"data={data}"
    err = stderr_console()
    if token:
        err.print(f"warning: serving on {host}, beyond this machine: anyone who can reach it and holds the token "
                  "can read and write the files of the folder and spend the judge's budget", markup=False,
                  style="yellow", soft_wrap=True)
    err.print(f"scorespec studio on {session.workspace.root}: open {url}", markup=False, soft_wrap=True)
    uvicorn.run(make_app(studio, host=host), host=host, port=port, log_level="warning")


@app.command("watch")
@with_flag_groups
def watch_cmd(
    scorer: Annotated[str, typer.Argument(metavar="SCORER", help="A scorer id or a spec file of this folder.")],
    data: Annotated[str, typer.Option("--data", metavar="FILE", help="The dataset run on each save.")],
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Run only the first N items.")] = None,
    judge: JudgeFlags = JudgeFlags(),
    store: StorePath = None,
) -> None:
    """Run SCORER on --data now and again on every save of the spec, its prompts or the data; each
    run shows its comparison with the last one. A failed run (a spec with problems) says why and
    waits for the next save. Ctrl-C stops it."""
    _check_extra()
    import asyncio

    from ..studio.watch import Watch

    session = _session(Path("."), judge, store)
    watch = Watch(session, scorer, data, limit=limit, say=lambda line: typer.echo(line))
    try:
        asyncio.run(watch.loop())
    except KeyboardInterrupt:
        typer.echo("stopped")

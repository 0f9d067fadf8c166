"""The studio's web server: the JSON API the page uses (Starlette), the page, the file watcher.

API (JSON in and out; a body is sent as ``application/json``, which a form on another site
cannot send; an error is ``{"error": MESSAGE}`` with 400 for bad input, 403 for a path outside
the folder or a built-in file written, 404 for what does not exist, 409 for a run while one runs):

- ``GET /api/specs``: ``{root, specs: [{id, path, origin, abstract, shadowsBuiltin}], datasets}``;
- ``GET /api/spec?id=ID``: ``{id, path, prompts: [path], problems}``, the files of one spec;
- ``GET /api/files?path=P``: ``{path, text, readonly}``;
- ``PUT /api/files`` ``{path, text}``: saved, ``{path, saved: true, problems: [{file, line, col,
  message, code, severity, text}]}`` (`engine.studio.workspace`);
- ``GET /api/items?data=P``: ``{items, problems, labels}``;
- ``POST /api/render`` ``{scorer, data, id, answers?}``: ``{prompts: [{stage, text}]}``;
- ``POST /api/run`` ``{scorer, data, limit?, ids?, sample?, seed?}``: ``{runId, results, judgeCalls,
  cachedCalls, cutoff, cancelled, …}`` when the run ends (`engine.studio.session`);
  ``GET /api/progress``: ``{running, runId, done, total}``; ``POST /api/cancel``: ``{cancelled}``;
- ``GET /api/runs``: the session's runs, ``{runs: [{runId, scorer, data, items, judgeCalls,
  cachedCalls}]}``; ``GET /api/runs/{id}``: one run whole;
- ``GET /api/runs/{a}/compare/{b}``: ``{a, b, comparison, items, cutoff, diff}``;
- ``POST /api/labels`` ``{data, id, label, who?}``: ``{path, line}``, the line appended to the
  dataset's labels file (`engine.studio.labels`); ``GET /api/labels?data=P``: ``{path, labels}``;
  ``GET /api/queue?data=P&run=ID``: ``{ids}``, the run's unlabelled items nearest its cut-off first;
  ``GET /api/agreement?data=P&positive=V``: ``{runs: [{runId, scorer, n, figures}]}``, each session
  run on P against its labels (binary with ``positive``, repeatable; graded without);
- ``GET /api/changes?since=N``: ``{version, watching, changes: [{version, path}]}``, the files
  changed on disk (by any editor) after version N, as the watcher saw them (``watching``: the
  watcher is set up).

Bound to another address than the loopback, every ``/api/`` request must carry the server's
token (``Authorization: Bearer TOKEN``, or ``?token=TOKEN``); on the loopback, a request naming
another host (a DNS-rebinding page) is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from ..core.errors import SpecError, UserError
from .labels import add_label, label_queue, labels_path, read_labels
from .session import RunBusy, RunRequest, Session
from .workspace import OutsideFolder, ReadOnly, Workspace, problem_json

__all__ = ["LOOPBACK", "Studio", "make_app", "running"]

ASSETS = Path(__file__).parent / "assets"
PAGE_FILES = {"studio.js": "text/javascript", "studio.css": "text/css"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_CHANGES_KEPT = 500


@dataclass
class Studio:
    """What the server holds: the folder, the session, the token (None on the loopback), and the
    watcher's record of changed files."""

    session: Session
    token: str | None = None
    version: int = 0
    watching: bool = False
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def workspace(self) -> Workspace:
        return self.session.workspace

    def changed(self, paths: list[str]) -> None:
        for path in paths:
            self.version += 1
            self.changes.append({"version": self.version, "path": path})
        del self.changes[:-_CHANGES_KEPT]


def _error(exc: BaseException, workspace: Workspace) -> JSONResponse:
    if isinstance(exc, (OutsideFolder, ReadOnly)):
        return JSONResponse({"error": str(exc)}, 403)
    if isinstance(exc, RunBusy):
        return JSONResponse({"error": str(exc)}, 409)
    if isinstance(exc, SpecError):
        problems = [problem_json(p, workspace) for p in exc.problems]
        return JSONResponse({"error": "the spec has problems", "problems": problems}, 400)
    if isinstance(exc, (FileNotFoundError, LookupError)):
        return JSONResponse({"error": str(exc).strip("'\"")}, 404)
    return JSONResponse({"error": str(exc)}, 400)


async def _body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise ValueError("send the body as application/json")
    body = json.loads(await request.body() or b"{}")
    if not isinstance(body, dict):
        raise ValueError("the body is a JSON object")
    return body


def _query(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise ValueError(f"give ?{name}=")
    return value


def _handler(studio: Studio, work: Any) -> Any:
    """A route's endpoint: `work(studio, request)` (sync or async) as JSON, errors as `_error`."""

    async def endpoint(request: Request) -> Response:
        if studio.token is not None and not _token_ok(request, studio.token):
            return JSONResponse({"error": "this studio needs its token (printed when it started)"}, 401)
        try:
            found = work(studio, request)
            if asyncio.iscoroutine(found):
                found = await found
        except (UserError, ValueError, FileNotFoundError, LookupError, PermissionError) as exc:
            return _error(exc, studio.workspace)
        return JSONResponse(found)

    return endpoint


def _token_ok(request: Request, token: str) -> bool:
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip() or \
        request.query_params.get("token", "")
    return secrets.compare_digest(given.encode(), token.encode())


# --- the endpoints ---------------------------------------------------------------------------


def _specs(studio: Studio, request: Request) -> dict[str, Any]:
    ws = studio.workspace
    return {"root": str(ws.root), "specs": ws.specs(), "datasets": ws.datasets()}


def _spec(studio: Studio, request: Request) -> dict[str, Any]:
    return studio.workspace.spec_files(_query(request, "id"))


def _get_file(studio: Studio, request: Request) -> dict[str, Any]:
    path = _query(request, "path")
    text = studio.workspace.read(path)
    return {"path": path, "text": text, "readonly": path.startswith("builtin:")}


async def _put_file(studio: Studio, request: Request) -> dict[str, Any]:
    body = await _body(request)
    if not isinstance(body.get("path"), str) or not isinstance(body.get("text"), str):
        raise ValueError("a save needs 'path' and 'text', each a string")
    problems = studio.workspace.save(body["path"], body["text"])
    return {"path": body["path"], "saved": True, "problems": problems}


def _items(studio: Studio, request: Request) -> dict[str, Any]:
    data = _query(request, "data")
    items, problems = studio.session.items(data)
    labels = read_labels(labels_path(studio.workspace.path(data)))
    return {"items": items, "problems": problems, "labels": labels}


async def _render(studio: Studio, request: Request) -> dict[str, Any]:
    body = await _body(request)
    prompts = studio.session.render(str(body.get("scorer")), str(body.get("data")), body.get("id"),
                                    body.get("answers") or {})
    return {"prompts": prompts}


async def _run(studio: Studio, request: Request) -> dict[str, Any]:
    return await studio.session.run(RunRequest.from_json(await _body(request)))


def _progress(studio: Studio, request: Request) -> dict[str, Any]:
    return studio.session.progress()


def _cancel(studio: Studio, request: Request) -> dict[str, Any]:
    return {"cancelled": studio.session.cancel()}


def _runs(studio: Studio, request: Request) -> dict[str, Any]:
    out = []
    for run_id in studio.session.runs:
        run = studio.session.run_json(run_id)
        out.append({"runId": run_id, "scorer": run["scorer"], "data": run["data"], "items": len(run["results"]),
                    "judgeCalls": run["judgeCalls"], "cachedCalls": run["cachedCalls"], "createdAt": run["createdAt"]})
    return {"runs": out}


def _run_one(studio: Studio, request: Request) -> dict[str, Any]:
    return studio.session.run_json(request.path_params["run"])


async def _compare(studio: Studio, request: Request) -> dict[str, Any]:
    return await asyncio.to_thread(studio.session.compare, request.path_params["a"], request.path_params["b"])


async def _post_label(studio: Studio, request: Request) -> dict[str, Any]:
    body = await _body(request)
    if not isinstance(body.get("data"), str) or "id" not in body or "label" not in body:
        raise ValueError("a label needs 'data', 'id' and 'label'")
    data = studio.workspace.path(body["data"])
    from ..run.datasets import iter_items
    from ..run.items import item_key

    if item_key(body["id"]) not in {item_key(item.get("id")) for item in iter_items(data)}:
        raise ValueError(f"no item {body['id']!r} in {body['data']}")
    path = labels_path(studio.workspace.path(body["data"], write=True))
    line = add_label(path, body["id"], body["label"], body.get("who") if isinstance(body.get("who"), str) else None)
    return {"path": studio.workspace.name(path), "line": line}


def _get_labels(studio: Studio, request: Request) -> dict[str, Any]:
    path = labels_path(studio.workspace.path(_query(request, "data")))
    return {"path": studio.workspace.name(path), "labels": read_labels(path)}


def _queue(studio: Studio, request: Request) -> dict[str, Any]:
    run = studio.session.run_json(_query(request, "run"))
    labels = read_labels(labels_path(studio.workspace.path(_query(request, "data"))))
    return {"ids": label_queue(run["results"], labels, run["cutoff"])}


def _agreement(studio: Studio, request: Request) -> dict[str, Any]:
    positive = request.query_params.getlist("positive") or None
    return {"runs": studio.session.agreement(_query(request, "data"), positive)}


def _changes(studio: Studio, request: Request) -> dict[str, Any]:
    since = int(request.query_params.get("since") or 0)
    return {"version": studio.version, "watching": studio.watching,
            "changes": [c for c in studio.changes if c["version"] > since]}


_ROUTES = [
    ("/api/specs", _specs, ["GET"]), ("/api/spec", _spec, ["GET"]), ("/api/files", _get_file, ["GET"]),
    ("/api/files", _put_file, ["PUT"]), ("/api/items", _items, ["GET"]), ("/api/render", _render, ["POST"]),
    ("/api/run", _run, ["POST"]), ("/api/progress", _progress, ["GET"]), ("/api/cancel", _cancel, ["POST"]),
    ("/api/runs", _runs, ["GET"]), ("/api/runs/{run}", _run_one, ["GET"]),
    ("/api/runs/{a}/compare/{b}", _compare, ["GET"]), ("/api/labels", _post_label, ["POST"]),
    ("/api/labels", _get_labels, ["GET"]), ("/api/queue", _queue, ["GET"]),
    ("/api/agreement", _agreement, ["GET"]), ("/api/changes", _changes, ["GET"]),
]


# --- the page and the watcher ----------------------------------------------------------------


async def _page(request: Request) -> Response:
    return FileResponse(ASSETS / "index.html", media_type="text/html", headers=_PAGE_HEADERS)


async def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in PAGE_FILES:
        return JSONResponse({"error": f"no page file {name!r}"}, 404)
    return FileResponse(ASSETS / name, media_type=PAGE_FILES[name], headers=_PAGE_HEADERS)


#: nothing from another host: scripts, styles, images and requests only from this server
_PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
                 "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


async def _watch(studio: Studio, stop: asyncio.Event) -> None:
    """Record every file changed under the folder (`Studio.changed`) until `stop` is set."""
    from watchfiles import awatch

    root = studio.workspace.root

    def wanted(change: Any, path: str) -> bool:
        parts = Path(path).relative_to(root).parts if Path(path).is_relative_to(root) else ()
        return bool(parts) and not any(p.startswith(".") or p == "__pycache__" for p in parts)

    async for found in awatch(root, stop_event=stop, watch_filter=wanted, debounce=200, step=50, rust_timeout=200,
                              yield_on_timeout=True):
        studio.watching = True  # set up: from now on a change is seen
        studio.changed(sorted({studio.workspace.name(Path(path)) for _, path in found}))


def make_app(studio: Studio, *, host: str = "127.0.0.1", watch: bool = True) -> Starlette:
    """The studio's Starlette app over `studio` (see the module docstring); `watch`: run the file
    watcher while the app runs."""
    routes = [Route(path, _handler(studio, work), methods=methods) for path, work, methods in _ROUTES]
    routes += [Route("/", _page, methods=["GET"]), Route("/assets/{name}", _asset, methods=["GET"])]

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        stop = asyncio.Event()
        task = asyncio.create_task(_watch(studio, stop)) if watch else None
        try:
            yield
        finally:
            stop.set()
            studio.session.cancel()
            if task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 5)

    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK))] if host in LOOPBACK else []
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


@contextlib.contextmanager
def running(studio: Studio, host: str = "127.0.0.1", port: int = 0, *, watch: bool = True) -> Iterator[str]:
    """The studio served by uvicorn in a thread while the block runs; its base URL
    (``http://127.0.0.1:PORT``, a free port when `port` is 0). For tests and scripts."""
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(make_app(studio, host=host, watch=watch), log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="scorespec-studio")
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the studio's server did not start")
            threading.Event().wait(0.02)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()

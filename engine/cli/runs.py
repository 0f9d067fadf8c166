"""The CLI's stored-run commands: ``scorespec runs`` (the stored runs, newest first) and
``scorespec show RUN`` (one run: its summary, failed items, results, or the spec a label ran with).

Registered on `engine.cli.app.app` when imported (`engine.cli.eval` imports this module). Imports
little itself: the store and the terminal output are imported by the command that runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .app import app, fail
from .options import AsJson, StorePath

if TYPE_CHECKING:
    from ..run.summary import ScorerSummary

__all__ = ["runs_cmd", "show_cmd", "find_run", "open_store", "stored_summaries"]


def open_store(path: Optional[Path]) -> Any:
    """The store at `path` (None: the default store, `engine.run.store.Store`)."""
    from ..run.store import Store

    return Store(path)


@app.command("runs")
def runs_cmd(
    store: StorePath = None,
    limit: int = typer.Option(50, "--limit", min=1, help="Show the newest N runs."),
    as_json: AsJson = False,
) -> None:
    """List stored eval runs, newest first: items, and results (one per item and scorer) by status."""
    from rich.table import Table

    from .output import err_console, out_console

    path = store or _default_store()
    if not Path(path).exists():
        if as_json:
            sys.stdout.write("[]\n")
        else:
            err_console().print(f"no runs yet (no store at {path})", markup=False)
        return
    with open_store(path) as db:
        runs = db.list_runs(limit)
    if as_json:
        sys.stdout.write(json.dumps([_run_json(r) for r in runs], ensure_ascii=False) + "\n")
        return
    # one result per item and scorer: the status columns count results, not items
    table = Table("run", "started", "status", "verdict", "scorers", "items", "results", "scored", "not scorable",
                  "failed", "out", box=None, pad_edge=False)
    table.columns[0].no_wrap = True  # a run id is what `show` takes: never cut or wrapped
    table.columns[0].min_width = max((len(r["run_id"]) for r in runs), default=3)
    for r in runs:
        c = r["counts"]
        table.add_row(r["run_id"], r["created_at"][:19].replace("T", " "), r["status"], r["verdict"] or "",
                      ", ".join(r["scorers"] or []), str(r["items"]), str(sum(c.values())), str(c["scored"]),
                      str(c["not_scorable"]), str(c["failed"]), r["out"] or "")
    out_console().print(table)


def find_run(db: Any, run_id: str) -> dict[str, Any]:
    """The stored run with this id (or unique id prefix); exits with a clear error otherwise."""
    try:
        found = db.get_run(run_id)
    except LookupError as exc:  # an ambiguous prefix
        fail(str(exc))
    if found is None:
        fail(f"no run {run_id!r} in the store {db} (see `scorespec runs`)")
    return found


def _default_store() -> Path:
    from ..run.store import default_store_path

    return default_store_path()


def _run_json(run: dict[str, Any]) -> dict[str, Any]:
    return {"runId": run["run_id"], "status": run["status"], "verdict": run["verdict"], "data": run["data"],
            "out": run["out"], "scorers": run["scorers"], "items": run["items"],
            "results": sum(run["counts"].values()), "counts": run["counts"],
            "createdAt": run["created_at"], "updatedAt": run["updated_at"], "summary": run["summary"]}


def stored_summaries(db: Any, run: dict[str, Any]) -> dict[str, ScorerSummary]:
    """Per-scorer summaries, by label, recomputed from a run's stored results (so an interrupted
    run shows what it holds), with the run's thresholds."""
    from ..run.summary import ScorerStats, Threshold

    config = run.get("config") or {}
    thresholds = {k: Threshold(v.get("min"), v.get("max"), bool(v.get("limit")))
                  for k, v in (config.get("thresholds") or {}).items()}
    known = config.get("labels") or {}  # label → scorer id, spec hash, direction (runs before labels lack it)

    def stats_of(label: str) -> ScorerStats:
        about = known.get(label, {})
        return ScorerStats(label, about.get("scorer"), about.get("specHash"),
                           about.get("direction") or "higher_is_better")

    stats: dict[str, ScorerStats] = {label: stats_of(label) for label in run.get("scorers") or []}
    for _item, label, status, score in db.statuses(run["run_id"]):
        stats.setdefault(label, stats_of(label)).add(status, score)
    return {label: s.summary(thresholds.get(label)) for label, s in stats.items()}


@app.command("show")
def show_cmd(
    run: str = typer.Argument(..., help="A run id (a unique prefix is enough)."),
    store: StorePath = None,
    results: bool = typer.Option(False, "--results", help="Print every result as a JSON line on stdout."),
    spec: Optional[str] = typer.Option(None, "--spec", metavar="LABEL", help="Print the full spec the run used "
                                       "for this label: merged over what it extends, and its templates."),
    write: Optional[Path] = typer.Option(None, "--write", metavar="DIR", help="With --spec: write that spec and "
                                         "its templates under DIR, to run that version again."),
    as_json: AsJson = False,
) -> None:
    """Show one stored run: its summary, failed items, (with --results) every result, or (with
    --spec LABEL) the spec a label ran with."""
    from .output import out_console, summary_table

    path = store or _default_store()
    if not Path(path).exists():
        fail(f"no store at {path}")
    if write is not None and spec is None:
        fail("--write needs --spec LABEL")
    with open_store(path) as db:
        found = find_run(db, run)
        if spec is not None:
            _show_spec(db, found, spec, write)
            return
        if results:
            for line in db.results(found["run_id"]):
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            return
        summaries = stored_summaries(db, found)
        failures = [line for line in db.results(found["run_id"]) if line.get("error")][:20]
    if as_json:
        payload = _run_json(found)
        payload["scorersSummary"] = {label: s.to_json_dict() for label, s in summaries.items()}
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return
    console = out_console()
    console.print(f"run {found['run_id']} · {found['status']}"
                  + (f" · verdict {found['verdict']}" if found["verdict"] else "")
                  + f" · started {found['created_at']} · {found['items']} item(s)", markup=False, soft_wrap=True)
    if found["data"]:
        console.print(f"data {found['data']}", markup=False, soft_wrap=True)
    if found["out"]:
        console.print(f"out {found['out']}", markup=False, soft_wrap=True)
    console.print(summary_table(summaries))
    for line in failures:
        error = line["error"]
        where = f" at stage {error.get('stage')}" if error.get("stage") else ""
        console.print(f"item {line['id']}: {line['label']} failed{where} ({error.get('kind')}): "
                      f"{' '.join(str(error.get('message')).split())[:400]}", markup=False, soft_wrap=True)


def _show_spec(db: Any, run: dict[str, Any], label: str, write: Optional[Path]) -> None:
    """Print the kept spec of `label` in `run` on stdout, or write it under `write`."""
    from ..spec.snapshot import SpecNotKept, resolved_text, run_spec, write_snapshot

    try:
        kept = run_spec(db, run, label)
        if write is None:
            sys.stdout.write(resolved_text(kept))
            return
        written = write_snapshot(kept, write)
    except (SpecNotKept, FileExistsError, ValueError, OSError) as exc:
        fail(str(exc))
    from .app import stderr_console

    stderr_console().print(f"wrote {written} and its templates under {write / 'prompts'}; run that version with "
                           f"`scorespec eval {label}={written} --data …`", markup=False, soft_wrap=True)

"""The batch commands of the CLI: ``scorespec eval``, ``scorespec runs``, ``scorespec show``.

Registered on `engine.cli.app.app` when this module is imported (`engine.cli.main.main` does so at
startup, so this module imports little: the eval machinery and the terminal output
(`engine.cli.output`) are imported by the command that runs). Exit codes of ``eval``: 0 passed; 1 a threshold was missed; 2 errors (an item failed,
a dataset record could not be read, bad arguments, ``--max-cost`` with a judge model that has no
price); 3 stopped by the ``--max-cost`` budget (every completed result is saved — resume with
``--resume`` and a larger budget); 130 interrupted (Ctrl-C; every completed result is saved —
resume with ``--resume``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .app import EXIT_BUDGET, MODEL_HELP, app, fail, parse_options
from .cache import CACHE_HELP, NO_CACHE_HELP, REFRESH_HELP, cache_line, command_cache
from .ci_files import ITEM_CUTOFF_HELP, JUNIT_HELP, SUMMARY_MD_HELP, item_cutoffs_or_exit, write_reports_or_exit
from .html import REPORT_HELP, check_report_dependencies, write_run_report

if TYPE_CHECKING:
    from ..run.summary import ScorerSummary

EXIT_INTERRUPTED = 130
SAMPLES_HELP = ("Ask every prompt stage N times and reduce the answers (the stage's reduce: majority vote, mean, "
                "median…), without editing the spec; stages whose answer nothing can reduce are asked once.")
PRICES_HELP = ("A price table (YAML, US dollars per million tokens) used before the shipped one [default: "
               "$SCORESPEC_PRICES, else prices.yaml in the cache folder].")
MAX_COST_HELP = ("A budget in US dollars: stop before the next item would pass it (exit 3; --resume continues, "
                 "counting what was spent). Every judge model needs a price.")
EXECUTOR_HELP = ("Where items are scored: local (this process) or ray (a pool of Ray actors; needs scorespec[ray]: "
                 "starts a local Ray unless --ray-address is given).")
RAY_ADDRESS_HELP = "With --executor ray: the Ray cluster to join (auto, or the head's HOST:PORT)."
ACTORS_HELP = "With --executor ray: scoring actors, each with --concurrency judge requests in flight [default: 2]."
CPUS_PER_ACTOR_HELP = "With --executor ray: CPUs each actor reserves, fractions allowed [default: 0.5]."


# --- commands -----------------------------------------------------------------------------------


def _open_store(path: Optional[Path]) -> Any:
    from ..run.store import Store

    return Store(path)


def _load_scorers(names: list[str], model: Optional[str], base_url: Optional[str], options: list[str],
                  cache: Any = None, refresh: bool = False, samples: Optional[int] = None) -> list[Any]:
    """Compiled `Scorer`s for `names`, each ``SPEC`` or ``LABEL=SPEC`` (`engine.run.evals.
    scorer_reference`: one spec may run twice under two labels); options are ``LABEL.key=value``,
    ``ID.key=value``, or ``key=value`` when one spec runs (`engine.cli.app.parse_options`);
    `samples` for every prompt stage that can be sampled (a note names the others). Exits with a
    message on bad input."""
    from ..bind.stack import bind
    from ..core.errors import SpecError
    from ..interpret.scorer import OptionError, check_label
    from ..judge.model import ModelError
    from ..judge.settings import JudgeSettings
    from ..run.evals import scorer_reference
    from ..spec.compile import load_spec

    compiled_list, labels = [], []
    for name in names:
        try:
            label, spec = scorer_reference(name)
            compiled = load_spec(spec)
            labels.append(compiled.id if label is None else check_label(label))
            compiled_list.append(compiled)
        except SpecError as exc:
            fail(f"{name}: the spec has problems:\n" + exc.render())
        except (FileNotFoundError, ValueError) as exc:
            fail(str(exc))
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        fail(f"scorer label {twice[0]!r} is given twice: give each version its own label, e.g. "
             f"{twice[0]}@draft=my_specs/{twice[0]}.yaml")
    by_label = parse_options(options, compiled_list, labels)
    settings = JudgeSettings(model=model, base_url=base_url, cache=cache, refresh=refresh)
    scorers = []
    for compiled, label in zip(compiled_list, labels):
        try:
            scorers.append(bind(compiled, settings, options=by_label[label], label=label, samples=samples))
        except (OptionError, ModelError) as exc:
            fail(str(exc))
        if samples is not None and samples > 1 and scorers[-1].unsampled:
            from .output import err_console

            stages = ", ".join(scorers[-1].unsampled)
            err_console().print(f"note: --samples {samples}: {compiled.id} asks stage(s) {stages} once (no enum, "
                                "boolean or number field in the answer to reduce; give the stage a reduce: "
                                "expression over samples to sample it)", markup=False, highlight=False,
                                soft_wrap=True, style="yellow")
    return scorers


@app.command("eval")
def eval_cmd(
    scorer_args: Optional[list[str]] = typer.Argument(None, metavar="SCORER...", help="Scorer ids or spec files; "
                                                      "LABEL=SPEC runs one under a label (e.g. two versions of a "
                                                      "scorer: faithfulness faithfulness@draft=my_specs/faith.yaml)."),
    scorer_opts: list[str] = typer.Option([], "--scorer", help="A scorer (repeatable; same as the arguments)."),
    data_arg: Optional[str] = typer.Option(None, "--data", metavar="FILE", help="JSONL, CSV, JSON-array or Parquet "
                                           "file of items (on Ray also a folder, a glob or a URL Ray Data reads)."),
    field: list[str] = typer.Option([], "--field", help="name=column: read a run field, or a field a scorer "
                                    "declares, from another column (e.g. output=answer, context=passages, "
                                    "tool_calls=calls; repeatable)."),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="An OpenAI-compatible server's URL."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="Scorer runs (judge requests) at "
                                              "once [default: 8; 1 on an embedded model]; per actor on Ray."),
    rate_limit: Optional[float] = typer.Option(None, "--rate-limit", help="Judge requests per second, at most (on "
                                               "Ray: across the whole cluster)."),
    threshold: list[str] = typer.Option([], "--threshold", help="LABEL=limit (a mean at least as good as limit: ≥, "
                                        "or ≤ for a lower-is-better scorer) or LABEL=min:max (repeatable; a scorer's "
                                        "label is its id unless given)."),
    option: list[str] = typer.Option([], "--option", help="ID.key=value or LABEL.key=value, a scorer option "
                                     "(repeatable); key=value when one spec runs."),
    out: Optional[Path] = typer.Option(None, "--out", help="JSONL file receiving one line per item and scorer."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run of --out (or of --run-id)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Score only the first N items of the data."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="The run's id (to resume a run without --out)."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar, no per-item lines (for CI)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    cache: Optional[str] = typer.Option(None, "--cache", metavar="PATH|URL", help=CACHE_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
    refresh: bool = typer.Option(False, "--refresh", help=REFRESH_HELP),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", help=JUNIT_HELP),
    summary_md: Optional[Path] = typer.Option(None, "--summary-md", metavar="FILE", help=SUMMARY_MD_HELP),
    item_cutoff: list[str] = typer.Option([], "--item-cutoff", metavar="ID=VALUE", help=ITEM_CUTOFF_HELP),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=50, help=SAMPLES_HELP),
    prices: Optional[Path] = typer.Option(None, "--prices", help=PRICES_HELP),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", metavar="USD", help=MAX_COST_HELP),
    report_file: Optional[Path] = typer.Option(None, "--report", metavar="FILE", help=REPORT_HELP),
    executor: Optional[str] = typer.Option(None, "--executor", metavar="local|ray", help=EXECUTOR_HELP),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", metavar="ADDR", help=RAY_ADDRESS_HELP),
    actors: Optional[int] = typer.Option(None, "--actors", min=1, help=ACTORS_HELP),
    cpus_per_actor: Optional[float] = typer.Option(None, "--cpus-per-actor", min=0.01, help=CPUS_PER_ACTOR_HELP),
) -> None:
    """Score a dataset with one or more scorers; print a summary; exit 0 passed, 1 below a
    threshold (or an item below its --item-cutoff), 2 errors, 3 stopped by the --max-cost budget."""
    import asyncio

    from ..run.evals import arun_evals, parse_thresholds
    from ..run.items import DatasetError
    from .output import ConsoleReporter, err_console, out_console, print_summary

    names = list(scorer_args or []) + list(scorer_opts)
    if report_file is not None:
        check_report_dependencies()
    db = _open_store(store)
    try:
        stored_cli: dict[str, Any] = {}
        data = data_arg
        if resume and run_id and (not names or data is None):
            stored = _find_run(db, run_id)
            stored_cli = (stored.get("config") or {}).get("cli") or {}
            run_id = stored["run_id"]
            names = names or list(stored_cli.get("scorers") or [])
            data = data or stored_cli.get("data")
            field = field or list(stored_cli.get("fields") or [])
            option = option or list(stored_cli.get("options") or [])
            threshold = threshold or list(stored_cli.get("thresholds") or [])
            model = model or stored_cli.get("model")
            base_url = base_url or stored_cli.get("base_url")
            samples = samples or stored_cli.get("samples")
            prices = prices or (Path(stored_cli["prices"]) if stored_cli.get("prices") else None)
            executor = executor or stored_cli.get("executor")
            ray_address = ray_address or stored_cli.get("ray_address")
            actors = actors or stored_cli.get("actors")
            cpus_per_actor = cpus_per_actor or stored_cli.get("cpus_per_actor")
            if out is None and stored.get("out"):
                out = Path(stored["out"])
        if not names:
            fail("give at least one scorer (e.g. scorespec eval faithfulness --data items.jsonl)")
        ray_settings = _ray_settings(executor, ray_address, actors, cpus_per_actor)
        if data is None:
            fail("--data FILE is required")
        remote = "://" in data
        if remote and ray_settings is None:
            fail(f"--data {data}: a URL is read by the Ray executor only (--executor ray)")
        pattern = ray_settings is not None and any(c in data for c in "*?[")  # a glob Ray Data expands
        if not remote and not pattern and not Path(data).is_file() and not (ray_settings is not None
                                                                         and Path(data).is_dir()):
            fail(f"--data {data}: no such file")
        if resume and out is None and run_id is None:
            fail("--resume needs --out FILE or --run-id ID (see `scorespec runs`)")
        try:
            parse_thresholds(threshold)
        except ValueError as exc:
            fail(str(exc))
        scorers = _load_scorers(names, model, base_url, option, command_cache(cache, no_cache, refresh), refresh,
                                samples)
        cutoffs = item_cutoffs_or_exit(item_cutoff, scorers)
        try:
            from ..run.items import parse_fields
            from ..run.runner import declared_names

            parse_fields(field, declared_names(scorers))  # a run field, or one a scorer declares
        except ValueError as exc:
            fail(str(exc))
        reporter = ConsoleReporter(quiet=quiet)
        data_text = data if remote else str(Path(data).resolve())
        cli_config = {"scorers": names, "data": data_text, "fields": field, "options": option,
                      "thresholds": threshold, "model": model, "base_url": base_url, "samples": samples,
                      "prices": str(prices.resolve()) if prices else None, "limit": limit,
                      "executor": executor, "ray_address": ray_address, "actors": actors,
                      "cpus_per_actor": cpus_per_actor}
        try:
            summary = asyncio.run(arun_evals(
                data_text if remote else Path(data), scorers, concurrency=concurrency, thresholds=threshold,
                out=out, resume=resume, run_id=run_id, rate_limit=rate_limit, store=db, progress=reporter,
                fields=field, config={"cli": cli_config}, prices=prices, max_cost=max_cost, limit=limit,
                executor="ray" if ray_settings is not None else "local", ray=ray_settings))
        except KeyboardInterrupt:
            err_console().print("interrupted: every completed result is saved; run the same command with --resume "
                            "to continue", markup=False)
            raise typer.Exit(EXIT_INTERRUPTED)
        except (ValueError, FileExistsError, DatasetError, ImportError, ConnectionError) as exc:
            fail(str(exc))
        except RuntimeError as exc:
            from ..ray.cluster import RayRunError

            if not isinstance(exc, RayRunError):
                raise
            fail(str(exc))
        report = None
        if junit or summary_md or cutoffs:
            from ..core.direction import direction_of
            from ..report.ci import eval_report

            report = eval_report(summary, db.results(summary.run_id), cutoffs=cutoffs,
                                 directions={s.label: direction_of(s) for s in scorers})
            if report.exit_code > summary.exit_code and summary.verdict == "passed":  # an item below its cut-off
                summary.verdict = "below_threshold"  # so the printed and JSON verdicts agree with the exit code
        if as_json:
            print_summary(summary, err_console())
            sys.stdout.write(json.dumps(summary.to_json_dict(), ensure_ascii=False) + "\n")
        else:
            print_summary(summary, out_console())
        exit_code = summary.exit_code
        if report is not None:
            write_reports_or_exit(report, junit, summary_md)
            exit_code = max(exit_code, report.exit_code)
        if report_file is not None:
            write_run_report(report_file, db, summary.run_id)
        raise typer.Exit(exit_code)
    finally:
        db.close()


def _ray_settings(executor: Optional[str], address: Optional[str], actors: Optional[int],
                  cpus_per_actor: Optional[float]) -> Optional[dict[str, Any]]:
    """The Ray settings of ``--executor ray`` (`engine.ray.cluster.RayOptions` fields), None for
    the local executor; exits (2) for an unknown executor or Ray flags without ``--executor ray``."""
    if executor not in (None, "local", "ray"):
        fail(f"--executor {executor}: expected local or ray")
    given = {"address": address, "actors": actors, "cpus_per_actor": cpus_per_actor}
    if executor != "ray":
        flags = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
        if flags:
            fail(f"{', '.join(f if f != '--address' else '--ray-address' for f in flags)}: "
                 "only with --executor ray")
        return None
    return {name: value for name, value in given.items() if value is not None}


@app.command("runs")
def runs_cmd(
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    limit: int = typer.Option(50, "--limit", min=1, help="Show the newest N runs."),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as JSON on stdout."),
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
    with _open_store(path) as db:
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


def _find_run(db: Any, run_id: str) -> dict[str, Any]:
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
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    results: bool = typer.Option(False, "--results", help="Print every result as a JSON line on stdout."),
    spec: Optional[str] = typer.Option(None, "--spec", metavar="LABEL", help="Print the full spec the run used "
                                       "for this label: merged over what it extends, and its templates."),
    write: Optional[Path] = typer.Option(None, "--write", metavar="DIR", help="With --spec: write that spec and "
                                         "its templates under DIR, to run that version again."),
    as_json: bool = typer.Option(False, "--json", help="Print the run as JSON on stdout."),
) -> None:
    """Show one stored run: its summary, failed items, (with --results) every result, or (with
    --spec LABEL) the spec a label ran with."""
    from .output import out_console, summary_table

    path = store or _default_store()
    if not Path(path).exists():
        fail(f"no store at {path}")
    if write is not None and spec is None:
        fail("--write needs --spec LABEL")
    with _open_store(path) as db:
        found = _find_run(db, run)
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


__all__ = ["eval_cmd", "runs_cmd", "show_cmd", "calibrate_cmd", "calibrations_cmd", "EXIT_INTERRUPTED"]


# --- calibrate ----------------------------------------------------------------------------------


@app.command("calibrate")
def calibrate_cmd(
    scorer: str = typer.Argument(..., metavar="SCORER", help="A scorer id or spec file (LABEL=SPEC: under a label)."),
    data: Path = typer.Option(..., "--data", help="JSONL, CSV or JSON-array file of labelled items."),
    label_field: str = typer.Option("label", "--label-field", help="The items' label key (dots reach inside)."),
    positive: list[str] = typer.Option([], "--positive", help="A label value of the class the scorer should score "
                                       "high (repeatable). Without it, labels are graded numbers."),
    negative: list[str] = typer.Option([], "--negative", help="A label value of the other class (repeatable); "
                                       "items with other labels are left out. Default: every other label."),
    cutoff: Optional[float] = typer.Option(None, "--cutoff", help="Predict positive when score ≥ this "
                                           "[default: half the scale]."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Deprecated: the old name of --cutoff "
                                              "(eval's --threshold bounds a mean instead)."),
    not_scorable_score: Optional[float] = typer.Option(None, "--not-scorable-score", help="Score given to not "
                                                       "scorable items [default: left out of the figures]."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use only the first N labelled items."),
    top: int = typer.Option(5, "--top", min=0, help="List the N items where scorer and label disagree most."),
    field: list[str] = typer.Option([], "--field", help="name=column: read a run field, or a field the scorer "
                                    "declares, from another column."),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="An OpenAI-compatible server's URL."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, help="Scorer runs at once "
                                              "[default: 8; 1 on an embedded model]."),
    option: list[str] = typer.Option([], "--option", help="key=value or ID.key=value, a scorer option "
                                     "(repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", help="JSONL file receiving one line per item."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run of --out."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar, no per-item lines."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON on stdout."),
    cache: Optional[str] = typer.Option(None, "--cache", metavar="PATH|URL", help=CACHE_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
    refresh: bool = typer.Option(False, "--refresh", help=REFRESH_HELP),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", help="Write a JUnit XML report: a test "
                                         "case per item (failed → error, not scorable → skipped)."),
    summary_md: Optional[Path] = typer.Option(None, "--summary-md", metavar="FILE", help=SUMMARY_MD_HELP),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=50, help=SAMPLES_HELP),
    prices: Optional[Path] = typer.Option(None, "--prices", help=PRICES_HELP),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", metavar="USD", help=MAX_COST_HELP),
    report_file: Optional[Path] = typer.Option(None, "--report", metavar="FILE", help=REPORT_HELP),
) -> None:
    """Measure a scorer's agreement with human labels: balanced accuracy, ROC AUC and the
    confusion matrix for binary labels (--positive), Spearman and Pearson for graded ones; the
    items it disagrees with most, with the judge's reasons. Exit 0, 2 on errors (failed items
    included: resume to retry them), or 3 when the --max-cost budget stopped it (the figures
    cover the items scored)."""
    import asyncio

    from ..analysis.calibration import acalibrate
    from ..run.items import DatasetError
    from .output import ConsoleReporter, calibration_table, calibration_usage_lines, err_console, fmt, out_console

    if not data.is_file():
        fail(f"--data {data}: no such file")
    if negative and not positive:
        fail("--negative needs --positive too")
    if resume and out is None:
        fail("--resume needs --out FILE")
    if threshold is not None:
        if cutoff is not None:
            fail("--threshold is the old name of --cutoff: give only --cutoff")
        err_console().print(f"warning: calibrate --threshold is deprecated and will be removed: use --cutoff "
                            f"{threshold:g} (a score cut-off; eval's --threshold bounds a mean)", markup=False,
                            highlight=False, soft_wrap=True, style="yellow")
        cutoff = threshold
    if report_file is not None:
        check_report_dependencies()
    db = _open_store(store)
    try:
        (loaded,) = _load_scorers([scorer], model, base_url, option, command_cache(cache, no_cache, refresh),
                                  refresh, samples)
        try:
            report = asyncio.run(acalibrate(
                loaded, data, label_field=label_field, positive=positive or None, negative=negative or None,
                threshold=cutoff, not_scorable_score=not_scorable_score, top=top, limit=limit, fields=field,
                concurrency=concurrency, out=out, resume=resume, store=db,
                progress=ConsoleReporter(quiet=quiet, per_item=False), prices=prices, max_cost=max_cost,
                config={"cli": {"command": "calibrate", "scorers": [scorer], "data": str(data.resolve()),
                                "fields": field, "options": option, "model": model, "base_url": base_url,
                                "samples": samples, "prices": str(prices.resolve()) if prices else None}}))
        except KeyboardInterrupt:
            err_console().print("interrupted: every completed result is saved; run the same command with --out FILE "
                            "--resume to continue", markup=False)
            raise typer.Exit(EXIT_INTERRUPTED)
        except (ValueError, FileExistsError, DatasetError) as exc:  # LabelError is a ValueError
            fail(str(exc))
        console = err_console() if as_json else out_console()
        name = report.scorer if report.label in (None, report.scorer) else f"{report.label} ({report.scorer})"
        console.print(f"calibration of {name} · {report.direction.replace('_', ' ')} · model {report.model or '—'} "
                      f"· spec {report.spec_hash or '—'} · run {report.run_id}", markup=False, highlight=False,
                      soft_wrap=True)
        console.print(calibration_table(report))
        if report.judge_calls or report.cache_hits:
            items = report.scored + report.not_scorable + report.failed
            console.print(cache_line(report.scorer, items, report.judge_calls, report.cache_hits), markup=False,
                          highlight=False)
        for line in calibration_usage_lines(report):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        for note in report.notes:
            console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True, style="yellow")
        if report.disagreements:
            console.print("largest disagreements:", markup=False)
            for d in report.disagreements:
                reason = " ".join(str(d.reason or "").split())[:300]
                console.print(f"  {d.id}: label {d.label!r}, score {fmt(d.score)} — {reason}", markup=False,
                              highlight=False, soft_wrap=True)
        if report.stopped:
            console.print(f"stopped: {report.stopped}; run the same command with --out FILE --resume and a larger "
                          "--max-cost to finish", markup=False, highlight=False, soft_wrap=True, style="yellow")
        if as_json:
            sys.stdout.write(json.dumps(report.to_json_dict(), ensure_ascii=False) + "\n")
        if junit or summary_md:
            from ..report.ci import calibration_report

            write_reports_or_exit(calibration_report(report, db.results(report.run_id)), junit, summary_md)
        if report_file is not None:
            write_run_report(report_file, db, report.run_id)
        raise typer.Exit(EXIT_BUDGET if report.stopped else 2 if report.failed else 0)
    finally:
        db.close()


@app.command("calibrations")
def calibrations_cmd(
    scorer: Optional[str] = typer.Argument(None, metavar="[SCORER]", help="Only this scorer's calibrations."),
    store: Optional[Path] = typer.Option(None, "--store", help="SQLite store (default $SCORESPEC_STORE or "
                                         ".scorespec/store.sqlite)."),
    as_json: bool = typer.Option(False, "--json", help="Print them as JSON on stdout."),
) -> None:
    """Stored calibrations, newest first: compare two versions of a prompt (spec hash) or two
    judges side by side."""
    from rich.table import Table

    from .output import err_console, fmt, out_console

    db = _open_store(store)
    try:
        rows = db.calibrations(scorer)
    finally:
        db.close()
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return
    if not rows:
        err_console().print("no calibration stored" + (f" for {scorer}" if scorer else ""), markup=False)
        return
    table = Table("when", "run", "scorer", "spec", "model", "used", "balanced acc.", "ROC AUC", "Spearman",
                  box=None, pad_edge=False)
    for row in rows:
        f = row["figures"]
        table.add_row(row["created_at"][:19], row["run_id"], row["scorer"], (row["spec_hash"] or "—")[:12],
                      row["model"] or "—", str(f.get("used")), fmt(f.get("balancedAccuracy")), fmt(f.get("rocAuc")),
                      fmt(f.get("spearman")))
    out_console().print(table)

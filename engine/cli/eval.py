"""The CLI's ``scorespec eval``: score a dataset with one or more scorers (`engine.run.evals`).

Registered on `engine.cli.app.app` when this module is imported (`engine.cli.main.main` does so at
startup), with the other batch commands: ``runs`` and ``show`` (`engine.cli.runs`), ``calibrate``
and ``calibrations`` (`engine.cli.calibrate`), ``align`` (`engine.cli.align`). This module imports little: the eval machinery and the
terminal output (`engine.cli.output`) are imported by the command that runs. The options the
judging commands share are declared once, in `engine.cli.options`.

A run records its settings whole (`engine.run.settings.RunSettings`, ``config["settings"]``) and
which scorers it loaded, on what data (`ScorerChoice`, ``config["cli"]``); ``--resume`` (with
``--run-id`` or ``--out``) reads both back, runs recorded before settings were stored whole
included: they fill every flag the command leaves unset (a flag given wins; ``--limit``,
``--concurrency``, ``--rate-limit``, ``--max-cost`` and the cache flags belong to each attempt),
and other scorers, options, data or model than the run's end the command with exit 2.

Exit codes of ``eval``: 0 passed; 1 a threshold was missed (or an item was below its
``--item-cutoff``); 2 errors (an item failed, a dataset record could not be read, bad arguments,
``--max-cost`` with a judge model that has no price); 3 stopped by the ``--max-cost`` budget (every
completed result is saved — resume with ``--resume`` and a larger budget); 130 interrupted (Ctrl-C;
every completed result is saved — resume with ``--resume``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..core import environment
from .app import EXIT_INTERRUPTED, app, fail
from .cache import command_cache
from .ci_files import ITEM_CUTOFF_HELP, item_cutoffs_or_exit, write_reports_or_exit
from .html import check_report_dependencies, write_run_report
from .loading import _load_scorers
from .options import (
    ACTORS_HELP,
    CPUS_PER_ACTOR_HELP,
    EXECUTOR_HELP,
    RAY_ADDRESS_HELP,
    AsJson,
    BaseUrl,
    Cache,
    Concurrency,
    DataFormat,
    ExportOtlp,
    ExportPhoenix,
    Fields,
    ItemPer,
    Junit,
    Language,
    Limit,
    MaxCost,
    Model,
    NoCache,
    Options,
    Out,
    Prices,
    Quiet,
    RateLimit,
    Refresh,
    Report,
    Resume,
    RunId,
    Samples,
    SpanKinds,
    StorePath,
    SummaryMd,
)
from .telemetry import TraceFlags, export_or_exit, trace_data
from .stats_options import CalibrationRefs, Confidence, CorrectionFlags, ThresholdCorrected, apply_or_exit, loaded_or_exit

if TYPE_CHECKING:
    from ..run.settings import RunSettings
    from ..run.summary import EvalSummary

#: The ray flags of ``eval`` by `engine.ray.cluster.RayOptions` field.
RAY_FLAGS = {"address": "--ray-address", "actors": "--actors", "cpus_per_actor": "--cpus-per-actor"}


@dataclass(frozen=True)
class ScorerChoice:
    """Which scorers a CLI run loads, and on what data: scorer references (``SPEC`` or
    ``LABEL=SPEC``), the data (a resolved path, or a URL), ``--option`` values, the judge model and
    server. Recorded with the run as ``config["cli"]`` (`to_json_dict`) beside its settings."""

    scorers: tuple[str, ...] = ()
    data: Optional[str] = None
    options: tuple[str, ...] = ()
    model: Optional[str] = None
    base_url: Optional[str] = None
    command: str = "eval"

    def to_json_dict(self) -> dict[str, Any]:
        return {"command": self.command, "scorers": list(self.scorers), "data": self.data,
                "options": list(self.options), "model": self.model, "base_url": self.base_url}

    @classmethod
    def from_stored(cls, config: Mapping[str, Any] | None) -> ScorerChoice:
        """The choice a stored run recorded in ``config["cli"]`` (the same keys in runs recorded
        before settings were stored whole)."""
        cli = (config or {}).get("cli") or {}
        return cls(tuple(cli.get("scorers") or ()), cli.get("data"), tuple(cli.get("options") or ()),
                   cli.get("model"), cli.get("base_url"), cli.get("command") or "eval")

    def resumed_from(self, stored: ScorerChoice) -> ScorerChoice:
        """This choice with what it leaves unset taken from `stored`."""
        return ScorerChoice(self.scorers or stored.scorers, self.data or stored.data,
                            self.options or stored.options, self.model or stored.model,
                            self.base_url or stored.base_url, self.command)


@dataclass(frozen=True)
class EvalOutputs:
    """What ``eval`` prints and writes besides the run: quiet progress, JSON on stdout, the CI
    files, the item cut-offs (``ID=VALUE``) and the HTML report."""

    quiet: bool = False
    as_json: bool = False
    junit: Optional[Path] = None
    summary_md: Optional[Path] = None
    item_cutoff: tuple[str, ...] = ()
    report_file: Optional[Path] = None
    traces: TraceFlags = TraceFlags()
    correction: CorrectionFlags = CorrectionFlags()


@app.command("eval")
def eval_cmd(
    scorer_args: Annotated[Optional[list[str]], typer.Argument(
        metavar="SCORER...", help="Scorer ids or spec files; LABEL=SPEC runs one under a label (e.g. two versions "
        "of a scorer: faithfulness faithfulness@draft=my_specs/faith.yaml).")] = None,
    scorer_opts: Annotated[list[str], typer.Option("--scorer", help="A scorer (repeatable; same as the "
                                                                    "arguments).")] = [],
    data_arg: Annotated[Optional[str], typer.Option(
        "--data", metavar="FILE", help="JSONL, CSV, JSON-array or Parquet file of items, OTLP JSON traces, "
        "phoenix://HOST:PORT[/PROJECT] (on Ray also a folder, a glob or a URL Ray Data reads).")] = None,
    field: Fields = [],
    data_format: DataFormat = None,
    item_per: ItemPer = None,
    span_kind: SpanKinds = [],
    export_otlp: ExportOtlp = None,
    export_phoenix: ExportPhoenix = None,
    model: Model = None,
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    rate_limit: RateLimit = None,
    threshold: Annotated[list[str], typer.Option(
        "--threshold", help="LABEL=limit (a mean at least as good as limit: ≥, or ≤ for a lower-is-better "
        "scorer) or LABEL=min:max (repeatable; a scorer's label is its id unless given).")] = [],
    option: Options = [],
    out: Out = None,
    resume: Resume = False,
    limit: Limit = None,
    run_id: RunId = None,
    store: StorePath = None,
    quiet: Quiet = False,
    as_json: AsJson = False,
    cache: Cache = None,
    no_cache: NoCache = False,
    refresh: Refresh = False,
    junit: Junit = None,
    summary_md: SummaryMd = None,
    item_cutoff: Annotated[list[str], typer.Option("--item-cutoff", metavar="ID=VALUE", help=ITEM_CUTOFF_HELP)] = [],
    samples: Samples = None,
    language: Language = None,
    prices: Prices = None,
    max_cost: MaxCost = None,
    report_file: Report = None,
    executor: Annotated[Optional[str], typer.Option("--executor", metavar="local|ray", help=EXECUTOR_HELP)] = None,
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", metavar="ADDR", help=RAY_ADDRESS_HELP)] = None,
    actors: Annotated[Optional[int], typer.Option("--actors", min=1, help=ACTORS_HELP)] = None,
    cpus_per_actor: Annotated[Optional[float], typer.Option("--cpus-per-actor", min=0.01,
                                                            help=CPUS_PER_ACTOR_HELP)] = None,
    calibration: CalibrationRefs = [],
    threshold_corrected: ThresholdCorrected = [],
    confidence: Confidence = 0.95,
) -> None:
    """Score a dataset with one or more scorers; print a summary; exit 0 passed, 1 below a
    threshold (or an item below its --item-cutoff), 2 errors, 3 stopped by the --max-cost budget."""
    from ..run.settings import RunSettings

    ray = {name: value for name, value in (("address", ray_address), ("actors", actors),
                                           ("cpus_per_actor", cpus_per_actor)) if value is not None}
    settings = RunSettings(concurrency=concurrency, rate_limit=rate_limit, thresholds=threshold or None,
                           fields=field or None, samples=samples, prices=prices, max_cost=max_cost, limit=limit,
                           executor=executor, ray=ray or None, out=out, resume=resume, run_id=run_id,
                           language=language)
    # $SCORESPEC_MODEL stands for --model for every scorer (`engine.judge.model`): the run records it
    # as such, so a resume reads it back, and one under another $SCORESPEC_MODEL is refused
    model = model or environment.value("SCORESPEC_MODEL")
    choice = ScorerChoice(tuple(scorer_args or ()) + tuple(scorer_opts), data_arg, tuple(option), model, base_url)
    outputs = EvalOutputs(quiet, as_json, junit, summary_md, tuple(item_cutoff), report_file,
                          TraceFlags(data_format, item_per, tuple(span_kind), export_otlp, export_phoenix),
                          CorrectionFlags(tuple(calibration), tuple(threshold_corrected), confidence))
    run_eval(choice, settings, outputs, store, (cache, no_cache, refresh))


def run_eval(choice: ScorerChoice, settings: RunSettings, outputs: EvalOutputs, store: Optional[Path],
             cache_flags: tuple[Optional[str], bool, bool]) -> None:
    """``eval`` once its flags are read: resume what the stored run recorded, check, load the
    scorers, run, print and write the reports; exits with the run's exit code (see the module
    docstring)."""
    from .runs import open_store

    if outputs.report_file is not None:
        check_report_dependencies()
    db = open_store(store)
    try:
        choice, settings = _resumed(db, choice, settings)
        data = _checked_data(choice, settings)
        corrections = loaded_or_exit(outputs.correction, db)
        scorers = _load_scorers(list(choice.scorers), choice.model, choice.base_url, list(choice.options),
                                command_cache(*cache_flags), cache_flags[2], settings.samples)
        cutoffs = item_cutoffs_or_exit(list(outputs.item_cutoff), scorers) if outputs.item_cutoff else dict(
            settings.item_cutoffs or {})  # resumed: the run's own
        _check_fields(settings, scorers)
        settings = dataclasses.replace(settings, item_cutoffs=cutoffs or None)
        summary = _run(trace_data(data, outputs.traces), scorers, settings, db, outputs.quiet,
                       dataclasses.replace(choice, data=data if "://" in data else str(Path(data).resolve())))
        # an exported score is labelled pass/fail at the run's item cut-off, else at the cut-off its spec documents
        documented = {s.label: s.cutoff for s in scorers if getattr(s, "cutoff", None) is not None}
        notes = export_or_exit(db, summary.run_id, scorers, {**documented, **cutoffs}, outputs.traces)
        apply_or_exit(summary, corrections, outputs.correction, db)
        _print_and_write(summary, scorers, cutoffs, outputs, db, notes)
    finally:
        db.close()


def _resumed(db: Any, choice: ScorerChoice, settings: RunSettings) -> tuple[ScorerChoice, RunSettings]:
    """With ``--resume``, the stored run (by ``--run-id``, else by its ``--out`` file) fills in
    what the flags leave unset (`ScorerChoice.resumed_from`, `RunSettings.resumed_from`: a flag
    given wins); a run id given becomes the stored run's whole id, and the out file, unless
    given, the run's. Exits 2 when the flags name other scorers, options, data or model than the run
    (`_check_same_choice`). No stored run (an out file written without a store): as given."""
    from ..run.resume import stored_run_of
    from ..run.settings import RunSettings
    from .runs import find_run

    if not settings.resume:
        return choice, settings
    if settings.out is None and settings.run_id is not None:
        stored = find_run(db, settings.run_id)
    else:  # with --out, a run the store does not hold resumes from the out file alone, as before
        try:
            stored = stored_run_of(Path(settings.out) if settings.out is not None else None, settings.run_id, db)
        except LookupError as exc:
            fail(str(exc))
        if stored is None:
            return choice, settings
    config = stored.get("config") or {}
    stored_choice = ScorerChoice.from_stored(config)
    if stored_choice.scorers:  # a run the CLI recorded (a run from Python has no choice to compare)
        _check_same_choice(stored["run_id"], choice, stored_choice)
    settings = settings.resumed_from(RunSettings.from_stored(config))
    out = settings.out if settings.out is not None or not stored.get("out") else Path(stored["out"])
    # by --run-id, the stored run's whole id (a prefix may be given); by --out, the out file names the
    # run (`engine.run.resume.find_prior` finds it there, or in the store for an out file a stopped
    # driver left empty)
    run_id = stored["run_id"] if settings.run_id is not None else None
    return choice.resumed_from(stored_choice), dataclasses.replace(settings, run_id=run_id, out=out)


def _check_same_choice(run_id: str, given: ScorerChoice, stored: ScorerChoice) -> None:
    """Exits 2 naming what differs when a resuming command gives other scorers, ``--option``
    values, ``--data`` (the same file by another path is the same) or ``--model`` than the run
    recorded: its out file and store would mix the results of both. What is not given, or not
    recorded, is not compared."""
    differs = []
    if given.scorers and stored.scorers and sorted(given.scorers) != sorted(stored.scorers):
        differs.append("scorers")
    if given.options and sorted(given.options) != sorted(stored.options):
        differs.append("options")
    if given.data and stored.data and _resolved(given.data) != _resolved(stored.data):
        differs.append("data")
    if given.model and stored.model and given.model != stored.model:
        differs.append("model")
    if differs:
        fail(f"--resume: run {run_id} scored {_describe(stored, differs)}; this command gives "
             f"{_describe(given, differs)}: resume with the same scorers and options, or start a new run with "
             "another --out")


def _resolved(data: str) -> str:
    return data if "://" in data else str(Path(data).resolve())


def _describe(choice: ScorerChoice, differs: list[str]) -> str:
    """The scorers of `choice`, with what `differs` names among its options, data and model."""
    text = " ".join(choice.scorers) or "(the run's scorers)"
    if "options" in differs or choice.options:
        options = ", ".join(choice.options)
        text += f" with option{'s' if len(choice.options) > 1 else ''} {options}" if options else " with no option"
    if "data" in differs and choice.data:
        text += f" on {_resolved(choice.data)}"
    if "model" in differs and choice.model:
        text += f" with model {choice.model}"
    return text


def _checked_data(choice: ScorerChoice, settings: RunSettings) -> str:
    """The data to read, once the scorers, the executor and the data are checked (exits 2 when not)."""
    if not choice.scorers:
        fail("give at least one scorer (e.g. scorespec eval faithfulness --data items.jsonl)")
    on_ray = _on_ray(settings)
    data = choice.data
    if data is None:
        fail("--data FILE is required")
    remote = "://" in data
    if data.lower().startswith("phoenix://"):
        if on_ray:
            fail(f"--data {data}: Phoenix is read by the local executor only")
    elif remote and not on_ray:
        fail(f"--data {data}: a URL is read by the Ray executor only (--executor ray)")
    pattern = on_ray and any(c in data for c in "*?[")  # a glob Ray Data expands
    if not remote and not pattern and not Path(data).is_file() and not (on_ray and Path(data).is_dir()):
        fail(f"--data {data}: no such file")
    if settings.resume and settings.out is None and settings.run_id is None:
        fail("--resume needs --out FILE or --run-id ID (see `scorespec runs`)")
    try:
        from ..run.summary import parse_thresholds

        parse_thresholds(settings.thresholds)
    except ValueError as exc:
        fail(str(exc))
    return data


def _on_ray(settings: RunSettings) -> bool:
    """Whether the run goes to Ray; exits (2) for an unknown executor or Ray flags without
    ``--executor ray``."""
    if settings.executor not in (None, "local", "ray"):
        fail(f"--executor {settings.executor}: expected local or ray")
    if settings.executor != "ray" and settings.ray:
        fail(f"{', '.join(RAY_FLAGS.get(name, name) for name in settings.ray)}: only with --executor ray")
    return settings.executor == "ray"


def _check_fields(settings: RunSettings, scorers: list[Any]) -> None:
    """Each --field names a run field, or a field a scorer declares (exits 2 when not)."""
    from ..run.items import parse_fields
    from ..run.runner import declared_names

    try:
        parse_fields(settings.fields or (), declared_names(scorers))
    except ValueError as exc:
        fail(str(exc))


def _run(data: Any, scorers: list[Any], settings: RunSettings, db: Any, quiet: bool,
         choice: ScorerChoice) -> EvalSummary:
    """The run on the terminal; exits with a message on bad input, 130 when interrupted."""
    import asyncio

    from ..run.evals import arun_evals
    from ..run.items import DatasetError
    from .output import ConsoleReporter, err_console

    try:
        if settings.executor == "ray":
            from ..ray.runner import with_ray_executor

            settings = with_ray_executor(settings)
        if isinstance(data, str) and "://" not in data:
            data = Path(data)
        return asyncio.run(arun_evals(data, scorers, settings, store=db,
                                      progress=ConsoleReporter(quiet=quiet), config={"cli": choice.to_json_dict()}))
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


def _print_and_write(summary: EvalSummary, scorers: list[Any], cutoffs: dict[str, float], outputs: EvalOutputs,
                     db: Any, notes: list[str] = ()) -> None:
    """Print the summary (as JSON on stdout with --json), write the CI files and the HTML report,
    and exit with the run's exit code (the CI report's when higher)."""
    from .output import err_console, out_console, print_summary

    report = None
    if outputs.junit or outputs.summary_md or cutoffs:
        from ..core.direction import direction_of
        from ..report.ci import eval_report

        report = eval_report(summary, db.results(summary.run_id), cutoffs=cutoffs,
                             directions={s.label: direction_of(s) for s in scorers})
    if outputs.as_json:
        print_summary(summary, err_console())
        sys.stdout.write(json.dumps(summary.to_json_dict(), ensure_ascii=False) + "\n")
    else:
        print_summary(summary, out_console())
    for note in notes:
        err_console().print(note, markup=False)
    exit_code = summary.exit_code
    if report is not None:
        write_reports_or_exit(report, outputs.junit, outputs.summary_md)
        exit_code = max(exit_code, report.exit_code)
    if outputs.report_file is not None:
        write_run_report(outputs.report_file, db, summary.run_id)
    raise typer.Exit(exit_code)


# the other batch commands, registered after eval (the order `scorespec --help` lists them in)
from . import runs as _runs  # noqa: E402,F401,I001
from . import align as _align  # noqa: E402,F401
from . import calibrate as _calibrate  # noqa: E402,F401

__all__ = ["eval_cmd", "run_eval", "ScorerChoice", "EvalOutputs", "RAY_FLAGS"]

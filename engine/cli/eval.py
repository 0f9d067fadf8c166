"""The CLI's ``scorespec eval``: score a dataset with one or more scorers (`engine.run.evals`).

Registered on `engine.cli.app.app` when this module is imported (the command group imports it
when ``eval`` is asked for). This module imports little: the eval machinery and the terminal
output (`engine.cli.output`) are imported by the command that runs. Its judge, run and out-file
flags are the groups of `engine.cli.flags`, turned into the run's settings by
`engine.cli.flags.build_settings`; the run is `engine.api.arun_evals`, whose refusals are printed
as they are raised.

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
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..core import environment
from .app import app, fail
from .ci_files import ITEM_CUTOFF_HELP, item_cutoffs_or_exit, write_reports_or_exit
from .errors import run_async
from .flags import RAY_FLAGS, JudgeFlags, RayRunFlags, StoredRunFlags, build_settings, with_flag_groups
from .html import check_report_dependencies, write_run_report
from .loading import load_scorers
from .options import (
    AsJson,
    DataFormat,
    ExportOtlp,
    ExportPhoenix,
    ItemPer,
    Junit,
    Quiet,
    Report,
    SpanKinds,
    StorePath,
    SummaryMd,
)
from .stats_options import CalibrationRefs, Confidence, CorrectionFlags, ThresholdCorrected, apply_or_exit, loaded_or_exit
from .telemetry import TraceFlags, export_or_exit, trace_data

if TYPE_CHECKING:
    from ..run.settings import RunSettings
    from ..run.summary import EvalSummary

@dataclass(frozen=True)
class ScorerChoice:
    """Which scorers a CLI run loads, and on what data: scorer references (``SPEC`` or
    ``LABEL=SPEC``), the data (a resolved path, or a URL) and how its traces are read
    (``--format``, ``--item-per``, ``--span-kind``: a resume reads the same items), ``--option``
    values, the judge model and server, the jury (``--jury``, ``--jury-min``). Recorded with the
    run as ``config["cli"]`` (`to_json_dict`) beside its settings."""

    scorers: tuple[str, ...] = ()
    data: Optional[str] = None
    options: tuple[str, ...] = ()
    model: Optional[str] = None
    base_url: Optional[str] = None
    command: str = "eval"
    data_format: Optional[str] = None
    item_per: Optional[str] = None
    span_kinds: tuple[str, ...] = ()
    pair_with: Optional[str] = None
    target: Optional[str] = None
    target_b: Optional[str] = None
    jury: Optional[str] = None
    jury_min: Optional[int] = None

    def to_json_dict(self) -> dict[str, Any]:
        return {"command": self.command, "scorers": list(self.scorers), "data": self.data,
                "options": list(self.options), "model": self.model, "base_url": self.base_url,
                **{name: value for name, value in (("format", self.data_format), ("item_per", self.item_per),
                                                   ("span_kinds", list(self.span_kinds)), ("pair_with", self.pair_with),
                                                   ("target", self.target), ("target_b", self.target_b)) if value},
                **({"jury": self.jury, "jury_min": self.jury_min} if self.jury or self.jury_min else {})}

    @classmethod
    def from_stored(cls, config: Mapping[str, Any] | None) -> ScorerChoice:
        """The choice a stored run recorded in ``config["cli"]`` (the same keys in runs recorded
        before settings were stored whole; the trace keys are absent from runs recorded before
        they were kept)."""
        cli = (config or {}).get("cli") or {}
        return cls(tuple(cli.get("scorers") or ()), cli.get("data"), tuple(cli.get("options") or ()),
                   cli.get("model"), cli.get("base_url"), cli.get("command") or "eval", cli.get("format"),
                   cli.get("item_per"), tuple(cli.get("span_kinds") or ()), pair_with=cli.get("pair_with"),
                   target=cli.get("target"), target_b=cli.get("target_b"), jury=cli.get("jury"),
                   jury_min=cli.get("jury_min"))

    def resumed_from(self, stored: ScorerChoice) -> ScorerChoice:
        """This choice with what it leaves unset taken from `stored`."""
        return ScorerChoice(self.scorers or stored.scorers, self.data or stored.data,
                            self.options or stored.options, self.model or stored.model,
                            self.base_url or stored.base_url, self.command, self.data_format or stored.data_format,
                            self.item_per or stored.item_per, self.span_kinds or stored.span_kinds,
                            pair_with=self.pair_with or stored.pair_with, target=self.target or stored.target,
                            target_b=self.target_b or stored.target_b, jury=self.jury or stored.jury,
                            jury_min=self.jury_min or stored.jury_min)

    def reading(self, traces: TraceFlags) -> TraceFlags:
        """`traces` (the flags as given, with the exports) reading the data as this choice says."""
        return dataclasses.replace(traces, format=self.data_format, item_per=self.item_per,
                                   span_kinds=self.span_kinds)


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
@with_flag_groups
def eval_cmd(
    scorer_args: Annotated[Optional[list[str]], typer.Argument(
        metavar="SCORER...", help="Scorer ids or spec files; LABEL=SPEC runs one under a label (e.g. two versions "
        "of a scorer: faithfulness faithfulness@draft=my_specs/faith.yaml).")] = None,
    scorer_opts: Annotated[list[str], typer.Option("--scorer", help="A scorer (repeatable; same as the "
                                                                    "arguments).")] = [],
    data_arg: Annotated[Optional[str], typer.Option(
        "--data", metavar="FILE", help="JSONL, CSV, JSON-array or Parquet file of items, OTLP JSON traces, "
        "phoenix://HOST:PORT[/PROJECT] (on Ray also a folder, a glob or a URL Ray Data reads).")] = None,
    pair_with: Annotated[Optional[str], typer.Option(
        "--pair-with", metavar="FILE", help="A second file of items: each item's output joins the --data item of "
        "the same id as output_b (the --data item's output is output_a), for a pairwise scorer; an id in one file "
        "only is reported, not scored.")] = None,
    target: Annotated[Optional[str], typer.Option(
        "--target", metavar="MODULE:FUNCTION", help="The system under test: a function (sync or async) from an "
        "item's input to its output, imported from MODULE (the current folder first); its output replaces the "
        "item's.")] = None,
    target_b: Annotated[Optional[str], typer.Option(
        "--target-b", metavar="MODULE:FUNCTION", help="With --target, a second version of the system: each item's "
        "output_a is --target's output and output_b this one's, for a pairwise scorer.")] = None,
    data_format: DataFormat = None,
    item_per: ItemPer = None,
    span_kind: SpanKinds = [],
    export_otlp: ExportOtlp = None,
    export_phoenix: ExportPhoenix = None,
    judge: JudgeFlags = JudgeFlags(),
    run: RayRunFlags = RayRunFlags(),
    stored: StoredRunFlags = StoredRunFlags(),
    threshold: Annotated[list[str], typer.Option(
        "--threshold", help="LABEL=limit (a mean at least as good as limit: ≥, or ≤ for a lower-is-better "
        "scorer) or LABEL=min:max (repeatable; a scorer's label is its id unless given).")] = [],
    store: StorePath = None,
    quiet: Quiet = False,
    as_json: AsJson = False,
    junit: Junit = None,
    summary_md: SummaryMd = None,
    item_cutoff: Annotated[list[str], typer.Option("--item-cutoff", metavar="ID=VALUE", help=ITEM_CUTOFF_HELP)] = [],
    report_file: Report = None,
    calibration: CalibrationRefs = [],
    threshold_corrected: ThresholdCorrected = [],
    confidence: Confidence = 0.95,
) -> None:
    """Score a dataset with one or more scorers; print a summary; exit 0 passed, 1 below a
    threshold (or an item below its --item-cutoff), 2 errors, 3 stopped by the --max-cost budget."""
    # $SCORESPEC_MODEL stands for --model for every scorer (`engine.judge.model`): the run records it
    # as such, so a resume reads it back, and one under another $SCORESPEC_MODEL is refused
    model = judge.model or environment.value("SCORESPEC_MODEL")
    choice = ScorerChoice(tuple(scorer_args or ()) + tuple(scorer_opts), data_arg, tuple(judge.option), model,
                          judge.base_url, data_format=data_format, item_per=item_per, span_kinds=tuple(span_kind),
                          pair_with=str(Path(pair_with).resolve()) if pair_with else None,
                          target=target, target_b=target_b, jury=judge.jury, jury_min=judge.jury_min)
    outputs = EvalOutputs(quiet, as_json, junit, summary_md, tuple(item_cutoff), report_file,
                          TraceFlags(data_format, item_per, tuple(span_kind), export_otlp, export_phoenix),
                          CorrectionFlags(tuple(calibration), tuple(threshold_corrected), confidence))
    run_eval(choice, EvalFlags(judge, run, stored, tuple(threshold)), outputs, store)


@dataclass(frozen=True)
class EvalFlags:
    """The flag groups of ``eval`` as given, and its ``--threshold`` values."""

    judge: JudgeFlags
    run: RayRunFlags
    stored: StoredRunFlags
    thresholds: tuple[str, ...] = ()


def run_eval(choice: ScorerChoice, flags: EvalFlags, outputs: EvalOutputs, store: Optional[Path]) -> None:
    """``eval`` once its flags are read: resume what the stored run recorded, check, load the
    scorers, run, print and write the reports; exits with the run's exit code (see the module
    docstring)."""
    from .runs import open_store

    if outputs.report_file is not None:
        check_report_dependencies()
    db = open_store(store)
    try:
        record = _stored_record(db, flags.stored)
        if record is not None:
            choice = _resumed_choice(record, choice)
        judge = flags.judge.replace(model=choice.model, base_url=choice.base_url, option=list(choice.options),
                                    jury=choice.jury, jury_min=choice.jury_min)
        settings, judge_settings = build_settings(judge, flags.run, flags.stored, thresholds=list(flags.thresholds))
        if record is not None:
            settings = _resumed_settings(record, settings)
        data = _checked_data(choice, settings)
        corrections = loaded_or_exit(outputs.correction, db)
        scorers = load_scorers(list(choice.scorers), judge_settings, list(choice.options), settings.samples)
        cutoffs = item_cutoffs_or_exit(list(outputs.item_cutoff), scorers) if outputs.item_cutoff else dict(
            settings.item_cutoffs or {})  # resumed: the run's own
        settings = dataclasses.replace(settings, item_cutoffs=cutoffs or None)
        items, settings = _paired(choice, data, settings, scorers) if choice.pair_with else (
            trace_data(data, choice.reading(outputs.traces)), settings)
        summary = _run(items, scorers, settings, db, outputs.quiet,
                       dataclasses.replace(choice, data=data if "://" in data else str(Path(data).resolve())))
        # an exported score is labelled pass/fail at the run's item cut-off, else at the cut-off its spec documents
        documented = {s.label: s.cutoff for s in scorers if getattr(s, "cutoff", None) is not None}
        notes = export_or_exit(db, summary.run_id, scorers, {**documented, **cutoffs}, outputs.traces)
        apply_or_exit(summary, corrections, outputs.correction, db)
        _print_and_write(summary, scorers, cutoffs, outputs, db, notes)
    finally:
        db.close()


def _stored_record(db: Any, flags: StoredRunFlags) -> dict[str, Any] | None:
    """With ``--resume``, the stored run it continues (by ``--run-id``, else by its ``--out``
    file), read once; None without ``--resume``, or for an out file the store does not know
    (written without a store: it resumes from the file alone, as before)."""
    from ..run.resume import stored_run_of
    from .runs import find_run

    if not flags.resume:
        return None
    if flags.out is None and flags.run_id is not None:
        return find_run(db, flags.run_id)
    try:
        return stored_run_of(Path(flags.out) if flags.out is not None else None, flags.run_id, db)
    except LookupError as exc:  # a run-id prefix of several runs
        fail(str(exc))


def _resumed_choice(record: dict[str, Any], choice: ScorerChoice) -> ScorerChoice:
    """`choice` with what it leaves unset taken from the stored run `record`; exits 2 when it
    names other scorers, options, data or model than the run (`_check_same_choice`)."""
    stored_choice = ScorerChoice.from_stored(record.get("config"))
    if stored_choice.scorers:  # a run the CLI recorded (a run from Python has no choice to compare)
        _check_same_choice(record["run_id"], choice, stored_choice)
    return choice.resumed_from(stored_choice)


def _resumed_settings(record: dict[str, Any], settings: RunSettings) -> RunSettings:
    """`settings` with what the flags leave unset taken from the stored run `record`
    (`RunSettings.resumed_from`: a flag given wins); a run id given becomes the stored run's whole
    id, and the out file, unless given, the run's."""
    from ..run.settings import RunSettings

    settings = settings.resumed_from(RunSettings.from_stored(record.get("config")))
    out = settings.out if settings.out is not None or not record.get("out") else Path(record["out"])
    # by --run-id, the stored run's whole id (a prefix may be given); by --out, the out file names the
    # run (`engine.run.resume.find_prior` finds it there, or in the store for an out file a stopped
    # driver left empty)
    run_id = record["run_id"] if settings.run_id is not None else None
    return dataclasses.replace(settings, run_id=run_id, out=out)


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
    for name in ("data_format", "item_per", "span_kinds"):  # another reading of the traces: other items
        if getattr(given, name) and getattr(stored, name) and getattr(given, name) != getattr(stored, name):
            differs.append(name)
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
    for name, flag in (("data_format", "--format"), ("item_per", "--item-per"), ("span_kinds", "--span-kind")):
        if name in differs:
            value = getattr(choice, name)
            text += f" with {flag} {','.join(value) if isinstance(value, tuple) else value}"
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
    if remote and not on_ray and not data.lower().startswith("phoenix://"):
        fail(f"--data {data}: a URL is read by the Ray executor only (--executor ray)")
    pattern = on_ray and any(c in data for c in "*?[")  # a glob Ray Data expands
    if not remote and not pattern and not Path(data).is_file() and not (on_ray and Path(data).is_dir()):
        fail(f"--data {data}: no such file")
    if settings.resume and settings.out is None and settings.run_id is None:
        fail("--resume needs --out FILE or --run-id ID (see `scorespec runs`)")
    return data


def _paired(choice: ScorerChoice, data: str, settings: RunSettings, scorers: list[Any]) -> tuple[list[Any],
                                                                                                 RunSettings]:
    """``--pair-with``: the items of `data` joined with those of the second file by id
    (`engine.run.pairing`; the field mapping applied to both, so not again to the pairs); the ids
    found on one side only printed on stderr. Exits 2 for a second file that is missing, or no id
    in common."""
    from ..run.runner import declared_names
    from ..run.items import DatasetError, parse_fields
    from ..run.pairing import pair_items
    from .output import err_console

    assert choice.pair_with is not None
    if "://" in data or not Path(choice.pair_with).is_file():
        fail(f"--pair-with {choice.pair_with}: no such file" if "://" not in data
             else "--pair-with: only with a --data file")
    try:
        fields = settings.fields if settings.fields is None or isinstance(settings.fields, Mapping) else parse_fields(
            settings.fields, declared_names(scorers))
        items = pair_items(Path(data), Path(choice.pair_with), fields,
                           note=lambda text: err_console().print(f"note: {text}", markup=False, highlight=False,
                                                                 soft_wrap=True, style="yellow"))
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    return items, dataclasses.replace(settings, fields=None)


def load_target(reference: str, flag: str) -> Any:
    """The function ``MODULE:FUNCTION`` names (``MODULE`` imported with the current folder first on
    the path; ``FUNCTION`` may be dotted: ``app:Bot.answer``). Exits 2 naming `flag` for a reference
    without a colon, a module that cannot be imported, or a name that is missing or not callable."""
    import importlib

    module_name, sep, name = reference.partition(":")
    if not sep or not module_name.strip() or not name.strip():
        fail(f"{flag} {reference}: expected MODULE:FUNCTION (e.g. my_app:answer)")
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        found: Any = importlib.import_module(module_name.strip())
    except Exception as exc:  # the user's module: any error on import is theirs to see
        fail(f"{flag} {reference}: cannot import {module_name!r} ({type(exc).__name__}: {exc})")
    for part in name.strip().split("."):
        if not hasattr(found, part):
            fail(f"{flag} {reference}: {module_name!r} has no {name!r}")
        found = getattr(found, part)
    if not callable(found):
        fail(f"{flag} {reference}: {name!r} is not callable")
    return found


def _on_ray(settings: RunSettings) -> bool:
    """Whether the run goes to Ray; exits (2) for an unknown executor or Ray flags without
    ``--executor ray``."""
    if settings.executor not in (None, "local", "ray"):
        fail(f"--executor {settings.executor}: expected local or ray")
    if settings.executor != "ray" and settings.ray:
        fail(f"{', '.join(RAY_FLAGS.get(name, name) for name in settings.ray)}: only with --executor ray")
    return settings.executor == "ray"


def _run(data: Any, scorers: list[Any], settings: RunSettings, db: Any, quiet: bool,
         choice: ScorerChoice) -> EvalSummary:
    """The run on the terminal (`engine.api.arun_evals`, which resolves the executor)."""
    from ..api import arun_evals
    from .output import ConsoleReporter

    if isinstance(data, str) and "://" not in data:
        data = Path(data)
    targets = {"target": load_target(choice.target, "--target") if choice.target else None,
               "against": load_target(choice.target_b, "--target-b") if choice.target_b else None}
    if targets["against"] is not None and targets["target"] is None:
        fail("--target-b: give the first version with --target too")
    return run_async(arun_evals(data, scorers, settings, store=db, progress=ConsoleReporter(quiet=quiet),
                                config={"cli": choice.to_json_dict()}, **targets),
                     "interrupted: every completed result is saved; run the same command with --resume to continue")


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


__all__ = ["eval_cmd", "load_target", "run_eval", "ScorerChoice", "EvalFlags", "EvalOutputs"]

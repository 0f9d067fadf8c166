"""The `scorespec` command line (typer + rich): the console script `main`, and the commands on
one spec or item (``list``, ``schema``, ``validate``, ``run``, ``render``).

The batch commands live in their own modules (`engine.cli.eval`, `calibrate`, `compare`, `align`,
`runs`), which the command group (`engine.cli.app.Commands`) imports when one is asked for. The
`app`, exit codes, `fail` and the ``--option`` parser live in `engine.cli.app`; errors are handled
once for every command (`engine.cli.errors`).
Exit codes (all commands): 0 success; 1 an eval's threshold was not met; 2 errors (a spec
problem, bad input, an item that failed, a usage error).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .app import EXIT_ERROR, app, fail, parse_options
from .app import stderr_console as _stderr
from .app import stdout_console as _stdout
from .cache import cache_app
from .flags import JudgeFlags, build_settings, with_flag_groups
from .options import (
    ItemContext,
    ItemFields,
    ItemGroundTruth,
    ItemInput,
    ItemMessagesFile,
    ItemOutput,
    ItemToolCallsFile,
    Language,
    Options,
    SpecArg,
)

app.add_typer(cache_app, name="cache")

# re-exported: `engine.cli.main` is where the console script, `python -m engine` and tests find them
__all__ = ["main", "print_result", "not_scorable_why"]


@app.command("list")
def list_cmd(show_functions: bool = typer.Option(False, "--functions", help="List the rule functions instead: each "
                                                 "one's signature, result and size limit."),
             as_json: bool = typer.Option(False, "--json", help="With --functions: their argument and result "
                                          "schemas as JSON.")) -> None:
    """List the built-in and local scorer specs (a local spec shadows a built-in of the same id),
    grouped: LLM scorers (they ask a judge), rule scorers (no model), then abstract bases; each
    with the direction in which its scores are better."""
    if show_functions:
        _list_functions(as_json)
        return
    from rich.markup import escape
    from rich.table import Table

    from ..core.direction import short
    from ..core.errors import SpecError
    from ..functions import names
    from ..spec.catalog import list_specs
    from ..spec.compile import compile_file

    groups: dict[str, list[tuple[str, ...]]] = {"LLM": [], "rule": [], "base": [], "?": []}
    entries = list_specs()
    for entry in entries:
        if entry.abstract:
            groups["base"].append((entry.id, "base", "", "", escape(entry.origin) + " (abstract base)",
                                   "a base for other specs (extends: " + entry.id + "); not run itself"))
            continue
        try:
            spec = compile_file(entry.path)
            kind = "LLM" if spec.uses_judge else "rule"
            groups[kind].append((entry.id, kind, short(spec.direction), escape(spec.name),
                                 escape(entry.origin) + (" (shadows built-in)" if entry.shadows_builtin else ""),
                                 escape(spec.description)))
        except SpecError as exc:
            groups["?"].append((entry.id, "?", "?", "?", entry.origin,
                                f"[red]invalid: {len(exc.problems)} problem(s)[/red]"))
    # kind: LLM (asks a judge) or rule (no model); better: which scores are better
    table = Table("id", "kind", "better", "name", "origin", "description", box=None, pad_edge=False)
    table.columns[0].no_wrap = True  # an id is what the other commands take: never cut
    table.columns[0].min_width = max((len(e.id) for e in entries), default=2)
    for rows in (rows for rows in groups.values() if rows):
        if table.row_count:
            table.add_row()  # a blank line between groups
        for row in rows:
            table.add_row(*row)
    console = _stdout()
    console.print(table)
    console.print(f"\nrule functions: {', '.join(names())} (`scorespec list --functions` for their arguments)")


def _list_functions(as_json: bool) -> None:
    """Every registered rule function: signature, result keys, summary and size limit (or, as
    JSON, its argument and result schemas)."""
    from ..functions import all_functions

    found = all_functions()
    if as_json:
        sys.stdout.write(json.dumps([{"name": f.name, "summary": f.summary, "limit": f.limit, "args": f.args_schema(),
                                      "result": f.result} for f in found], indent=2, ensure_ascii=False) + "\n")
        return
    for function in found:
        typer.echo(f"{function.signature()}\n  -> {function.result_words()}")
        typer.echo(f"  {function.summary}" + (f" Limit: {function.limit}." if function.limit else ""))


@app.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the spec format (for editors and CI)."""
    from ..spec.models import spec_json_schema

    sys.stdout.write(json.dumps(spec_json_schema(), indent=2) + "\n")


@app.command("validate")
def validate_cmd(paths: list[Path] = typer.Argument(None, help="Spec files or folders (default: the specs in "
                                                   "./scorer_specs/, or the built-ins where there are none)."),
                 strict: bool = typer.Option(False, "--strict", help="Count warnings (a declared field the spec "
                                             "never reads) as errors: exit 2 when there is one.")) -> None:
    """Load and compile specs; print every problem as file:line:col: key: message (hint) [code],
    and every warning as file:line:col: warning: message [code]. Exit 2 on a problem (with
    --strict, on a warning too), else 0."""
    from ..spec.catalog import list_specs
    from ..spec.compile import validate_specs

    # no path: the local scorer_specs/ (its specs' parents are checked through them), else the built-ins
    entries = list_specs()
    local = [entry for entry in entries if entry.origin == "local"]
    targets = list(paths) if paths else [_relative(entry.path) for entry in (local or entries)]
    if not paths:
        for skipped in sorted(Path("scorer_specs").glob("*.yml")):
            typer.echo(f"{skipped}: warning: not read (a spec file ends in .yaml: rename it "
                       f"{skipped.stem}.yaml)", err=True)
    missing = [p for p in targets if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(map(str, missing))}")
    empty = [p for p in targets if p.is_dir() and not any(p.glob("*.yaml"))]
    if empty:
        yml = sorted(f.name for p in empty for f in p.glob("*.yml"))
        more = " …" if len(yml) > 3 else ""
        hint = f" (found {', '.join(yml[:3])}{more}: name a spec *.yaml, or give its file)" if yml else ""
        fail(f"no spec in {', '.join(map(str, empty))}: a folder's specs are its *.yaml files{hint}")
    by_spec = validate_specs(targets, warnings=True)
    count = len(by_spec)
    problems = sorted({p: None for found in by_spec.values() for p in found},  # a parent's once, not per child
                      key=lambda p: (p.file, p.line, p.column, p.key_path, p.code))
    # plain lines, no rich console: importing rich is a tenth of this command's cold start
    for problem in problems:
        typer.echo(problem.render(), err=True)

    def counted(problem: Any) -> bool:
        return strict or problem.severity == "error"

    errors = [p for p in problems if counted(p)]
    warnings = len(problems) - len(errors)
    also = f", {warnings} warning(s)" if warnings else ""
    if errors:
        failing = sum(1 for found in by_spec.values() if any(counted(p) for p in found))
        note = " (warnings are errors with --strict)" if strict and any(p.severity == "warning" for p in errors) else ""
        typer.echo(f"{len(errors)} problem(s) in {failing} of {count} spec(s){also}{note}", err=True)
        raise typer.Exit(EXIT_ERROR)
    typer.echo(f"ok: {count} spec(s) valid" + (f"{also} (--strict makes them errors)" if warnings else ""), err=True)


def _relative(path: Path) -> Path:
    """`path` relative to the current directory when it lies under it (local specs read as
    ``scorer_specs/x.yaml``), else as it is."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _load(spec: str, judge_flags: JudgeFlags, judge: Any = None) -> Any:
    """The scorer `spec` names, bound to the judge the flags describe (or to `judge`)."""
    from ..bind.stack import bind
    from ..core.errors import SpecError
    from ..spec.compile import load_spec

    try:
        compiled = load_spec(spec)
    except SpecError as exc:
        fail("the spec has problems:\n" + exc.render())
    except FileNotFoundError as exc:
        fail(str(exc))
    _, settings = build_settings(judge_flags)
    return bind(compiled, settings, judge=judge, options=parse_options(judge_flags.option, [compiled])[compiled.id])


def _item(scorer: Any, output: Optional[str], input: Optional[str], ground_truth: Optional[str],
          context: Optional[list[str]], messages_file: Optional[Path], tool_calls_file: Optional[Path],
          field: list[str]) -> dict[str, Any]:
    """The item the flags give (`engine.cli.item`); exits with the problem when they cannot."""
    from .item import item_from_flags

    try:
        return item_from_flags(scorer.plan.declared, output=output, input=input, ground_truth=ground_truth,
                               context=context, messages_file=messages_file, tool_calls_file=tool_calls_file,
                               fields=field)
    except ValueError as exc:
        fail(str(exc))


class _NoJudge:
    """The judge of `render`, which calls no model (so no model string needs to work)."""

    model = "none"

    async def ask(self, call: Any) -> Any:
        raise RuntimeError("render calls no model")


@app.command("run")
@with_flag_groups
def run_cmd(
    spec: SpecArg,
    output: ItemOutput = None,
    input: ItemInput = None,
    ground_truth: ItemGroundTruth = None,
    context: ItemContext = None,
    messages_file: ItemMessagesFile = None,
    tool_calls_file: ItemToolCallsFile = None,
    field: ItemFields = [],
    judge: JudgeFlags = JudgeFlags(),
    as_json: bool = typer.Option(False, "--json", help="Print only the result's JSON on stdout."),
    language: Language = None,
) -> None:
    """Score one item and print the score, the reason and a per-stage summary."""
    scorer = _load(spec, judge)
    if language is not None:
        scorer = scorer.with_language(language)
    item = _item(scorer, output, input, ground_truth, context, messages_file, tool_calls_file, field)
    result = scorer.run(**item)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json_dict(), ensure_ascii=False) + "\n")
    else:
        print_result(result, _stdout(), direction=scorer.plan.direction)
    if result.error is not None:
        if as_json:
            _stderr().print(f"error: [{result.error.kind}] {result.error.message}", markup=False)
        raise typer.Exit(EXIT_ERROR)


def not_scorable_why(reason: str) -> str:
    """A not-scorable reason to print after ``not scorable:``, without a ``Not scorable:`` of its
    own (older or user specs may start their reason with one)."""
    text = reason.strip()
    head = "not scorable"
    if text[:len(head)].casefold() == head and text[len(head):len(head) + 1] in (":", " ", "-", "—", ""):
        text = text[len(head):].lstrip(" :-—")
    return text or reason


def print_result(result: Any, console: Any, direction: str | None = None) -> None:
    """A result for people: score or why none, the reason, a row per stage, and a footer (model,
    spec, its `direction` when given, run)."""
    from rich.markup import escape
    from rich.table import Table

    # messages and reasons quote user text and spec expressions: never read them as rich markup
    if result.error is not None:
        e = result.error
        console.print(f"[red]failed[/red] at stage {escape(e.stage or '-')} ({e.kind}): {escape(e.message)}",
                      soft_wrap=True)
    elif result.not_scorable is not None:
        console.print(f"[yellow]not scorable[/yellow]: {escape(not_scorable_why(result.not_scorable.reason))}",
                      soft_wrap=True)
    else:
        console.print(f"[bold]score[/bold] {result.score:g}", soft_wrap=True)
        if result.reason:
            console.print("reason: " + result.reason, soft_wrap=True, markup=False)
    # judge requests apart from why some were repeated: a `for_each` stage's 25 calls are one per
    # element, not 25 retries
    sampled = any(_sampled(record) for record in result.stages.values())
    table = Table("stage", "kind", "status", "calls", "re-asks", "retries", "tokens in/out", "seconds",
                  *(["samples", "agreement"] if sampled else []), box=None, pad_edge=False)
    for sid, record in result.stages.items():
        status = "skipped" if record.skipped else ("ok" if record.result is not None else "-")
        if result.error is not None and result.error.stage == sid:
            status = "failed"
        u = record.usage
        asked = bool(u.calls)
        table.add_row(sid, record.kind, status, str(u.calls) if asked else "", str(u.reasks) if asked else "",
                      str(u.transport_retries) if asked else "", f"{u.tokens_in}/{u.tokens_out}" if asked else "",
                      f"{u.seconds:.2f}" if asked else "", *(_sampling_cells(record) if sampled else []))
    console.print(table)
    if result.usage.cache_hits or result.usage.cache_misses:
        console.print(f"judge cache: {result.usage.cache_hits} hit(s) · {result.usage.cache_misses} miss(es)",
                      style="dim", markup=False)
    better = f" · {direction.replace('_', ' ')}" if direction else ""
    console.print(f"model {result.model or '-'} · spec {result.scorer} v{result.spec_version} "
                  f"({result.spec_hash[:12]}){better}", style="dim", markup=False,  # no run id: nothing is stored
                  soft_wrap=True)


def _sampled(record: Any) -> bool:
    """Whether a stage's record holds samples (only a prompt stage's can)."""
    return getattr(record, "samples", None) is not None


def _sampling_cells(record: Any) -> list[str]:
    """A sampled stage's samples per question and agreement, for `print_result`'s table."""
    if not _sampled(record):
        return ["", ""]
    if record.agreements is not None:  # for_each: a list of samples per element
        count = str(len(record.samples[0])) if record.samples and record.samples[0] is not None else ""
    else:
        count = str(len(record.samples))
    agreement = "—" if record.agreement is None else f"{record.agreement:.2f}"
    return [count, agreement]


@app.command("render")
def render_cmd(
    spec: SpecArg,
    output: ItemOutput = None,
    input: ItemInput = None,
    ground_truth: ItemGroundTruth = None,
    context: ItemContext = None,
    messages_file: ItemMessagesFile = None,
    tool_calls_file: ItemToolCallsFile = None,
    field: ItemFields = [],
    option: Options = [],
    answer: list[str] = typer.Option([], "--answer", help="stage=JSON: a judge answer, to render later stages."),
    resolved: bool = typer.Option(False, "--resolved", help="Print the spec merged over what it extends, each value "
                                  "with the file and line that wrote it, instead of prompts."),
    language: Language = None,
) -> None:
    """Print the prompts that would be sent to the judge, without calling any model."""
    if resolved:
        _print_resolved(spec)
        return
    scorer = _load(spec, JudgeFlags(option=option, no_cache=True), judge=_NoJudge())
    if language is not None:
        scorer = scorer.with_language(language)
    item = _item(scorer, output, input, ground_truth, context, messages_file, tool_calls_file, field)
    answers = {}
    from ..spec.plans import PromptStagePlan

    prompt_stages = [stage.id for stage in scorer.plan.stages if isinstance(stage, PromptStagePlan)]
    for pair in answer:
        stage, _, raw = pair.partition("=")
        if stage not in prompt_stages:
            from ..core.errors import did_you_mean

            hint = did_you_mean(stage, prompt_stages) or f"its judge stages: {', '.join(prompt_stages) or 'none'}"
            fail(f"--answer {stage}: {scorer.id} has no judge stage {stage!r} ({hint})")
        try:
            answers[stage] = json.loads(raw)
        except json.JSONDecodeError as exc:
            fail(f"--answer {stage}: not JSON: {exc}")
    try:
        shown = scorer.render(answers=answers, **item)
    except Exception as exc:  # the item fails before its first prompt (a ValueError), or an invalid scripted answer
        fail(str(exc) if type(exc) is ValueError else f"{type(exc).__name__}: {exc}")
    juries = {s.id: s.jury.models for s in scorer.plan.stages if isinstance(s, PromptStagePlan) and s.jury}
    for stage, text in shown:
        asked_by = f" (asked by the jury: {', '.join(juries[stage])})" if stage in juries else ""
        sys.stdout.write(f"===== {stage}{asked_by} =====\n{text}\n\n")
    sys.stdout.write(_scores_text(scorer))
    if shown and shown[-1][0] not in answers:
        _stderr().print(f"(stopped: stage {shown[-1][0]!r} needs the judge's answer; pass --answer "
                        f"{shown[-1][0]}='{{…}}' to render what follows)", markup=False)
    elif not shown:
        _stderr().print("(this scorer sends no prompt for this item)", markup=False)


def _scores_text(scorer: Any) -> str:
    """What `render` shows of a spec's named sub-scores and its label result (empty without them)."""
    from ..analysis.label_calibration import classes_of

    plan, lines = scorer.plan, []
    for sub in plan.scores:
        cutoff = "" if sub.cutoff is None else f", cut-off {sub.cutoff:g}"
        about = f" — {sub.description}" if sub.description else ""
        lines.append(f"{sub.name} = {sub.score.formula.source} ({sub.direction.replace('_', ' ')}{cutoff}){about}")
    if plan.label is not None:
        label = plan.label
        values = ", ".join(classes_of(scorer)) or label.values.source
        lines.append(f"label = {label.stage}.{label.field} (one of {values})")
    return "===== scores =====\n" + "\n".join(lines) + "\n\n" if lines else ""


def _print_resolved(spec: str) -> None:
    from ..core.errors import SpecError
    from ..spec.catalog import resolve_spec
    from ..spec.compile import compile_document
    from ..spec.inherit import load_document
    from ..spec.resolved import render_resolved

    try:
        doc = load_document(resolve_spec(spec))
        sys.stdout.write(render_resolved(doc))
        if not (isinstance(doc.data, dict) and doc.data.get("abstract") is True):
            compile_document(doc)
    except FileNotFoundError as exc:
        fail(str(exc))
    except SpecError as exc:
        fail("the spec has problems:\n" + exc.render())


@app.command("new")
def new_cmd(
    spec_id: str = typer.Argument(..., metavar="ID", help="The new scorer's id (lower case, digits, _)."),
    extends: Optional[str] = typer.Option(None, "--extends", help="Start from this scorer: the new spec extends "
                                          "it and overrides its first prompt stage (or those --stage names) with a "
                                          "copy of its prompt to edit."),
    stage: list[str] = typer.Option([], "--stage", metavar="STAGE", help="With --extends: copy this prompt "
                                    "stage's prompt (repeatable; default: the first prompt stage)."),
    all_stages: bool = typer.Option(False, "--all-stages", help="With --extends: copy every prompt stage's prompt."),
    shadow: bool = typer.Option(False, "--shadow", help="Allow the id of a built-in scorer: the local spec replaces "
                                "it in this folder."),
) -> None:
    """Write a starting spec into ./scorer_specs/ and a prompt to edit into ./prompts/."""
    from ..core.errors import SpecError
    from ..spec.scaffold import StageChoiceError, new_spec

    try:
        written = new_spec(spec_id, extends, shadow=shadow, stages=stage, all_stages=all_stages)
    except StageChoiceError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--stage'") from None
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        fail(str(exc))
    except SpecError as exc:
        fail(f"{extends} has problems:\n" + exc.render())
    for line in _new_lines(spec_id, extends, written, stage, all_stages):
        _stderr().print(line, markup=False, soft_wrap=True)


def _new_lines(spec_id: str, extends: Optional[str], written: list[Path], stages: list[str],
               all_stages: bool) -> list[str]:
    """What `new` tells: each file written (a copied prompt with its stage), the parent's prompt
    stages left inherited and how to override one, then what to do next."""
    from ..spec.catalog import is_abstract, resolve_spec
    from ..spec.scaffold import prompt_name, stage_copies

    lines = [f"wrote {_relative(written[0]).as_posix()}"]
    if extends is None or is_abstract(resolve_spec(extends)):
        lines += [f"wrote {_relative(path).as_posix()}" for path in written[1:]]
        copies = []
    else:
        copies = stage_copies(spec_id, extends, stages, all_stages)
    left = [c for c in copies if not c.copied]
    lines += [f"wrote prompts/{c.prompt} (stage {c.stage})" for c in copies if c.copied]
    lines += [f"inherited as it is: {c.stage} ({prompt_name(c.source)})" for c in left]
    if left:
        lines.append(f"to override {'it' if len(left) == 1 else 'one'} too: cp {left[0].source} prompts/{spec_id}/ "
                     f"and uncomment its lines in scorer_specs/{spec_id}.yaml (`scorespec new` copies the prompts of "
                     f"the stages --stage names when it writes a spec, e.g. --stage {left[0].stage}; --all-stages "
                     "copies every one)")
    lines.append(f"next: edit them, then `scorespec validate` and `scorespec run {spec_id} --output …`")
    return lines


def main(argv: list[str] | None = None) -> None:
    """The console script: the ``scorespec`` command group (`engine.cli.app.Commands` loads a
    batch command's module when it is asked for, which keeps `validate`, `run` and `list` quick
    to start, and handles every command's errors)."""
    from .app import EXIT_CLOSED_PIPE, null_stdout

    try:
        app(args=sys.argv[1:] if argv is None else argv)
    finally:
        try:
            sys.stdout.flush()  # a closed pipe refuses here, not at the interpreter's exit
        except BrokenPipeError:
            null_stdout()
            raise SystemExit(EXIT_CLOSED_PIPE) from None


if __name__ == "__main__":  # pragma: no cover - `python -m engine.cli.main`: use the importable module's app
    from .main import main as _main

    _main()

"""``scorespec align``: propose edits that raise a scorer's agreement with human labels, keep the one
that holds up on a held-out test split, and write it as an ``extends:`` child spec
(`engine.alignment`).

Registered on `engine.cli.app.app` when imported (the command group imports it when ``align`` is
asked for); its judge and run flags are the groups of `engine.cli.flags`, as every batch command
has them (``--samples`` and ``--language`` included). Exit
codes: 0 (also when no candidate beat the scorer on dev: nothing written); 1 when the chosen
candidate is not adopted (its win on dev within noise, or worse on test: written under
``OUT/rejected/``); 2 on errors; 3 when the ``--max-cost`` budget stopped it (``--resume`` continues); 130
interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .app import EXIT_BUDGET, EXIT_THRESHOLD, app, fail
from .errors import run_async
from .flags import JudgeFlags, RunFlags, build_settings, with_flag_groups
from .html import check_report_dependencies
from .label_files import LabelsFile, labelled_data
from .options import (
    AsJson,
    Cutoff,
    LabelField,
    Negative,
    Positive,
    Quiet,
    Report,
    with_help,
)

__all__ = ["align_cmd"]

AlignJson = with_help(AsJson, "Print the record as JSON on stdout: parent, child, split, candidates, test.")
AlignReport = with_help(Report, "Write an HTML page of the alignment: the candidates with their dev figures, the "
                        "comparison with the scorer on the test split, and the diff of the child's prompt.")


@app.command("align")
@with_flag_groups
def align_cmd(
    scorer: Annotated[str, typer.Argument(metavar="SCORER", help="The scorer to align: an id or a spec file.")],
    data: Annotated[Path, typer.Option("--data", help="JSONL, CSV or JSON-array file of labelled items.")],
    label_field: LabelField = "label",
    labels_file: LabelsFile = None,
    positive: Positive = [],
    negative: Negative = [],
    cutoff: Cutoff = None,
    stage: Annotated[Optional[str], typer.Option("--stage", help="The prompt stage to align [default: the last "
                                                 "prompt stage].")] = None,
    split: Annotated[Optional[str], typer.Option("--split", metavar="TRAIN,DEV,TEST", help="Proportions of the "
                                                 "stratified split, each > 0 [default: 0.5,0.25,0.25].")] = None,
    test: Annotated[Optional[Path], typer.Option("--test", metavar="FILE", help="A separate held-out test file "
                                                 "(the data then splits into train and dev only).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="The split's and the sampling's seed.")] = 0,
    strategies: Annotated[str, typer.Option("--strategies", help="Which candidates to propose, comma-separated: "
                                            "instructions, examples, cutoff, scoring.")] =
    "instructions,examples,cutoff,scoring",
    candidates: Annotated[int, typer.Option("--candidates", min=1, help="Candidates at most (instructions fills "
                                            "what the other strategies leave).")] = 4,
    optimizer_model: Annotated[Optional[str], typer.Option("--optimizer-model", help="The model that proposes "
                                                           "instructions [default: the judge itself].")] = None,
    name: Annotated[Optional[str], typer.Option("--name", metavar="NEW_ID", help="The child's id: a spec id "
                                                "(a-z, 0-9, _), not the scorer's nor a shipped scorer's [default: "
                                                "SCORER_aligned].")] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", metavar="DIR", help="Where scorer_specs/NEW_ID.yaml, "
                                          "prompts/NEW_ID/ and NEW_ID.align.json go.")] = Path("."),
    judge: JudgeFlags = JudgeFlags(),
    run: RunFlags = RunFlags(),
    resume: Annotated[bool, typer.Option("--resume", help="Continue the alignment in --out-dir (its split and "
                                         "proposals; the judge-call cache answers what was asked).")] = False,
    report_file: AlignReport = None,
    quiet: Quiet = False,
    as_json: AlignJson = False,
) -> None:
    """Align a scorer with human labels: propose candidate child specs from a train split (rewritten
    instructions, worked examples, a fitted cut-off, the other scoring), choose one on a dev split,
    compare it with the parent once on a held-out test split, and write it as a child spec that
    extends the parent (only a candidate that beats the parent on dev by more than noise, and is not
    worse on test, is adopted: else it goes to OUT/rejected/, exit 1). Exit 2 on errors, 3 when the
    --max-cost budget stopped it."""
    from ..alignment.settings import AlignSettings
    from .loading import load_scorers

    for path, flag in ((data, "--data"), (test, "--test")):
        if path is not None and not path.is_file():
            fail(f"{flag} {path}: no such file")
    if negative and not positive:
        fail("--negative needs --positive too")
    if report_file is not None:
        check_report_dependencies()
    try:
        settings = AlignSettings(label_field=label_field or "label", positive=positive or None,
                                 negative=negative or None, cutoff=cutoff, stage=stage,
                                 fractions=split or "0.5,0.25,0.25", seed=seed, test_data=test, strategies=strategies,
                                 candidates=candidates, optimizer_model=optimizer_model, name=name, out_dir=out_dir)
    except (TypeError, ValueError) as exc:
        fail(str(exc))
    run_settings, judge_settings = build_settings(judge, run)
    (loaded,) = load_scorers([scorer], judge_settings, judge.option, run_settings.samples)
    if resume:
        _note_nothing_to_resume(out_dir, settings.name or f"{loaded.id}_aligned")
    result = _align(loaded, labelled_data(data, labels_file, settings.label_field), settings, run_settings, resume, quiet)
    _print(result, as_json)
    if report_file is not None:
        from ..report.align_section import write_align_report

        write_align_report(report_file, result)
    raise typer.Exit(_exit_code(result))


def _exit_code(result: Any) -> int:
    """3: stopped by the budget; 1: the chosen candidate not adopted; 0: adopted, or none better
    than the parent on dev; 2: no candidate could be run."""
    if result.stopped:
        return EXIT_BUDGET
    if result.rejected:
        return EXIT_THRESHOLD
    return 0 if result.child or any(c.dev is not None for c in result.candidates) else 2


def _note_nothing_to_resume(out_dir: Path, name: str) -> None:
    """A note on stderr (not an error) when --resume finds no earlier alignment to continue."""
    from ..alignment.files import state_file
    from .output import err_console

    found = state_file(out_dir, name)
    if not found.is_file():
        err_console().print(f"note: --resume: no alignment to resume ({found} does not exist); starting afresh",
                            markup=False, highlight=False, soft_wrap=True, style="yellow")


def _align(loaded: Any, data: Path, settings: Any, run: Any, resume: bool, quiet: bool) -> Any:
    """`engine.api.aalign` on the terminal, its phases on stderr (unless `quiet`)."""
    from ..api import aalign
    from .output import ConsoleReporter, err_console

    def phase(line: str) -> None:
        if not quiet:
            err_console().print(f"align: {line}", markup=False, highlight=False, soft_wrap=True)

    return run_async(aalign(loaded, data, settings, run, resume=resume, on_phase=phase,
                            progress=ConsoleReporter(quiet=quiet, per_item=False)),
                     "interrupted: run the same command with --resume to continue")


def _print(result: Any, as_json: bool) -> None:
    """The candidates and the test comparison for people (on stderr with --json)."""
    from rich.table import Table

    from .output import err_console, fmt, out_console

    console = err_console() if as_json else out_console()
    table = Table("candidate", "strategy", "change", "dev bal. acc.", "dev ROC AUC", "dev Spearman", box=None,
                  pad_edge=False)
    if result.parent_dev is not None:
        d = result.parent_dev
        table.add_row(result.parent, "parent", "—", fmt(d.balanced_accuracy), fmt(d.roc_auc), fmt(d.spearman))
    for c in result.candidates:
        d = c.dev
        table.add_row(c.name + (" *" if c.name == result.chosen else ""), c.strategy, c.dropped or c.change,
                      fmt(d.balanced_accuracy if d else None), fmt(d.roc_auc if d else None),
                      fmt(d.spearman if d else None))
    console.print(table)
    lines = []
    if result.test is not None:
        lines.append(f"test: {result.test.words}")
    lines += [f"wrote {path}" for path in result.files]
    lines += [f"note: {note}" for note in result.notes]
    if result.stopped:
        lines.append(f"stopped: {result.stopped}")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json_dict(), ensure_ascii=False) + "\n")

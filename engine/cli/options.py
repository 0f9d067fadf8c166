"""The options the judging commands share, each declared once (`typing.Annotated` types).

``eval``, ``calibrate``, ``compare`` and ``run`` declare a shared option by its type here, e.g.
``concurrency: Concurrency = None``: one flag name, one help text, one range for every command.
Where the shared text would not be true for a command (a flag it does not have, another
command's default), a variant made by `with_help` from the same declaration changes only the
text (e.g. `LocalConcurrency` for commands without ``--executor``). The help texts are module
constants, so others (the README, tests) can name them. Importing this
module imports only typer and `engine.cli.app` / `engine.cli.cache` / `engine.cli.ci_files` /
`engine.cli.html` (all light), so ``scorespec --help`` stays quick.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Optional, get_args

import typer

from .app import MODEL_HELP
from .cache import CACHE_HELP, NO_CACHE_HELP, REFRESH_HELP
from .ci_files import JUNIT_HELP, SUMMARY_MD_HELP
from .html import REPORT_HELP

__all__ = [
    "SpecArg", "ItemOutput", "ItemInput", "ItemGroundTruth", "ItemContext", "ItemMessagesFile",
    "ItemToolCallsFile", "ItemFields",
    "ACTORS_HELP", "CONCURRENCY_HELP", "CONCURRENCY_LOCAL_HELP", "CPUS_PER_ACTOR_HELP", "EXECUTOR_HELP",
    "JUNIT_LABELS_HELP", "LANGUAGE_HELP", "MAX_COST_HELP", "PRICES_HELP", "RAY_ADDRESS_HELP", "SAMPLES_HELP", "STORE_HELP",
    "AsJson", "BaseUrl", "Cache", "CompareCutoff", "CompareLabelField", "CompareTop", "ComparisonJson", "Concurrency",
    "Cutoff",
    "Fields", "FiguresJson", "Junit", "LabelField", "Language", "LabelsJunit", "Limit", "LocalConcurrency", "MaxCost", "Model",
    "Negative", "NoCache", "Options", "Out", "Positive", "Prices", "Quiet", "RateLimit", "Refresh", "Report",
    "Resume", "ResumeOut", "RunId", "Samples", "StorePath", "SummaryMd", "Top", "with_help",
    "DataFormat", "ItemPer", "SpanKinds", "ExportOtlp", "ExportPhoenix",
]

SAMPLES_HELP = ("Ask every prompt stage N times and reduce the answers (the stage's reduce: majority vote, mean, "
                "median…), without editing the spec; stages whose answer nothing can reduce are asked once.")
PRICES_HELP = ("A price table (YAML, US dollars per million tokens) used before the shipped one [default: "
               "$SCORESPEC_PRICES, else prices.yaml in the cache folder].")
MAX_COST_HELP = ("A budget in US dollars: stop before the next item would pass it (exit 3; --resume continues, "
                 "counting what was spent). Every judge model needs a price.")
EXECUTOR_HELP = ("Where items are scored: local (this process) or ray (a pool of Ray actors; needs scorespec[ray]: "
                 "starts a local Ray unless --ray-address is given).")
LANGUAGE_HELP = ("The items' language: auto (detected per item from the output, then the input; a short text counts "
                 "as English) or an ISO 639-1 code such as fr, de, zh, ja, in any case. An item's own language "
                 "field wins. Judges write their claims, questions and reasons in it; labels stay as the schema "
                 "gives them.")
RAY_ADDRESS_HELP = "With --executor ray: the Ray cluster to join (auto, or the head's HOST:PORT)."
ACTORS_HELP = "With --executor ray: scoring actors, each with --concurrency judge requests in flight [default: 2]."
CPUS_PER_ACTOR_HELP = "With --executor ray: CPUs each actor reserves, fractions allowed [default: 0.5]."
CONCURRENCY_LOCAL_HELP = "Scorer runs (judge requests) at once [default: 8; 1 on an embedded model]."
CONCURRENCY_HELP = CONCURRENCY_LOCAL_HELP[:-1] + "; per actor with --executor ray."
STORE_HELP = "SQLite store (default $SCORESPEC_STORE or .scorespec/store.sqlite)."
JUNIT_LABELS_HELP = ("Write a JUnit XML report: a test case per item and scorer (failed → error, not scorable → "
                     "skipped).")


def _positive(value: Optional[float]) -> Optional[float]:
    """A number option's value when it is > 0 (or not given); else a usage error (exit 2)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"a number > 0 is needed, not {value}")
    return value


def _not_negative(value: Optional[float]) -> Optional[float]:
    """A number option's value when it is ≥ 0 (or not given); else a usage error (exit 2)."""
    if value is not None and not value >= 0:
        raise typer.BadParameter(f"a number ≥ 0 is needed, not {value}")
    return value


def _language(value: Optional[str]) -> Optional[str]:
    """A ``--language`` value in lower case (``auto`` or an ISO 639-1 code), or not given; else a
    usage error (exit 2) before any item is read."""
    if value is None:
        return None
    from ..core.language import LanguageError, check_language

    try:
        return check_language(value, "--language")
    except LanguageError as exc:
        raise typer.BadParameter(str(exc).removeprefix("--language: ")) from None


def with_help(option: Any, help: str) -> Any:
    """The shared option type `option` (``Annotated[T, typer.Option(...)]``) with another help
    text: the same flag, type and range, for a command where the shared text would not be true."""
    base, info = get_args(option)
    info = copy.copy(info)
    info.help = help
    return Annotated[base, info]


# --- the judge and the scorers -----------------------------------------------------------------
Model = Annotated[Optional[str], typer.Option("--model", help=MODEL_HELP)]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="An OpenAI-compatible server's URL.")]
Jury = Annotated[Optional[str], typer.Option(
    "--jury", metavar="A,B,C", help="Ask a panel of judge models instead of one, comma-separated: each answers "
    "every prompt stage, their answers reduced as the stage's samples are (replaces a spec's judge.jury).")]
JuryMin = Annotated[Optional[int], typer.Option(
    "--jury-min", min=1, help="The fewest jurors that must answer an item (default: the spec's min_successful, "
    "else more than half); a juror that fails after its retries is left out.")]
Options = Annotated[list[str], typer.Option(
    "--option", help="A scorer option, typed by the option's schema (repeatable): key=value when one spec runs, "
    "ID.key=value (every version of spec ID) or LABEL.key=value (one version).")]
Samples = Annotated[Optional[int], typer.Option("--samples", min=1, max=50, help=SAMPLES_HELP)]
Language = Annotated[Optional[str], typer.Option("--language", metavar="auto|CODE", callback=_language,
                                                 help=LANGUAGE_HELP)]
Cache = Annotated[Optional[str], typer.Option("--cache", metavar="PATH|URL", help=CACHE_HELP)]
NoCache = Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)]
Refresh = Annotated[bool, typer.Option("--refresh", help=REFRESH_HELP)]

# --- the batch run -----------------------------------------------------------------------------
Fields = Annotated[list[str], typer.Option(
    "--field", help="name=column: read a run field, or a field a scorer declares, from another column (e.g. "
    "output=answer, context=passages, tool_calls=calls; repeatable).")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)]
#: `Concurrency` for a command without ``--executor``.
LocalConcurrency = with_help(Concurrency, CONCURRENCY_LOCAL_HELP)
RateLimit = Annotated[Optional[float], typer.Option(
    "--rate-limit", callback=_not_negative,
    help="Judge requests per second, at most (on Ray: across the whole cluster; 0: no limit).")]
Out = Annotated[Optional[Path], typer.Option("--out", help="JSONL file receiving one line per item and scorer.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue the run of --out (or of --run-id).")]
#: `Resume` for a command without ``--run-id``.
ResumeOut = with_help(Resume, "Continue the run of --out.")
RunId = Annotated[Optional[str], typer.Option("--run-id", help="The run's id (to resume a run without --out).")]
Limit = Annotated[Optional[int], typer.Option("--limit", min=1, help="Score only the first N items of the data.")]
StorePath = Annotated[Optional[Path], typer.Option("--store", help=STORE_HELP)]
Prices = Annotated[Optional[Path], typer.Option("--prices", help=PRICES_HELP)]
MaxCost = Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=_positive, help=MAX_COST_HELP)]

# --- traces (OpenTelemetry, Phoenix) ----------------------------------------------------------
DataFormat = Annotated[Optional[str], typer.Option(
    "--format", metavar="otlp", help="Read --data as OpenTelemetry traces (OTLP JSON, or a JSONL of spans) when "
    "its start does not show it.")]
ItemPer = Annotated[Optional[str], typer.Option(
    "--item-per", metavar="trace|span", help="With traces: one item per trace (the default; judged span: the "
    "root) or per span of the --span-kind kinds.")]
SpanKinds = Annotated[list[str], typer.Option(
    "--span-kind", metavar="KIND", help="With --item-per span: the kinds of span scored, LLM, AGENT, CHAIN, TOOL, "
    "RETRIEVER, EMBEDDING, RERANKER, GUARDRAIL or EVALUATOR, any case (repeatable) [default: LLM].")]
ExportOtlp = Annotated[Optional[str], typer.Option(
    "--export-otlp", metavar="FILE|URL", help="Write each result on a trace as a gen_ai.evaluation.result event on "
    "its span: OTLP JSON log records to FILE, or sent to an OTLP/HTTP logs URL (needs scorespec[otlp]).")]
ExportPhoenix = Annotated[Optional[str], typer.Option(
    "--export-phoenix", metavar="URL", help="Log each result on a trace as an annotation of its span on the Phoenix "
    "server at URL (http://HOST:PORT; needs scorespec[phoenix]).")]

# --- human labels (calibrate, compare) ---------------------------------------------------------
LabelField = Annotated[Optional[str], typer.Option(
    "--label-field", help="The items' human label (dots reach inside).")]
#: `LabelField` for compare, where labels are optional.
CompareLabelField = with_help(LabelField, "The items' human label (dots reach inside) [default with --positive: "
                                          "label].")
Positive = Annotated[list[str], typer.Option(
    "--positive", help="A label value of the class that should score high (repeatable). Without it, labels are "
    "graded numbers.")]
Negative = Annotated[list[str], typer.Option(
    "--negative", help="A label value of the other class (repeatable); items with other labels are left out. "
    "Default: every other label.")]
Cutoff = Annotated[Optional[float], typer.Option(
    "--cutoff", help="A decision is positive when score ≥ this [default: the cut-off the scorer's spec documents "
    "(its cutoff key), else half the scale].")]
#: `Cutoff` for compare (the baseline's cut-off).
CompareCutoff = with_help(Cutoff, "A decision is positive when score ≥ this [default: the cut-off the baseline's "
                          "spec documents (its cutoff key), else half its scale].")
SubScore = Annotated[Optional[str], typer.Option(
    "--score", metavar="NAME", help="Use the scorer's sub-score NAME (one of its spec's `scores:`) instead of its "
    "score.")]
Top = Annotated[int, typer.Option("--top", min=0, help="List the N items where scorer and label disagree most.")]
#: `Top` for compare.
CompareTop = with_help(Top, "List the N items whose score moved most.")

# --- what is printed and written ---------------------------------------------------------------
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress bar and no per-item or progress lines (for CI); "
                                     "the run's header, its note: lines and the summary still print.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
#: `AsJson` for calibrate and compare.
FiguresJson = with_help(AsJson, "Print the figures as JSON on stdout.")
ComparisonJson = with_help(AsJson, "Print the comparison as JSON on stdout.")
Junit = Annotated[Optional[Path], typer.Option("--junit", metavar="FILE", help=JUNIT_HELP)]
#: `Junit` for a command without item cut-offs and thresholds (calibrate, compare).
LabelsJunit = with_help(Junit, JUNIT_LABELS_HELP)
SummaryMd = Annotated[Optional[Path], typer.Option("--summary-md", metavar="FILE", help=SUMMARY_MD_HELP)]
Report = Annotated[Optional[Path], typer.Option("--report", metavar="FILE", help=REPORT_HELP)]


# -- one item, as `run` and `render` take it ----------------------------------------------------

SpecArg = Annotated[str, typer.Argument(metavar="SCORER", help="Scorer id (e.g. faithfulness) or a spec file.")]
ItemOutput = Annotated[Optional[str], typer.Option("--output", help="The output to score.")]
ItemInput = Annotated[Optional[str], typer.Option("--input", help="The input (question) that produced it.")]
ItemGroundTruth = Annotated[Optional[str], typer.Option("--ground-truth", help="The expected answer.")]
ItemContext = Annotated[Optional[list[str]], typer.Option("--context", help="A context passage (repeatable).")]
ItemMessagesFile = Annotated[Optional[Path], typer.Option("--messages-file", help=(
    "A JSON array of chat messages {role, content}: the conversation. Those up to the last user message are the "
    "input, the rest the output."))]
ItemToolCallsFile = Annotated[Optional[Path], typer.Option("--tool-calls-file", help=(
    "A JSON array of the tool calls made, {name, arguments, result?, error?} (or OpenAI-style)."))]
ItemFields = Annotated[list[str], typer.Option("--field", help=(
    "NAME=VALUE or NAME=@FILE: a field the spec declares (rubric=@rubric.json) or a run field (system=@prompt.txt); "
    "JSON where the field wants more than text (repeatable)."))]

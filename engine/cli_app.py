"""What every `scorespec` command shares: the typer `app` the commands register on, the exit
codes, the rich consoles, `fail`, and the ``--option`` parser.

`engine.cli` (single-item commands, the console script) and `engine.cli_eval` (batch commands)
both import from here, neither from the other's commands. This module imports only typer at
load time, so ``scorespec --help`` stays quick.

Exit codes (all commands): 0 success; 1 an eval's threshold was not met; 2 errors (a spec
problem, bad input, an item that failed, a usage error); 3 a run stopped before the end of its
data because the next item would have passed its ``--max-cost`` budget (resume it with a larger one).
"""

from __future__ import annotations

import json
from typing import Any

import typer

EXIT_OK, EXIT_THRESHOLD, EXIT_ERROR, EXIT_BUDGET = 0, 1, 2, 3

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="LLM-evaluation scorers as data: run, validate and evaluate YAML scorer specs.",
)


def stderr_console() -> Any:
    """A rich console on stderr, no highlighting (rich is imported on the first call)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def stdout_console() -> Any:
    """A rich console on stdout, no highlighting (rich is imported on the first call)."""
    from rich.console import Console

    return Console(highlight=False)


def fail(message: str, code: int = EXIT_ERROR) -> None:
    """Print ``error: message`` on stderr (the message verbatim: never read as markup) and exit."""
    from rich.markup import escape

    stderr_console().print(f"[red]error:[/red] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


def parse_option_value(raw: str, schema: dict[str, Any] | None) -> Any:
    """Type a ``key=value`` value by the option's JSON Schema: strings stay text, anything else
    is read as JSON (``false`` → False, ``10`` → 10, ``["a"]`` → a list), falling back to text."""
    types = (schema or {}).get("type")
    if types == "string" or (isinstance(types, list) and types == ["string"]):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_options(pairs: list[str], compiled_list: list[Any]) -> dict[str, dict[str, Any]]:
    """``--option`` values → options per scorer id, the same on every command.

    ``ID.key=value`` sets scorer ID's option; plain ``key=value`` is accepted when one scorer
    runs (an option whose own name holds a dot is plain too). Values are typed by the option's
    schema (`parse_option_value`). Exits with an error naming the flag's value when a pair has
    no ``=``, names a scorer that is not running, or is plain while several scorers run.
    """
    by_id = {c.id: c for c in compiled_list}
    ids = list(by_id)
    out: dict[str, dict[str, Any]] = {sid: {} for sid in ids}
    example = f"{ids[0]}.scale=10" if ids else "faithfulness.scale=10"
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--option {pair!r}: expected key=value or ID.key=value (e.g. {example})")
        head, dot, rest = key.partition(".")
        if dot and head in by_id and rest:
            target, key = head, rest
        elif len(ids) == 1 and (not dot or key in by_id[ids[0]].options.schemas):
            target = ids[0]
        elif dot:
            fail(f"--option {pair!r}: {head!r} is not among the scorers ({', '.join(ids)}); "
                 f"write ID.key=value (e.g. {example})")
        else:
            fail(f"--option {pair!r}: {len(ids)} scorers run ({', '.join(ids)}): say whose option it is, "
                 f"as ID.key=value (e.g. {ids[0]}.{key}={value})")
        out[target][key] = parse_option_value(value, by_id[target].options.schemas.get(key))
    return out

"""What every `scorespec` command shares: the typer `app` the commands register on, the exit
codes, the rich consoles, `fail`, and the ``--option`` parser.

`engine.cli.main` (single-item commands, the console script) and the batch commands' modules
(`engine.cli.eval`, `calibrate`, `compare`, `align`, `runs`) all import from here, none from
another's commands. This module imports only typer at load time, so ``scorespec --help`` stays
quick.

The command group (`Commands`) loads a command's module when the command is asked for: a module
of this package that declares ``@app.command("NAME")`` is found by reading the package's sources
(no list of commands is kept by hand), so ``scorespec run`` never imports the batch commands.
It also handles errors once for every command (`handled`):

- a `engine.core.errors.UserError` (a spec, a data set, an option, a model string, a label, a price
  table, a report, a language, Ray, Phoenix, OTLP, the store's version, a pattern): its message as
  ``error: MESSAGE`` on stderr, exit 2;
- typer's own exits and usage errors: as typer gives them;
- stdout's reader gone (``scorespec list | head -1``): a quiet end, exit 141 (`closed_stdout`);
- anything else is a fault of scorespec: ``error: internal error (TYPE: MESSAGE); please report
  it`` naming the file that keeps the traceback (`keep_traceback`), exit 2 (never 1, "below
  threshold").

Exit codes (all commands): 0 success; 1 an eval's threshold was not met; 2 errors (a spec
problem, bad input, an item that failed, a usage error); 3 a run stopped before the end of its
data because the next item would have passed its ``--max-cost`` budget (resume it with a larger one).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from . import help_types  # noqa: F401  (--help names a repeatable value's element type)

EXIT_OK, EXIT_THRESHOLD, EXIT_ERROR, EXIT_BUDGET = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C in a batch command: every completed result is saved

#: The --model option's help, shared by the judging commands.
MODEL_HELP = ("provider/model, local, local-tiny or llamacpp/PATH.gguf; an embedded model takes settings after '?': "
              "'local?slots=1&threads=2' (the docs' guide to the embedded judges).")

#: ``@app.command("NAME")`` in a module's source: the commands that module declares.
_DECLARED = re.compile(r'^@app\.command\(\s*"([a-z][a-z-]*)"', re.M)


def declared_commands() -> dict[str, str]:
    """Command name → the module of this package that declares it, read from the sources (in
    file-name order), e.g. ``{"eval": "engine.cli.eval", "show": "engine.cli.runs", …}``."""
    found: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for name in _DECLARED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, f"{__package__}.{path.stem}")
    return found


class Commands(TyperGroup):
    """The ``scorespec`` group: the commands registered so far, and those declared in a module not
    yet imported, loaded when asked for (their name, or ``--help``); errors handled once
    (`handled`)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(self.commands)
        return names + [name for name in declared_commands() if name not in self.commands]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            module = declared_commands().get(cmd_name)
            if module is None:
                return None
            importlib.import_module(module)
            self._add_registered()
        return self.commands.get(cmd_name)

    def _add_registered(self) -> None:
        """Add the commands registered on `app` since this group was built."""
        from typer.main import get_command_from_info

        for info in app.registered_commands:
            if info.name and info.name not in self.commands:
                self.commands[info.name] = get_command_from_info(
                    info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode)

    def invoke(self, ctx: Any) -> Any:
        with handled():
            return super().invoke(ctx)


app = typer.Typer(
    cls=Commands,
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="LLM-evaluation scorers as data: run, validate and evaluate YAML scorer specs.",
)


def _version(show: bool) -> None:
    if show:
        from .. import __version__

        typer.echo(f"scorespec {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    """LLM-evaluation scorers as data: run, validate and evaluate YAML scorer specs."""


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
    is read as JSON (``false`` → False, ``10`` → 10, ``["a"]`` → a list), falling back to text.
    A value that reads as JSON of a type the schema does not allow stays text when the schema
    allows a string (``expected=330`` for a ``[string, null]`` option is the text "330")."""
    types = (schema or {}).get("type")
    allowed = {types} if isinstance(types, str) else set(types or ())
    if allowed == {"string"}:
        return raw
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    kind = _json_type(value)
    if "string" in allowed and kind not in allowed and not (kind == "integer" and "number" in allowed):
        return raw
    return value


def _json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def parse_options(pairs: list[str], compiled_list: list[Any], labels: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """``--option`` values → options per scorer, the same on every command.

    `labels`: each compiled spec's label in the run (default: its id); the result is keyed by
    them. ``LABEL.key=value`` sets that scorer's option, ``ID.key=value`` that option of every
    scorer of spec ID (both versions of a scorer compared under two labels); plain
    ``key=value`` is accepted when every scorer is one spec id (an option whose own name holds
    a dot is plain too). Values are typed by each target's option schema
    (`parse_option_value`). Exits with an error naming the flag's value when a pair has no
    ``=``, names a scorer that is not running, or is plain while several scorers run.
    """
    names = list(labels) if labels is not None else [c.id for c in compiled_list]
    by_name = dict(zip(names, compiled_list))
    ids = list(dict.fromkeys(c.id for c in compiled_list))
    out: dict[str, dict[str, Any]] = {name: {} for name in names}
    example = f"{ids[0]}.scale=10" if ids else "faithfulness.scale=10"
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--option {pair!r}: expected key=value or ID.key=value (e.g. {example})")
        targets = _option_targets(pair, key, value, by_name, ids, example)
        for name, option in targets:
            out[name][option] = parse_option_value(value, by_name[name].options.schemas.get(option))
    return out


def _option_targets(pair: str, key: str, value: str, by_name: dict[str, Any], ids: list[str],
                    example: str) -> list[tuple[str, str]]:
    """(scorer name, option name) pairs an ``--option`` pair sets; exits on a bad one."""
    # a label that is not a spec id names one scorer (a label may hold dots: the longest first)
    for name in sorted((n for n in by_name if n not in ids), key=len, reverse=True):
        if key.startswith(name + ".") and len(key) > len(name) + 1:
            return [(name, key[len(name) + 1:])]
    head, dot, rest = key.partition(".")
    from ..spec.judge_overrides import JUDGE_OPTIONS

    if key in JUDGE_OPTIONS:  # a judge setting (``judge.reasoning_effort``): every scorer's judge
        return [(name, key) for name in by_name]
    if dot and head in ids and rest:
        return [(name, rest) for name, c in by_name.items() if c.id == head]
    if len(ids) == 1 and (not dot or all(key in c.options.schemas for c in by_name.values())):
        return [(name, key) for name in by_name]
    if dot:
        fail(f"--option {pair!r}: {head!r} is not among the scorers ({', '.join(by_name)}); "
             f"write ID.key=value (e.g. {example})")
    fail(f"--option {pair!r}: {len(ids)} scorers run ({', '.join(ids)}): say whose option it is, "
         f"as ID.key=value (e.g. {ids[0]}.{key}={value})")
    raise AssertionError  # fail exits


@contextmanager
def handled() -> Iterator[None]:
    """Run a command: a `UserError` becomes ``error: MESSAGE`` and exit 2, any other exception an
    internal error (`internal_error`); typer's exits and usage errors pass through."""
    from ..core.errors import UserError

    try:
        yield
    except (typer.Exit, typer.Abort, typer.TyperException):
        raise
    except UserError as exc:
        fail(str(exc))
    except BrokenPipeError:
        closed_stdout()
    except Exception as exc:
        internal_error(exc)


#: The exit status when the reader of stdout went away (``scorespec list | head -1``): 128 + SIGPIPE,
#: as a Unix tool killed by it.
EXIT_CLOSED_PIPE = 141


def closed_stdout() -> NoReturn:
    """End quietly, as Unix tools do, when stdout's reader closed the pipe: exit 141."""
    null_stdout()
    raise typer.Exit(EXIT_CLOSED_PIPE)


def null_stdout() -> None:
    """Send what is left unwritten on stdout to the null device, so Python's own flush at exit
    cannot fail on the closed pipe again."""
    import os
    import sys

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file (a test's capture)
        pass


def internal_error(exc: BaseException) -> NoReturn:
    """Say that scorespec failed (not the user), name the file keeping the traceback, exit 2."""
    kept = keep_traceback(exc)
    where = f"with the traceback kept in {kept}" if kept else "with the traceback above"
    stderr_console().print(f"error: internal error ({type(exc).__name__}: {exc}); please report it, {where}",
                           markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


def keep_traceback(exc: BaseException) -> str | None:
    """Write the command line and `exc`'s traceback to a new file in the temporary folder
    (``scorespec-traceback-*.txt``); its path, or None (the traceback printed on stderr instead)
    when no file can be written."""
    import tempfile
    import traceback

    from .. import __version__

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        with tempfile.NamedTemporaryFile("w", prefix="scorespec-traceback-", suffix=".txt", delete=False,
                                         encoding="utf-8") as file:
            file.write(f"scorespec {__version__}: {' '.join(sys.argv)}\n\n{text}")
            return file.name
    except OSError:
        sys.stderr.write(text)
        return None

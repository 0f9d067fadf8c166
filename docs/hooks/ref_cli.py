"""The command-line reference page, from the typer app walked as a click command tree.

`render_cli(command)` is pure given the command (`typer.main.get_command(app)`): a
``## scorespec COMMAND`` section per command and sub-command (``## scorespec cache stats``), each
with its help text, usage, arguments and options (names, type, default, help).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from typing import Any

from ref_markdown import code, table

INTRO = """\
# Command line

`scorespec` (also `python -m engine`) runs, validates and evaluates scorer specs. This page is
generated from the command line itself, one section per command; `scorespec COMMAND --help`
prints the same help in a terminal. Every command also takes `--help`.
"""

_MARKUP = re.compile(r"\[/?(?:bold|italic|dim|underline|red|green|yellow|blue|cyan|magenta|b|i|u)(?: [a-z ]+)?\]")


def plain(text: str | None) -> str:
    """A help text as plain Markdown prose: click's ``\\f`` cut applied, ``\\b`` markers and Rich
    style tags (``[bold]``…``[/bold]``) dropped, ``<`` and ``*`` escaped, paragraphs kept."""
    value = inspect.cleandoc(text or "").split("\f", 1)[0]
    value = _MARKUP.sub("", value.replace("\b\n", "").replace("\b", ""))
    value = value.replace("<", "&lt;").replace("*", "\\*")
    return "\n\n".join(" ".join(p.split()) for p in value.split("\n\n") if p.strip())


def walk(command: Any, ctx: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(full name, command, context) of `command` and, for a group, of every sub-command in
    name order (hidden ones left out)."""
    yield path, command, ctx
    for name in getattr(command, "list_commands", lambda _c: [])(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        yield from walk(sub, type(ctx)(sub, info_name=name, parent=ctx), f"{path} {name}")


def _default(param: Any) -> str:
    value = getattr(param, "default", None)
    if value is None or value == [] or value == ():
        return "—"
    if isinstance(value, (bool, int, float, str)):
        return code(json.dumps(value))
    return code(str(value))


_AUTO_NOTES = re.compile(r"\s+\[(?:required|default: [^\]]*)\]\s*$")


def _type_of(record: tuple[str, str] | None, names: list[str]) -> str:
    """What a help record's first part shows besides the names: ``<int range>``, ``FILE``."""
    shown = record[0] if record else ""
    for name in sorted(names, key=len, reverse=True):
        shown = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", "", shown)
    return shown.strip(" ,/")


def param_row(param: Any, ctx: Any) -> tuple[str, list[str]]:
    """("argument", [name, type, required or optional, help]) or ("option", [names, type, default,
    help]); the ``[required]`` and ``[default: …]`` notes click appends are left to their columns."""
    record = param.get_help_record(ctx)
    help_text = record[1] if record else (getattr(param, "help", "") or "")
    if type(param).__name__.endswith("Argument") or getattr(param, "param_type_name", "") == "argument":
        kind = _type_of(record, [param.name, param.name.upper(), param.metavar or ""])
        help_text = plain(_AUTO_NOTES.sub("", help_text))
        return "argument", [code(param.metavar or param.name.upper()), code(kind) if kind else "—",
                            "required" if param.required else "optional", help_text]
    names = [*param.opts, *param.secondary_opts]
    kind = _type_of(record, names)
    default = _default(param)
    help_text = plain(_AUTO_NOTES.sub("", help_text) if default != "—" or param.required else help_text)
    return "option", [", ".join(code(n) for n in names), code(kind) if kind else "flag", default, help_text]


def command_section(path: str, command: Any, ctx: Any) -> str:
    """One command's section: heading, help, usage, arguments and options (``--help`` left out)."""
    usage = command.get_usage(ctx).strip()
    usage = usage[len("Usage:"):].strip() if usage.startswith("Usage:") else usage
    arguments, options = [], []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False) or "--help" in getattr(param, "opts", ()):
            continue
        kind, row = param_row(param, ctx)
        (arguments if kind == "argument" else options).append(row)
    out = [f"## {path}\n", plain(command.help) + "\n" if command.help else "",
           f"```text\n{usage}\n```\n"]
    if arguments:
        out += ["**Arguments**\n", table(["argument", "type", "", "help"], arguments)]
    if options:
        out += ["**Options**\n", table(["option", "type", "default", "help"], options)]
    subs = [name for name in getattr(command, "list_commands", lambda _c: [])(ctx)]
    if subs:
        out.append("**Commands**: " + ", ".join(f"[{name}](#{(path + ' ' + name).replace(' ', '-')})"
                                               for name in subs) + "\n")
    return "\n".join(part for part in out if part)


def render_cli(command: Any, prog: str = "scorespec") -> str:
    """The command-line page (Markdown) for the click command tree `command` (its root named
    `prog`): the root's own section first, then every command."""
    ctx = command.context_class(command, info_name=prog)
    return "\n".join([INTRO, *(command_section(path, cmd, sub_ctx) for path, cmd, sub_ctx in walk(command, ctx, prog))])


def command_paths(command: Any, prog: str = "scorespec") -> list[str]:
    """Every command's full name (``scorespec cache stats``), the root first."""
    ctx = command.context_class(command, info_name=prog)
    return [path for path, _cmd, _ctx in walk(command, ctx, prog)]

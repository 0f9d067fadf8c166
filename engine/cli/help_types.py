"""How ``--help`` names a repeatable value: as the element's type (``<str>``), not Python's
``<list[str]>``, which typer writes for a ``list[str]`` option or argument without a metavar.

Imported by `engine.cli.app` before any command is declared; it wraps typer's own formatting
of a parameter's type (``_TyperParameter.display_type``) once, and leaves every other type as
typer writes it. Each such option's help says it is repeatable.
"""

from __future__ import annotations

import re
from typing import Any

import typer.core

__all__ = ["element_type"]

_LIST = re.compile(r"list\[([^\[\]]*)\]")


def element_type(shown: str) -> str:
    """``<list[str]>`` → ``<str>`` (nested lists too); any other text unchanged."""
    while _LIST.search(shown):
        shown = _LIST.sub(r"\1", shown)
    return shown


def _install() -> None:
    base: Any = getattr(typer.core, "_TyperParameter", None)
    original = getattr(base, "display_type", None)
    if original is None or getattr(original, "_scorespec", False):  # another typer, or installed already
        return

    def display_type(self: Any, ctx: Any) -> str:
        return element_type(original(self, ctx))

    display_type._scorespec = True  # type: ignore[attr-defined]
    base.display_type = display_type


_install()

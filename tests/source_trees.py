"""Parse the project's own Python files for the tests that read its shape (imports, environment
reads, file and function sizes).

CPython 3.11 keeps one AST-construction depth counter per interpreter, so an ``ast.parse`` in
another thread of the test process (a server or SDK thread left by an earlier test) can make ours
raise ``SystemError: AST constructor recursion depth mismatch`` for a file that parses fine
(CPython issue gh-106905). The parse is pure, so it is simply tried again.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

__all__ = ["parse_file"]

_TRIES = 5


def parse_file(path: Path) -> ast.Module:
    """The module tree of ``path`` (UTF-8); SyntaxError as ``ast.parse`` raises it."""
    source = path.read_text(encoding="utf-8")
    for attempt in range(_TRIES):
        try:
            return ast.parse(source, str(path))
        except SystemError as error:
            if "recursion depth mismatch" not in str(error) or attempt == _TRIES - 1:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")

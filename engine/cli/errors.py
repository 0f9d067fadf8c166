"""How every command reports an error, handled once for all of them (`Commands.invoke` in
`engine.cli.app`).

- a `engine.core.errors.UserError` (a spec, a data set, an option, a model string, a label, a price
  table, a report, a language, Ray, Phoenix, OTLP, the store's version, a pattern): its message as
  ``error: MESSAGE`` on stderr, exit 2;
- typer's own exits and usage errors: as typer gives them;
- anything else is a fault of scorespec: ``error: internal error (TYPE: MESSAGE); please report
  it`` naming the file that keeps the traceback, exit 2 (never 1, "below threshold").

`run_async` runs a batch command's library call: Ctrl-C says how to continue (exit 130), and the
errors the library's entry points document for bad arguments besides `UserError`s
(`INPUT_ERRORS`) are printed as user errors. Imports only typer at load time.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

from .app import EXIT_ERROR, EXIT_INTERRUPTED, fail

__all__ = ["INPUT_ERRORS", "handled", "internal_error", "keep_traceback", "run_async"]

#: What the library's entry points (`engine.run_evals`, `engine.calibrate`, `engine.compare`,
#: `engine.align`) raise for bad arguments besides a `UserError`: a value out of range
#: (`ValueError`), an out file that already holds results
#: (`FileExistsError`), a Ray cluster that cannot be joined (`ConnectionError`), an optional
#: package that is missing (`ImportError`).
INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, FileExistsError, ConnectionError, ImportError)


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
    except Exception as exc:
        internal_error(exc)


def internal_error(exc: BaseException) -> NoReturn:
    """Say that scorespec failed (not the user), name the file keeping the traceback, exit 2."""
    from .app import stderr_console

    kept = keep_traceback(exc)
    where = f"with the traceback kept in {kept}" if kept else "with the traceback above"
    stderr_console().print(f"error: internal error ({type(exc).__name__}: {exc}); please report it, {where}",
                           markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


def keep_traceback(exc: BaseException) -> str | None:
    """Write the command line and `exc`'s traceback to a new file in the temporary folder
    (``scorespec-traceback-*.txt``); its path, or None (the traceback printed on stderr instead)
    when no file can be written."""
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


def run_async(call: Awaitable[Any], interrupted: str) -> Any:
    """The result of the library's coroutine `call`. Ctrl-C prints `interrupted` (how to continue)
    and exits 130; an error among `INPUT_ERRORS` is printed as ``error: MESSAGE``, exit 2."""
    import asyncio

    try:
        return asyncio.run(call)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        from .app import stderr_console

        stderr_console().print(interrupted, markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except INPUT_ERRORS as exc:
        fail(str(exc))

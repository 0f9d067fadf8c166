"""A batch command's call into the library (`run_async`): Ctrl-C says how to continue (exit 130),
and the errors the library's entry points document for bad arguments besides `UserError`s
(`INPUT_ERRORS`) are printed as user errors (exit 2). Every other error is handled once for all
commands by the command group (`engine.cli.app.handled`). Imports only typer at load time.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import typer

from .app import EXIT_ERROR, EXIT_INTERRUPTED, fail

__all__ = ["INPUT_ERRORS", "run_async"]

#: What the library's entry points (`engine.run_evals`, `engine.calibrate`, `engine.compare`,
#: `engine.align`) raise for bad arguments besides a `UserError`: a value out of range
#: (`ValueError`), an out file that already holds results
#: (`FileExistsError`), a Ray cluster that cannot be joined (`ConnectionError`), an optional
#: package that is missing (`ImportError`).
INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, FileExistsError, ConnectionError, ImportError)


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

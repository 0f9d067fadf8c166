"""Running a coroutine from synchronous code, also where an event loop is already running.

`Scorer.run`, `run_evals` and `calibrate` are synchronous wrappers of coroutines. Outside an
event loop the coroutine runs with `asyncio.run`. Inside one (a notebook, an async web handler)
`asyncio.run` is refused, so the coroutine runs on a private loop in a worker thread that the
caller waits for; whatever the coroutine raises is raised again in the caller, with its own type,
message and traceback.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, thread_name: str = "scorespec-run-sync") -> T:
    """Run `coro` to completion and return its value; raise what it raises.

    Without a running event loop in this thread: `asyncio.run(coro)`. With one: `asyncio.run`
    in a new thread named `thread_name`, joined before returning (the calling loop is blocked
    meanwhile, as any synchronous call blocks it). Any exception of the coroutine —
    `KeyboardInterrupt` and `SystemExit` included — is re-raised in the caller.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name=thread_name)
    thread.start()
    thread.join()
    if "error" in outcome:
        error = outcome.pop("error")
        try:
            raise error
        finally:
            del error  # no reference cycle through the traceback
    return outcome["value"]


__all__ = ["run_sync"]

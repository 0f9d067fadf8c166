"""``scorespec watch SCORER --data FILE``: a run on every save, in the terminal.

`Watch.loop` runs the scorer on the data once, then again each time the spec's folder, the
prompts or the data file change on disk (`watchfiles`, a burst of writes counted once). A run
that fails (a spec with problems, an unreadable dataset, a judge that cannot be reached) prints
why and the loop waits for the next save; a run that succeeds prints its summary and its
comparison with the last successful run (`engine.studio.session.Session.compare`: the mean
difference and each item whose verdict changed). Every run goes through the judge-call cache,
so a save that changes one stage asks that stage again and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import SpecError, UserError
from .session import RunRequest, Session
from .workspace import problem_json

__all__ = ["Watch"]


@dataclass
class Watch:
    """The loop over `session`'s folder: `scorer` (a spec id or file), `data` (a dataset file of
    the folder), `limit` (items per run, None: all), `say` (where each line goes)."""

    session: Session
    scorer: str
    data: str
    limit: int | None = None
    say: Callable[[str], None] = print
    last: str | None = None

    def wanted(self, path: Path) -> bool:
        """Whether a change of `path` calls for a run: a spec, a prompt, or the data file."""
        root = self.session.workspace.root
        try:
            parts = path.resolve().relative_to(root).parts
        except ValueError:
            return False
        if not parts or any(p.startswith(".") for p in parts):
            return False
        data = self.session.workspace.path(self.data)
        spec = parts[0] == "scorer_specs" and path.suffix == ".yaml"
        return path.resolve() == data or parts[0] == "prompts" or spec

    async def once(self) -> dict[str, Any] | None:
        """One run, its lines said; the run's answer, or None when it failed."""
        try:
            run = await self.session.run(RunRequest(self.scorer, self.data, limit=self.limit))
        except SpecError as exc:
            self.say("run failed: the spec has problems:")
            for problem in exc.problems:
                self.say("  " + problem_json(problem, self.session.workspace)["text"])
            return None
        except (UserError, ValueError, OSError, LookupError) as exc:
            self.say(f"run failed: {exc}")
            return None
        failed = [line for line in run["results"] if line.get("error")]
        scores = [line["score"] for line in run["results"] if line.get("score") is not None]
        mean = f"mean {sum(scores) / len(scores):.3f}" if scores else "no score"
        self.say(f"run {run['runId']}: {len(run['results'])} item(s), {mean}, {len(failed)} failed; "
                 f"{run['judgeCalls']} judge call(s), {run['cachedCalls']} cached")
        for line in failed[:5]:
            self.say(f"  {line['id']}: failed: {(line.get('error') or {}).get('message')}")
        if self.last is not None:
            self._say_comparison(self.session.compare(self.last, run["runId"]))
        self.last = run["runId"]
        return run

    def _say_comparison(self, compared: dict[str, Any]) -> None:
        comparisons = compared["comparison"]["comparisons"]
        paired = comparisons[0]["paired"] if comparisons else {}
        difference = paired.get("meanDifference")
        shown = f"{difference:+.3f}" if isinstance(difference, (int, float)) else "n/a"
        changed = [row for row in compared["items"] if row["changed"]]
        self.say(f"vs run {compared['a']}: mean difference {shown}, {len(changed)} verdict(s) changed")
        for row in changed[:10]:
            before, after = (_shown(row[side]) for side in ("a", "b"))
            self.say(f"  {row['id']}: {before} → {after}")
        for diff in compared["diff"]:
            self.say(f"  changed: {diff['file']}")

    async def loop(self, stop: asyncio.Event | None = None) -> None:
        """Run once, then on every wanted change until `stop` is set (or the task is cancelled)."""
        from watchfiles import awatch

        await self.once()
        root, announced = self.session.workspace.root, False
        async for changes in awatch(root, stop_event=stop, debounce=300, step=50, rust_timeout=200,
                                    yield_on_timeout=True, watch_filter=lambda change, path: self.wanted(Path(path))):
            if not changes:  # the watcher is set up: from now on a save is seen
                if not announced:
                    self.say("watching for changes (Ctrl-C to stop)")
                    announced = True
                continue
            names = sorted({self.session.workspace.name(Path(path)) for _, path in changes})
            self.say(f"saved: {', '.join(names)}")
            await self.once()


def _shown(outcome: dict[str, Any] | None) -> str:
    if outcome is None:
        return "absent"
    return f"{outcome['score']:g}" if outcome["score"] is not None else outcome["status"]

"""A scoring actor of a Ray run: the class Ray Data's ``map_batches`` runs on an actor pool.

Each actor (`ScoringActor`), when it starts, builds the run's scorers from their recipes — the
spec text compiled there, its hash checked (`engine.bind.recipe`) — with their judges under
the judge-call cache each recipe names (per node: that node's SQLite file; or one Redis server
for the cluster) and, with a rate limit, the cluster's token bucket (`engine.ray.rate_limit`).

Its ``__call__`` is async: Ray Data hands it several batches of records at once
(`engine.ray.datasource`), and all their items share the actor's ``concurrency`` slots
(`engine.run.item_scoring.ItemScoring`), so many judge calls are in flight per actor while no more
than ``concurrency`` at once. For each record it returns one output record:

- ``("item", (item, {label: ScoreResult}))``: the item as scored (a target's output applied)
  and the results made for it; the (item, label) pairs an earlier attempt finished are not
  scored again;
- ``("resumed", item key)``: every result of the item was finished by an earlier attempt;
- a ``problem`` or ``fatal`` record, passed on as it came.

Each result is appended to the actor's shard file (`engine.ray.shards`) as it completes, with
its cost, before the batch returns. The kill test hook (`ActorJob.kill_after`): the first actor
of the run to have written that many results ends its process at once, as a crashed worker does;
Ray restarts it and retries its batches.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bind.recipe import ScorerRecipe
from ..core.result import ScoreResult
from ..run.item_scoring import ItemScoring
from ..run.items import Item, item_key
from ..run.outfile import OutWriter, out_line
from ..run.prices import PriceTable
from ..run.runner import rate_limited
from ..run.sink import priced
from .datasource import RECORD_COLUMN, decode_record, encode_record
from .shards import KILLED_MARK, shard_path

__all__ = ["ActorJob", "OUTPUT_COLUMN", "ScoringActor"]

#: The output's one column: a pickled output record.
OUTPUT_COLUMN = "out"


@dataclass(frozen=True)
class ActorJob:
    """What every actor of a run is given (picklable). `done`: the (item key, label) pairs an
    earlier attempt finished, or a Ray object reference to them; `shard_folder`: where the actor
    writes its shard (None: no shard); `limiter`: the cluster's rate limiter, or None; `target`:
    the run's target callable, or None; `kill_after`: the test hook (see the module docstring)."""

    run_id: str
    recipes: tuple[ScorerRecipe, ...]
    concurrency: int
    done: Any = frozenset()
    shard_folder: str | None = None
    prices: PriceTable | None = None
    limiter: Any = None
    target: Any = None
    kill_after: int | None = None


class ScoringActor:
    """See the module docstring. Raises, when it starts, what building a scorer raises (a spec
    that does not compile on this node, or compiles to another hash)."""

    def __init__(self, job: ActorJob):
        self.job = job
        self.scorers = [recipe.build() for recipe in job.recipes]
        done = job.done
        if not isinstance(done, (set, frozenset)):
            import ray

            done = ray.get(done)
        self.done: frozenset[tuple[str, str]] = frozenset(done)
        self.scoring: ItemScoring | None = None
        self.writer: OutWriter | None = None
        self.written = 0
        self._shard_warned = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.scoring is None:  # the first batch, in the event loop Ray Data keeps for this actor
            self.scorers = [rate_limited(s, self.job.limiter) for s in self.scorers]
            self.scoring = ItemScoring(self.job.run_id, self.job.concurrency, self.job.target)
            self._loop = asyncio.get_running_loop()
        records = [decode_record(raw) for raw in batch.column(RECORD_COLUMN).to_pylist()]
        outputs = await asyncio.gather(*(self._one(kind, value) for kind, value in records))
        return pa.table({OUTPUT_COLUMN: pa.array([encode_record(*o) for o in outputs], type=pa.large_binary())})

    def __del__(self) -> None:
        """Ray Data drops the actor's scorers as the actor ends gracefully: their judges' HTTP
        connections are closed on the event loop they were opened in (still running then), so
        the worker's log gets no warning about them."""
        loop = getattr(self, "_loop", None)
        if loop is None or loop.is_closed() or not loop.is_running():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_judges(), loop).result(timeout=10)
        except Exception:  # best effort: the process is ending
            pass

    async def _close_judges(self) -> None:
        for scorer in self.scorers:
            await scorer.aclose()

    async def _one(self, kind: str, value: Any) -> tuple[str, Any]:
        if kind != "item":
            return kind, value
        key = item_key(value["id"])
        todo = [s for s in self.scorers if (key, s.label) not in self.done]
        if not todo:
            return "resumed", key
        assert self.scoring is not None
        item, results = await self.scoring.score_item(value, todo, self._write)
        return "item", (item, results)

    def _write(self, item: Item, label: str, result: ScoreResult) -> None:
        """A result as it completes: priced, appended to this actor's shard, counted."""
        priced(result, self.job.prices)
        writer = self._shard()
        if writer is not None:
            writer.write(out_line(item["id"], result.to_json_dict()))
        self.written += 1
        if self.job.kill_after is not None and self.written >= self.job.kill_after and self._first_to_die():
            if writer is not None:
                writer.close()
            os._exit(1)

    def _shard(self) -> OutWriter | None:
        if self.writer is None and self.job.shard_folder is not None and not self._shard_warned:
            try:
                folder = Path(self.job.shard_folder)
                folder.mkdir(parents=True, exist_ok=True)
                self.writer = OutWriter(shard_path(folder))
            except OSError as exc:  # results still reach the driver; only a stopped driver's are lost
                self._shard_warned = True
                print(f"warning: cannot write the shard in {self.job.shard_folder} ({exc}); results go to the "
                      "driver only", file=sys.stderr, flush=True)
        return self.writer

    def _first_to_die(self) -> bool:
        """Whether this actor is the run's first to act on the kill hook (a mark file, made once)."""
        if self.job.shard_folder is None:
            return False
        try:
            os.close(os.open(Path(self.job.shard_folder) / KILLED_MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

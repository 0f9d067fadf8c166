"""The driver of a run on Ray: the data read by Ray Data, scored by a pool of actors, kept here.

`RayExecutor` is the Ray executor (`engine.run.executor.Executor`), the counterpart of
`engine.run.executor.LocalExecutor`; `with_ray_executor` turns the settings' ``executor="ray"`` into
one (`engine.api` and the CLI call it). `RayRunner` does one attempt; the run around it — scorers, thresholds, the store's run,
resuming, the summary, exit codes — is the same. One attempt:

1. Each scorer becomes a recipe (`engine.bind.recipe`): spec text and hash, options, judge.
2. Resuming, the shard lines the out file lacks are merged first (`engine.ray.shards.recover`).
3. Ray is joined or started (`engine.ray.cluster`); the data is read by Ray Data
   (`engine.ray.datasource`) and ``map_batches`` runs `engine.ray.actor.ScoringActor` on a
   fixed pool of ``actors`` actors, ``cpus_per_actor`` CPUs each, batches of ``batch_size``
   items (default: the per-actor concurrency); with a rate limit, one token bucket serves the
   whole cluster (`engine.ray.rate_limit`).
4. The actors' output streams back here: each result is kept at once (`engine.run.sink`:
   out file, store, statistics) and each item reported. A result's identity is (run, item,
   label, spec hash): an item is kept once (an id another file repeats is reported as a problem
   and skipped; a batch retried after its actor died is not delivered twice by Ray Data).
5. When every record is in, the shard folder is removed.

Throughput: about actors × concurrency / (judge calls per item × a call's latency) items per
second, until the judge (or the rate limit) saturates.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import queue
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ..bind.recipe import scorer_recipe
from ..run.attempt import Attempt
from ..run.items import DatasetError, DatasetProblem, item_key
from ..run.settings import RunSettings
from ..run.sink import ResultSink
from .actor import OUTPUT_COLUMN, ActorJob, ScoringActor
from .cluster import PUMP_THREAD, RayOptions, RayRunError, ray_session
from .datasource import READ_CPUS, dataset_of, decode_record, is_location, location_of
from .rate_limit import start_bucket
from .shards import recover, remove_shards, shard_folder

__all__ = ["OutputPump", "RayExecutor", "RayRunner", "SHIP_BY_REFERENCE", "ray_options", "with_ray_executor"]

#: Done (item, label) pairs past this many go to the actors through Ray's object store.
SHIP_BY_REFERENCE = 1000


class RayExecutor:
    """Items read by Ray Data and scored by a pool of Ray actors (`engine.run.executor.Executor`);
    `options`: how the run uses Ray (`RayOptions`)."""

    name = "ray"

    def __init__(self, options: RayOptions | None = None):
        self.options = options if options is not None else RayOptions()

    def check(self, settings: RunSettings) -> None:
        if settings.max_cost is not None:
            raise ValueError("max_cost is not available on the Ray executor yet (its budget would need every actor)")

    def prepare(self, attempt: Attempt) -> Callable[[], Awaitable[bool]]:
        async def run() -> bool:
            runner = RayRunner(attempt, self.options)
            await runner.run()
            return runner.rewrote

        return run


def ray_options(ray: Any) -> RayOptions:
    """`RayOptions` from the settings' ``ray``: None (the defaults), a `RayOptions`, or a mapping
    of its fields. Raises `ValueError` for an unknown field, a value out of range, another type."""
    if ray is None:
        return RayOptions()
    if isinstance(ray, RayOptions):
        return ray
    if isinstance(ray, Mapping):
        try:
            return RayOptions(**ray)
        except TypeError as exc:  # an unknown field
            raise ValueError(f"ray settings: {exc}") from None
    raise ValueError(f"ray: expected RayOptions or a mapping of its fields, not {type(ray).__name__}")


def with_ray_executor(settings: RunSettings) -> RunSettings:
    """`settings` with ``executor="ray"`` replaced by a `RayExecutor` of its ``ray`` settings
    (other settings as they are). Raises `ValueError` for ray settings that cannot be used, or
    max_cost (the Ray executor has no budget yet)."""
    if settings.executor != "ray":
        return settings
    RayExecutor().check(settings)
    return dataclasses.replace(settings, executor=RayExecutor(ray_options(settings.ray)))


class RayRunner:
    """One attempt of a run on Ray (see the module docstring), as `attempt` gives it
    (`engine.run.attempt.Attempt`): its context's ``concurrency`` is judge-asking scorer runs at
    once per actor and its ``rate_limit`` judge requests per second across the cluster (None: no
    limit); its source is read by Ray Data (`engine.ray.datasource.dataset_of`), each unreadable
    record told to the source's ``on_problem``; its results are kept where ``attempt.to`` says.
    `options`: how the run uses Ray. `rewrote` tells afterwards whether a result of the earlier
    attempts was replaced."""

    def __init__(self, attempt: Attempt, options: RayOptions):
        context, source = attempt.context, attempt.source
        self.scorers = list(context.scorers)
        self.state = context.state
        self.prior = context.prior
        self.target = context.target
        self.concurrency = context.concurrency
        self.rate_limit = context.rate_limit
        self.prices = context.prices
        self.out = attempt.to.out
        self.db = attempt.to.db
        self.reporter = attempt.to.reporter
        self.data = source.data
        self.fields = dict(source.fields)
        self.limit = source.limit
        self.on_problem = source.on_problem
        self.options = options
        self.sink = ResultSink(context, attempt.to)
        self._seen: set[str] = set()

    @property
    def rewrote(self) -> bool:
        return self.sink.rewrote

    async def run(self) -> None:
        """Score every item not done yet (see the module docstring). Raises `ValueError` for a
        scorer that cannot be built on an actor, `engine.run.items.DatasetError` for data Ray
        cannot read, `engine.ray.cluster.RayMissing`, ``ConnectionError`` for a cluster that
        cannot be joined, `engine.ray.cluster.RayRunError` when the Ray run itself fails."""
        recipes = tuple(scorer_recipe(s) for s in self.scorers)
        if is_location(self.data) and "://" not in str(self.data) and not any(c in str(self.data) for c in "*?[") \
                and not Path(location_of(self.data)).exists():
            raise DatasetError(f"{self.data}: no such file")
        folder = shard_folder(self.state.run_id, self.out, self.db.path if self.db is not None else None)
        if self.prior.resuming:
            merged = recover(folder, self.state.run_id, {r.label: r.spec_hash for r in recipes}, self.prior,
                             self.out, self.db)
            if merged:
                self.reporter.note(f"merged {merged} result(s) the run's actors wrote before it stopped")
        with ray_session(self.options, READ_CPUS if is_location(self.data) else 0.0) as ray:
            dataset = dataset_of(self.data, self.fields, self.limit)
            done = frozenset(key for key in self.prior.records if self.prior.done(key))
            job = ActorJob(self.state.run_id, recipes, self.concurrency,
                           ray.put(done) if len(done) > SHIP_BY_REFERENCE else done,
                           str(folder) if folder is not None else None, self.prices,
                           start_bucket(self.rate_limit) if self.rate_limit else None, self.target,
                           self.options.kill_after)
            scored = dataset.map_batches(
                ScoringActor, fn_constructor_kwargs={"job": job}, batch_format="pyarrow",
                batch_size=self.options.batch_size or self.concurrency, num_cpus=self.options.cpus_per_actor,
                compute=ray.data.ActorPoolStrategy(size=self.options.actors))
            self.sink.open()
            try:
                await self._consume(scored)
            finally:
                self.sink.close()
        remove_shards(folder)

    async def _consume(self, scored: Any) -> None:
        """Keep each output record as it arrives (`OutputPump` reads them off the event loop)."""
        pump = OutputPump(scored)
        try:
            while (batch := await pump.next()) is not None:
                for raw in batch.column(OUTPUT_COLUMN).to_pylist():
                    await self._keep(*decode_record(raw))
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "ray":
                raise
            raise RayRunError(f"the Ray run failed ({type(exc).__name__}): {exc}; every result kept so far is "
                              "saved: resume the run") from exc
        finally:
            await pump.stop()

    async def _keep(self, kind: str, value: Any) -> None:
        if kind == "problem":
            self.on_problem(value)
            return
        if kind == "fatal":
            raise DatasetError(value)
        item = value[0] if kind == "item" else None
        key = item_key(item["id"]) if item is not None else value
        if key in self._seen:  # an id a file repeats within itself is skipped where it is read
            self.on_problem(DatasetProblem(str(self.data), 0, f"duplicate id {key!r} (in another file); skipped"))
            return
        if self.limit is not None and self.state.items >= self.limit:
            return
        self._seen.add(key)
        self.state.items += 1
        self.sink.count_prior(key, self.scorers)
        if kind == "resumed":
            self.state.resumed += 1
            self.reporter.skipped(self.state, 1)
            return
        item, results = value
        self.sink.record_item(key, item)
        for label, result in results.items():
            self.sink.save(item, key, label, result)
        await self.sink.item_done(item, results)


class OutputPump:
    """The scored dataset's output batches, read by a thread of their own (`PUMP_THREAD`): the
    only one that touches Ray Data's iterator, so stopping a run (Ctrl-C, an error) waits for no
    blocking read. `next()` gives the next batch (None at the end; a read's error raised);
    `stop()` ends the reading at the next batch and closes the iterator (Ray Data's execution
    shut down), waiting up to `STOP_WAIT_S`."""

    STOP_WAIT_S = 10.0

    def __init__(self, scored: Any):
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._pump, args=(scored,), name=PUMP_THREAD, daemon=True)
        self._thread.start()

    def _pump(self, scored: Any) -> None:
        batches = iter(scored.iter_batches(batch_size=None, batch_format="pyarrow"))
        try:
            for batch in batches:
                if not self._offer(("batch", batch)):
                    return
            self._offer(("end", None))
        except BaseException as exc:  # Ray's failure, handed to the driver's loop
            self._offer(("error", exc))
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()

    def _offer(self, entry: tuple[str, Any]) -> bool:
        while not self._stopping.is_set():
            try:
                self._queue.put(entry, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    async def next(self) -> Any:
        while True:  # short waits off the loop: a cancelled run never waits for a blocked read
            try:
                kind, value = await asyncio.to_thread(self._queue.get, True, 0.2)
            except queue.Empty:
                continue
            if kind == "error":
                raise value
            return value if kind == "batch" else None

    async def stop(self) -> None:
        self._stopping.set()
        await asyncio.to_thread(self._thread.join, self.STOP_WAIT_S)

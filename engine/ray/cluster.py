"""Which Ray a run uses, and how: `RayOptions`, and `ray_session` (join a cluster or start one).

- **Joining**: with an ``address`` (``auto``, or ``HOST:PORT`` of a running cluster's head) the
  run joins that cluster as a driver and leaves it running at the end; its actors end with the
  run. A ``127.0.0.1:PORT`` address joins a
  single-machine cluster (as scorespec starts one, see below) on its own terms.
- **Starting**: without one, a process that has already started or joined Ray (a notebook, a
  test) uses it; otherwise scorespec starts a local Ray for the run — real worker processes, a
  small object store, no dashboard — and stops it at the end, whatever happens. It listens on
  127.0.0.1 only: Ray's single-machine mode (`LOCAL_ONLY_VARIABLE`, the mode Ray uses on macOS
  and Windows) with the node's address set to the loopback one, so no other machine can reach
  it; Ray's token authentication (its token in ``~/.ray``) keeps other users of the machine out.
  On such a single-machine Ray (started, or joined at 127.0.0.1), the workers import the engine
  the driver runs (`this_engine`); on a real cluster, install scorespec on every node.
- **Quiet**: Ray Data's progress bars and start-up lines are off (scorespec reports progress
  itself); warnings and errors still show.
- **No stray Ray**: Ray starts a cluster by itself when one of its functions is called without
  one; during the session (and after it, while a run's output reader still winds down) that is
  off, so a late call after a stopped run can never leave a cluster running.

Needs the optional extra: ``pip install 'scorespec[ray]'``.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import UserError

__all__ = ["LOCAL_ONLY_VARIABLE", "PUMP_THREAD", "RayOptions", "RayMissing", "RayRunError", "import_ray",
           "local_only", "ray_session", "this_engine"]

#: MB of object store for a local Ray scorespec starts (items and results are small).
LOCAL_OBJECT_STORE_MB = 300
#: Ray's switch for its single-machine mode ("0": every process of the node listens on 127.0.0.1).
LOCAL_ONLY_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: The name of the thread reading a run's output (`engine.ray.runner.OutputPump`).
PUMP_THREAD = "scorespec-ray-output"


class RayMissing(UserError, ImportError):
    """The Ray executor was asked for, but Ray (with Ray Data) is not installed."""


class RayRunError(UserError, RuntimeError):
    """The Ray run itself failed (an actor that cannot start, a task Ray gave up on); the
    message carries Ray's reason. Every result kept before it is saved: resume the run."""


def import_ray() -> Any:
    """The ``ray`` module, with Ray Data. Raises `RayMissing` saying what to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RayMissing(f"the Ray executor needs Ray with Ray Data: pip install 'scorespec[ray]' ({exc})") from None
    return ray


@dataclass(frozen=True)
class RayOptions:
    """How a run uses Ray (see the module docstring).

    address: the cluster to join (None: the Ray this process already runs, else a local one
    started for the run). actors: scoring actors (≥ 1), each holding the compiled scorers and
    asking its judge with the run's per-actor concurrency. cpus_per_actor: CPUs each actor
    reserves (> 0; fractional, so actors leave CPUs for Ray Data's reads). batch_size: items
    handed to an actor at a time (None: the per-actor concurrency; an actor takes several
    batches at once). local_cpus: CPUs of a local Ray (None: the machine's); local_object_store_mb:
    its object store. kill_after: a test hook — the first actor to have written this many
    results exits at once (once per run), as a crashed worker would.

    Raises `ValueError` for a value out of range."""

    address: str | None = None
    actors: int = 2
    cpus_per_actor: float = 0.5
    batch_size: int | None = None
    local_cpus: int | None = None
    local_object_store_mb: int = LOCAL_OBJECT_STORE_MB
    kill_after: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.actors, bool) or not isinstance(self.actors, int) or self.actors < 1:
            raise ValueError(f"ray actors must be an integer ≥ 1, not {self.actors!r}")
        if isinstance(self.cpus_per_actor, bool) or not isinstance(self.cpus_per_actor, (int, float)) \
                or not math.isfinite(self.cpus_per_actor) or self.cpus_per_actor <= 0:
            raise ValueError(f"CPUs per actor must be a number > 0, not {self.cpus_per_actor!r}")
        for name in ("batch_size", "local_cpus", "kill_after"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"ray {name} must be an integer ≥ 1, not {value!r}")
        if self.local_object_store_mb < 80:
            raise ValueError(f"a local Ray needs an object store of at least 80 MB, not {self.local_object_store_mb}")

    def check_local(self, cpus: float, reading: float) -> None:
        """Raises `ValueError` when the actors would take so many of a local Ray's `cpus` that
        fewer than `reading` are left to read the data (the run would wait for ever)."""
        wanted = self.actors * self.cpus_per_actor
        if wanted > cpus - reading:
            raise ValueError(f"{self.actors} actors × {self.cpus_per_actor:g} CPU = {wanted:g} CPUs, but the local "
                             f"Ray has {cpus:g} and reading the data needs {reading:g}: give fewer actors or fewer "
                             "CPUs per actor")


# Ray's notes on starting, and Ray Data's on what it shows: not for the user of a run
_QUIET_LOGGERS = ("ray._private.authentication.authentication_token_setup", "ray.data._internal.progress",
                  "ray.data._internal.execution.streaming_executor")


def _quiet(ray: Any) -> None:
    """Ray Data's progress bars and INFO lines off (scorespec reports progress itself)."""
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


def this_engine() -> dict[str, Any]:
    """A Ray runtime environment in which workers on this machine import the ``engine`` package
    this process runs (its folder first on ``PYTHONPATH``, which Ray does not pass on by itself),
    whatever the worker's working directory: a run's driver and actors run the same code."""
    here = str(Path(__file__).resolve().parents[2])
    paths = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}


def _loopback(address: str) -> bool:
    """Whether `address` (``HOST:PORT``, ``ray://HOST:PORT``) names this machine's loopback."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host.startswith("127.") or host == "::1"


@contextmanager
def local_only(ray: Any) -> Iterator[None]:
    """Within the block, a Ray started by this process keeps to 127.0.0.1 (see the module
    docstring): its processes inherit `LOCAL_ONLY_VARIABLE`, and this process, which read Ray's
    setting when it imported Ray, sees the loopback address as the node's. Both are put back
    afterwards (the started processes keep theirs)."""
    saved = os.environ.get(LOCAL_ONLY_VARIABLE)
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    cluster = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    os.environ[LOCAL_ONLY_VARIABLE] = "0"
    if cluster is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(LOCAL_ONLY_VARIABLE, None)
        else:
            os.environ[LOCAL_ONLY_VARIABLE] = saved
        if cluster is not None:
            constants.ENABLE_RAY_CLUSTER = cluster


@contextmanager
def ray_session(options: RayOptions, reading: float = 0.0) -> Iterator[Any]:
    """Ray ready for a run (see the module docstring): yields the ``ray`` module; stops a Ray it
    started when the block ends. `reading`: CPUs the run's reads need beside the actors (checked
    on a Ray it starts: `RayOptions.check_local`). Raises `RayMissing`; ``ConnectionError`` when
    the cluster at the address cannot be joined; `ValueError` for actors a local Ray cannot hold."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        _quiet(ray)
        common = {"configure_logging": False, "log_to_driver": True}
        if options.address:
            try:
                if _loopback(options.address):  # a single-machine cluster (as scorespec starts one)
                    with local_only(ray):
                        ray.init(address=options.address, runtime_env=this_engine(), **common)
                else:
                    ray.init(address=options.address, **common)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConnectionError(f"cannot join the Ray cluster at {options.address}: {exc}") from None
        else:
            options.check_local(options.local_cpus or os.cpu_count() or 1, reading)
            with local_only(ray):
                ray.init(num_cpus=options.local_cpus or os.cpu_count() or 1, include_dashboard=False,
                         object_store_memory=options.local_object_store_mb * 1024 * 1024,
                         _node_ip_address="127.0.0.1", runtime_env=this_engine(), **common)
            started = True
    hook = getattr(getattr(ray, "_private", None), "auto_init_hook", None)
    auto = getattr(hook, "enable_auto_connect", None)
    if auto is not None:
        hook.enable_auto_connect = False
    try:
        _quiet(ray)
        yield ray
    finally:
        if started:
            ray.shutdown()
        if auto is not None and not any(t.name == PUMP_THREAD and t.is_alive() for t in threading.enumerate()):
            hook.enable_auto_connect = auto

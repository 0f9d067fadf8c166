"""A real local Ray cluster of the tests' own: started in the test process, listening on
127.0.0.1 only (`engine.ray.cluster.local_only`), with small settings, its worker processes
seeing a clean environment of their own (a home, caches and a store in temporary folders, none
of the user's settings), stopped at the end with every process it started."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["LocalRay", "processes_naming"]

# The user's settings must reach no worker (as `conftest.USER_SETTINGS` for the test process).
USER_SETTINGS = ("SCORESPEC_MODEL", "SCORESPEC_MODE", "SCORESPEC_CONTEXT_WINDOW", "SCORESPEC_CACHE_URL",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_BASE_URL", "SCORESPEC_PRICES",
                 "RAY_ADDRESS")


def processes_naming(text: str) -> list[int]:
    """Pids of the processes whose command line contains `text` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


class LocalRay:
    """``ray.init`` of a local cluster (2 CPUs, a 300 MB object store, no dashboard, 127.0.0.1),
    its session files under a short temporary folder. `start()` returns self; `address` is the
    head's ``HOST:PORT``, for a driver in another process (``--ray-address``, with
    `driver_environment`); `stop()` shuts it down and removes its
    folders. `home`: the workers' home and caches."""

    def __init__(self, cpus: int = 2, object_store_mb: int = 300):
        self.cpus = cpus
        self.object_store_mb = object_store_mb
        self.root = Path(tempfile.mkdtemp(prefix="ssray-"))  # short: Ray's socket paths must stay short
        self.home = self.root / "home"
        self.address = ""
        self.ray: Any = None

    @property
    def token_path(self) -> Path:
        return self.home / ".ray" / "auth_token"

    def driver_environment(self) -> dict[str, str]:
        """What a driver in another process needs in its environment to join the cluster (its
        token: Ray's token authentication is on)."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_path)}

    def worker_environment(self) -> dict[str, str]:
        """The environment the cluster's processes start with."""
        env = {k: v for k, v in os.environ.items() if k not in USER_SETTINGS}
        env.update(HOME=str(self.home), XDG_CACHE_HOME=str(self.home / ".cache"),
                   XDG_CONFIG_HOME=str(self.home / ".config"), XDG_DATA_HOME=str(self.home / ".local/share"),
                   XDG_STATE_HOME=str(self.home / ".local/state"),
                   SCORESPEC_STORE=str(self.home / "store.sqlite"),
                   SCORESPEC_CACHE_DB=str(self.home / "judge-cache.sqlite"))
        return env

    def start(self) -> LocalRay:
        import ray

        from engine.ray.cluster import local_only, this_engine

        self.home.mkdir(parents=True)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.worker_environment())
        try:  # the head and its workers take the environment they start with; they listen on 127.0.0.1
            with local_only(ray):
                ray.init(num_cpus=self.cpus, include_dashboard=False,
                         object_store_memory=self.object_store_mb * 2**20, _node_ip_address="127.0.0.1",
                         _temp_dir=str(self.root / "r"), configure_logging=False, log_to_driver=True,
                         runtime_env=this_engine())
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.ray = ray
        self.address = ray.get_runtime_context().gcs_address
        return self

    def stop(self) -> None:
        if self.ray is not None and self.ray.is_initialized():
            self.ray.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalRay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

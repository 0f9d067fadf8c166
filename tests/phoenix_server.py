"""A real Phoenix server for the trace tests: started on 127.0.0.1 (free HTTP and gRPC ports) with
a temporary working directory holding its SQLite database, waited for, and always stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

STARTUP_S = 180  # Phoenix takes ~20 s on a quiet machine; a busy one may need much more


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PhoenixServer:
    """``with PhoenixServer(folder) as server: server.url``: the server's base URL."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> PhoenixServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self.folder), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(free_port()),
               "PHOENIX_SQL_DATABASE_URL": f"sqlite:///{self.folder / 'phoenix.db'}",
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        log = open(self.folder / "phoenix.log", "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env,
                                        stdout=log, stderr=subprocess.STDOUT, cwd=self.folder)
        log.close()
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Phoenix exited ({self.process.returncode}):\n" + self.log()[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"Phoenix did not answer within {STARTUP_S} s:\n" + self.log()[-3000:])

    def log(self) -> str:
        return (self.folder / "phoenix.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)

    def __exit__(self, *exc: object) -> None:
        self.stop()

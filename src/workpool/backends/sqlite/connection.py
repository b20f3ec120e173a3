"""The backend's one SQLite connection: pragmas, migrations and the thread it lives in.

Thread policy: a backend owns ONE ``sqlite3.Connection``, created, used and closed only
in the single thread of its own ``ThreadPoolExecutor(max_workers=1)``. Async callers hand
that thread a whole transaction at a time, so the event loop never blocks on a lock or on
``fsync``. If an awaiting task is cancelled, its transaction still completes (or rolls
back) in the thread.

One exception, for ``os.fork()`` (see ``workpool.forks``): the parent's thread waits
between two jobs while the process forks, so that no SQLite lock is copied held, and the
child closes its copy of the connection in the thread that forked (hence
``check_same_thread=False``), which the child does not have. Closing it there does not
touch the parent's locks (POSIX locks belong to a process), and it must be closed:
SQLite keeps one record of locks per file and process, so a connection the child opened
next to the copy would take no lock of its own, and the parent's last close would then
delete the write-ahead log under the child, losing the child's writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

from workpool.backends.sqlite.sql import Migration, load_migrations
from workpool.errors import BackendUnavailableError
from workpool.forks import INHERITED, on_fork

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a transaction waits for another process's write lock before failing."""
PARK_SECONDS = 10.0
"""How long ``os.fork()`` waits for the connection's thread to finish its job."""

logger = logging.getLogger("workpool.backends.sqlite")


def open_connection(path: Path, synchronous: str = "FULL") -> sqlite3.Connection:
    """Connect to ``path`` (created if missing), configure it and migrate the schema.

    Several processes opening a new file at once can get "database is locked" from
    the switch to WAL mode, which SQLite does not route through the busy timeout;
    the whole open is then tried again, for up to the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            return _open_once(path, synchronous)
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(random.uniform(0.005, 0.05))


def _open_once(path: Path, synchronous: str) -> sqlite3.Connection:
    # timeout= sets the busy timeout; isolation_level=None: we issue BEGIN/COMMIT ourselves;
    # check_same_thread=False only lets a forked child close its copy (module docstring).
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
    )
    try:
        connection.row_factory = sqlite3.Row
        mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise BackendUnavailableError(
                f"SQLite database {path} cannot use WAL mode (got {mode!r}): "
                "put it on a local file system, not in memory or on a network share"
            )
        if synchronous not in ("FULL", "NORMAL"):  # never interpolate anything else
            raise ValueError(f"unknown synchronous level {synchronous!r}")
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        # Migrations run with foreign keys off (SQLite's default), as its procedure for
        # rebuilding a table requires; on for everything after.
        migrate(connection, load_migrations(), path)
        connection.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        connection.close()
        raise
    return connection


@contextmanager
def immediate_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """Run the block in ``BEGIN IMMEDIATE`` (write lock taken up front); roll back on error."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def user_version(connection: sqlite3.Connection) -> int:
    """The schema version recorded in the database header."""
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def migrate(connection: sqlite3.Connection, migrations: Sequence[Migration], path: Path) -> int:
    """Apply pending migrations in one transaction; safe when processes race to do it."""
    latest = migrations[-1].version if migrations else 0
    if user_version(connection) == latest:
        return latest
    with immediate_transaction(connection):
        current = user_version(connection)  # re-check: another process may have migrated
        if current > latest:
            raise BackendUnavailableError(
                f"SQLite database {path} has schema version {current}, newer than the "
                f"{latest} this workpool knows: upgrade workpool"
            )
        for migration in migrations[current:]:
            for statement in migration.statements:
                connection.execute(statement)
            if user_version(connection) != migration.version:
                raise RuntimeError(f"migration {migration.name} must end by setting user_version")
    return latest


def _transaction_and_data_version(
    work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection
) -> tuple[T, int]:
    """Run ``work`` in one immediate transaction; also return ``PRAGMA data_version``.

    The version is read while holding the write lock, so it covers every commit made by
    other connections up to this transaction: a later change means new foreign commits.
    """
    with immediate_transaction(connection):
        result = work(connection)
        version = data_version(connection)
    return result, version


def _in_read_transaction(
    work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection
) -> T:
    connection.execute("BEGIN")
    try:
        return work(connection)
    finally:
        connection.execute("COMMIT")


def data_version(connection: sqlite3.Connection) -> int:
    """A counter that changes whenever another connection commits to the database."""
    return int(connection.execute("PRAGMA data_version").fetchone()[0])


class ConnectionThread:
    """One connection and the one thread allowed to use it."""

    def __init__(
        self, path: Path, executor: ThreadPoolExecutor, connection: sqlite3.Connection
    ) -> None:
        self._path = path
        self._executor = executor
        self._connection: sqlite3.Connection | None = connection
        self.seen_data_version: int | None = None
        """``data_version`` as of this connection's latest transaction."""
        self._parked: threading.Event | None = None
        """While the process forks: sets the thread free again."""
        on_fork(self)

    @classmethod
    async def open(cls, path: Path, synchronous: str = "FULL") -> ConnectionThread:
        """Open (creating and migrating if needed) the database file at ``path``."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workpool-sqlite")
        try:
            connection = await _in_thread(executor, partial(open_connection, path, synchronous))
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise BackendUnavailableError(
                f"cannot open SQLite database {path}: {exc}; check that its directory "
                "exists and is writable and that the file is a workpool database"
            ) from exc
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(path, executor, connection)

    async def transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` as one ``BEGIN IMMEDIATE`` transaction in the thread."""
        connection = self._require_open()
        job = partial(_transaction_and_data_version, work, connection)
        result, version = await self._call(job)
        self.seen_data_version = version
        return result

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in the thread with no explicit transaction (reads only)."""
        return await self._call(partial(work, self._require_open()))

    async def snapshot(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in the thread in one read transaction (one snapshot)."""
        return await self._call(partial(_in_read_transaction, work, self._require_open()))

    async def data_version(self) -> int:
        """Read ``PRAGMA data_version`` (no transaction; cheap, no file I/O when idle)."""
        return await self._call(partial(data_version, self._require_open()))

    async def close(self) -> None:
        """Close the connection in its thread, then stop the thread. Idempotent."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await _in_thread(self._executor, connection.close)
            self._executor.shutdown(wait=True)

    def before_fork(self) -> None:
        """Hold the thread between two jobs until the fork is done (module docstring)."""
        self._parked = None
        if self._connection is None:
            return
        parked, release = threading.Event(), threading.Event()
        try:
            self._executor.submit(_park, parked, release)
        except RuntimeError:  # shut down: its thread runs nothing more
            return
        if parked.wait(PARK_SECONDS):
            self._parked = release
            return
        release.set()  # it passes straight through when it gets there
        logger.warning(
            "os.fork() while the SQLite connection to %s was busy for over %.0f s: the "
            "child keeps its copy unclosed; in the child, the parent's last close of the "
            "database may delete the write-ahead log under it",
            self._path,
            PARK_SECONDS,
        )

    def after_fork(self, *, in_child: bool) -> None:
        """Free the thread (parent); close the copy of the connection (child)."""
        release, self._parked = self._parked, None
        if not in_child:
            if release is not None:
                release.set()
            return
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if release is None:  # copied in the middle of a job: never touch it
            INHERITED.append(connection)
            return
        with contextlib.suppress(sqlite3.Error):
            connection.close()

    def _require_open(self) -> sqlite3.Connection:
        if self._connection is None:
            raise BackendUnavailableError(
                f"the SQLite backend for {self._path} is closed: open a new one"
            )
        return self._connection

    async def _call(self, job: Callable[[], T]) -> T:
        try:
            return await _in_thread(self._executor, job)
        except sqlite3.OperationalError as exc:
            raise BackendUnavailableError(
                f"SQLite database {self._path} failed: {exc}; if it is locked, another "
                f"process held the write lock over {BUSY_TIMEOUT_SECONDS:.0f} s; otherwise "
                "check the disk and the file's permissions"
            ) from exc


def _park(parked: threading.Event, release: threading.Event) -> None:
    parked.set()
    release.wait()


async def _in_thread(executor: ThreadPoolExecutor, job: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(executor, job)

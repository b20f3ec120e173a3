"""The backend's one SQLite connection: pragmas, migrations, and who may use it when.

Thread policy: a backend owns ONE ``sqlite3.Connection`` and a ``ThreadPoolExecutor``
of one thread, and the connection is used by one of them at a time (``_in_use``):

- the event loop runs a read itself when the connection is free, and an enqueue's
  transaction when the writer lock (``writer_lock``) is free too. It then waits for
  nothing but the job's own work and, for an enqueue, its ``fsync``: handing a one-row
  transaction to a thread and back cost more than the transaction (two cross-thread
  wake-ups around a sleep in ``fsync``: about 40 % of a one-run enqueue on the
  benchmark machine);
- otherwise the job is queued to the thread, which waits for the connection and for
  the writer lock, so the event loop never waits for another process or another job.
  The worker's writes (claims, finishes, renewals) always go there: its loop runs
  handlers while the thread waits for ``fsync``, which a drain needs.
If an awaiting task is cancelled, a queued transaction still completes (or rolls back)
in the thread.

One exception, for ``os.fork()`` (see ``workpool.forks``): the forking thread holds the
connection through the fork, so that no SQLite lock is copied held, and the child closes
its copy of the connection in the thread that forked (hence ``check_same_thread=False``).
Closing it there does not touch the parent's locks (POSIX locks belong to a process),
and it must be closed: SQLite keeps one record of locks per file and process, so a
connection the child opened next to the copy would take no lock of its own, and the
parent's last close would then delete the write-ahead log under the child, losing the
child's writes.
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
from workpool.backends.sqlite.writer_lock import WriterLock
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
        for migration in (migration for migration in migrations if migration.version > current):
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
    """One connection, used by the event loop when it is free, else by its own thread."""

    def __init__(
        self,
        path: Path,
        executor: ThreadPoolExecutor,
        connection: sqlite3.Connection,
        writer: WriterLock | None,
    ) -> None:
        self._path = path
        self._executor = executor
        self._connection: sqlite3.Connection | None = connection
        self._writer = writer
        self._in_use = threading.Lock()
        """Held by whoever uses the connection: the loop (a job done at once), the
        thread (a queued job) or ``os.fork()`` (between the two halves of its hook)."""
        self._parked = False
        self.seen_data_version: int | None = None
        """``data_version`` as of this connection's latest transaction."""
        on_fork(self)

    @classmethod
    async def open(cls, path: Path, synchronous: str = "FULL") -> ConnectionThread:
        """Open (creating and migrating if needed) the database file at ``path``, made
        absolute (against the current directory) so that messages name the file."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workpool-sqlite")
        path = await _in_thread(executor, path.resolve)
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
        return cls(path, executor, connection, WriterLock.open(path))

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    async def transaction(
        self, work: Callable[[sqlite3.Connection], T], *, inline: bool = False
    ) -> T:
        """Run ``work(connection)`` as one ``BEGIN IMMEDIATE`` transaction: in the
        thread, or if ``inline`` in the event loop when it can start at once."""
        job = partial(_transaction_and_data_version, work, self._require_open())
        result = await self._write_inline(job) if inline else None
        if result is None:
            result = await self._queued(partial(self._write, job))
        self.seen_data_version = result[1]
        return result[0]

    async def _write_inline(self, job: Callable[[], T]) -> T | None:
        """Run the write ``job`` in the event loop if the connection and the writer lock
        are free; None (nothing done) if not."""
        # Let the tasks that are ready run first: concurrent callers then gather in a
        # group commit (coalescing.py) as they would while a thread wrote.
        await asyncio.sleep(0)
        writer = self._writer
        if writer is None or not self._in_use.acquire(blocking=False):
            return None
        try:
            if not writer.acquire(wait=False):
                return None
            try:
                return self._converted(job)
            finally:
                writer.release()
        finally:
            self._in_use.release()

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` with no explicit transaction (reads only)."""
        return await self._reading(partial(work, self._require_open()))

    async def snapshot(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in one read transaction (one snapshot)."""
        return await self._reading(partial(_in_read_transaction, work, self._require_open()))

    async def data_version(self) -> int:
        """Read ``PRAGMA data_version`` (no transaction; cheap, no file I/O when idle)."""
        return await self._reading(partial(data_version, self._require_open()))

    async def close(self) -> None:
        """Close the connection in its thread, then stop the thread. Idempotent."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await _in_thread(self._executor, partial(self._exclusive, connection.close))
            self._executor.shutdown(wait=True)
            if self._writer is not None:
                self._writer.close()

    def before_fork(self) -> None:
        """Wait until no job uses the connection, and hold it through the fork."""
        self._parked = False
        if self._connection is None:
            return
        if self._in_use.acquire(timeout=PARK_SECONDS):
            self._parked = True
            return
        logger.warning(
            "os.fork() while the SQLite connection to %s was busy for over %.0f s: the "
            "child keeps its copy unclosed; in the child, the parent's last close of the "
            "database may delete the write-ahead log under it",
            self._path,
            PARK_SECONDS,
        )

    def after_fork(self, *, in_child: bool) -> None:
        """Free the connection (parent); close the copy of it (child)."""
        parked, self._parked = self._parked, False
        if not in_child:
            if parked:
                self._in_use.release()
            return
        if self._writer is not None:
            self._writer.close()  # the copy only: the parent's descriptor keeps its lock
            self._writer = None
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if not parked:  # copied in the middle of a job: never touch it
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

    async def _reading(self, job: Callable[[], T]) -> T:
        """Run a read at once if the connection is free (WAL readers take no lock that
        a writer holds), else after the jobs queued before it."""
        if self._in_use.acquire(blocking=False):
            try:
                return self._converted(job)
            finally:
                self._in_use.release()
        return await self._queued(job)

    def _write(self, job: Callable[[], T]) -> T:
        """In the thread: the write ``job`` under the writer lock (waited for)."""
        if self._writer is None:
            return job()
        self._writer.acquire()
        try:
            return job()
        finally:
            self._writer.release()

    def _exclusive(self, job: Callable[[], T]) -> T:
        with self._in_use:
            return job()

    async def _queued(self, job: Callable[[], T]) -> T:
        """Run ``job`` in the connection's thread, after the jobs queued before it."""
        return await _in_thread(
            self._executor, partial(self._converted, partial(self._exclusive, job))
        )

    def _converted(self, job: Callable[[], T]) -> T:
        try:
            return job()
        except sqlite3.OperationalError as exc:
            raise BackendUnavailableError(
                f"SQLite database {self._path} failed: {exc}; if it is locked, another "
                f"process held the write lock over {BUSY_TIMEOUT_SECONDS:.0f} s; otherwise "
                "check the disk and the file's permissions"
            ) from exc


async def _in_thread(executor: ThreadPoolExecutor, job: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(executor, job)

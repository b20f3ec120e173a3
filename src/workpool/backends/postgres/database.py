"""The backend's connections: a pool (``pool.py``) of psycopg async connections on the
pool's schema, and the transaction every operation runs in.

The connections are in autocommit mode, and a transaction begins with ``BEGIN; SET
LOCAL search_path TO <schema>`` in one round trip, so the queries name tables without
the schema. Not libpq's ``options`` at connect: PgBouncer refuses that startup
parameter, and in transaction mode a session's settings would not follow it from one
transaction to the next. ``open`` connects once on its own first, so an
unreachable server or a bad URL fails at once, and migrates the schema on that
connection. A transaction that PostgreSQL aborts to break a deadlock between two
operations (each locks rows the other needs), or that found a gate locked that it
locks out of order (``NOWAIT``, see ``operations/admission.py``), wrote nothing, so it
is run again, up to ``DEADLOCK_RETRIES`` times. A pooled connection found dead at BEGIN (the server
restarted, or ended that session) is replaced at once; any other lost connection is the
caller's outage
(``BackendUnavailableError``), as a Redis or SQLite error is.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow

from workpool.backends.postgres.migrate import migrate
from workpool.backends.postgres.pool import URGENT_SLOTS, ConnectionPool
from workpool.backends.postgres.url import PostgresTarget, unavailable

T = TypeVar("T")

POOL_SIZE = 10
"""Most connections of one backend: a worker's claims, renewals and finishes overlap."""
CONNECT_SECONDS = 10.0
"""How long opening a connection, or waiting for a pooled one, may take."""
DEADLOCK_RETRIES = 20
"""How many times a transaction aborted by a deadlock, a serialization failure or a lock
not available is re-run."""


class Database:
    """A pool of connections to one schema, and transactions on it."""

    def __init__(self, target: PostgresTarget, pool: ConnectionPool) -> None:
        self.target = target
        self._pool = pool
        # The schema is a lower-case identifier (url.py), safe to quote so.
        self._begin = f'BEGIN; SET LOCAL search_path TO "{target.schema}"'.encode()

    @classmethod
    async def open(cls, target: PostgresTarget) -> Database:
        """Connect, and migrate the schema on that first connection (kept in the pool);
        BackendUnavailableError if the server cannot be reached or the schema is newer
        than this workpool."""
        pool = ConnectionPool(target, POOL_SIZE, CONNECT_SECONDS)
        try:
            async with pool.connection() as connection:
                await migrate(connection, target.schema)
        except psycopg.Error as error:
            await pool.close()
            raise unavailable(target, error) from error
        except BaseException:
            await pool.close()
            raise
        return cls(target, pool)

    async def transaction(
        self, work: Callable[[AsyncConnection[DictRow]], Awaitable[T]], *, urgent: bool = False
    ) -> T:
        """Run ``work`` in one transaction on a pooled connection and commit; again if
        PostgreSQL aborted it to break a deadlock. ``urgent``: on a connection kept for
        operations that must not wait behind the others (see ``pool``)."""
        attempt = stale = 0
        while True:
            try:
                async with self._pool.connection(urgent=urgent) as connection:
                    return await _committed(connection, self._begin, work)
            except _StaleConnectionError as error:
                # Closed by a server restart or pg_terminate_backend while idle in the
                # pool: the next one (a new one once the idle are used up) is tried.
                stale += 1
                if stale > POOL_SIZE + URGENT_SLOTS:
                    raise unavailable(self.target, error.__cause__ or error) from error
            except (
                errors.DeadlockDetected,
                errors.SerializationFailure,
                errors.LockNotAvailable,
            ) as error:
                attempt += 1
                if attempt > DEADLOCK_RETRIES:
                    raise unavailable(self.target, error) from error
                await asyncio.sleep(random.uniform(0, 0.002 * attempt))
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                raise unavailable(self.target, error) from error

    async def autocommit(self, query: bytes, parameters: Mapping[str, Any]) -> None:
        """Run one statement as a transaction of its own, in one round trip."""
        try:
            async with self._pool.connection() as connection:
                await connection.execute(query, parameters)
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            raise unavailable(self.target, error) from error

    async def close(self) -> None:
        """Close the pool's idle connections (the others as they are given back)."""
        await self._pool.close()


class _StaleConnectionError(Exception):
    """A transaction's BEGIN failed for its connection: nothing of its work was sent."""


async def _committed(
    connection: AsyncConnection[DictRow],
    begin: bytes,
    work: Callable[[AsyncConnection[DictRow]], Awaitable[T]],
) -> T:
    """``begin``, ``work`` and a commit; a rollback if it raised. Cancelled (a Ctrl-C, a timeout)
    while a command was on the wire, the connection is closed instead: PostgreSQL
    refuses a rollback until that command's reply is read, and ends the transaction
    itself when the session goes."""
    try:
        try:
            await connection.execute(begin)
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            raise _StaleConnectionError from error
        result = await work(connection)
        await connection.commit()
    except Exception:
        with contextlib.suppress(psycopg.Error):
            await connection.rollback()
        raise
    except BaseException:
        await connection.close()
        raise
    return result

"""Operations in the caller's own transaction, on the caller's psycopg connection.

``JoinedTransaction`` runs ``enqueue``, ``send_event`` and ``cancel`` as the pooled
backend does (the same ``Operations``, hence the same SQL, counters and ``NOTIFY``), on
a connection the application holds, inside the transaction it has open. It never
commits or rolls back: the caller does, and only its commit makes the writes (and the
wake-ups, which PostgreSQL delivers at commit) visible.

The operations are coroutines over an async connection. A synchronous connection is
wrapped by ``SyncStatements``, whose ``execute`` is a coroutine that calls the blocking
psycopg method and never suspends; so an operation over it finishes on its first step,
and its caller (``workpool.sync.drive``) runs it to the end without an event loop.

The queries name tables without their schema (pooled connections have ``search_path``
set to it). Here the first statement saves the caller's ``search_path``, sets the pool's
for the rest of the transaction (``set_config(..., true)``), and checks that the schema
exists on this connection's database; the last sets the saved value back, so the
caller's later statements see what they saw before.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import pq
from psycopg.rows import DictRow, dict_row

from workpool.backends.base import CancelResult, Enqueued, EventSent, NewBatch, NewRun
from workpool.backends.postgres.operations import Operations
from workpool.backends.postgres.operations.transaction import Cursor, Row
from workpool.backends.postgres.sql import load_queries
from workpool.backends.postgres.url import PostgresTarget
from workpool.errors import ConfigurationError

T = TypeVar("T")

ENTER = (
    b"SELECT current_setting('search_path') AS saved,"
    b" set_config('search_path', %(schema)s, true) AS set,"
    b" to_regclass(%(table)s) IS NOT NULL AS found, current_database() AS database"
)
LEAVE = b"SELECT set_config('search_path', %(saved)s, true)"

_queries = functools.cache(load_queries)


class AsyncStatements:
    """Statements on a psycopg ``AsyncConnection``, with rows as dicts whatever its
    ``row_factory``."""

    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self.connection = connection

    async def execute(self, query: bytes, parameters: dict[str, Any], /) -> Cursor:
        """Run one statement."""
        cursor = self.connection.cursor(row_factory=dict_row)
        return await cursor.execute(query, parameters)

    def failed(self) -> bool:
        """Whether the transaction failed (PostgreSQL refuses statements until its end)."""
        return _failed(self.connection)


class SyncStatements:
    """Statements on a psycopg ``Connection``: coroutines that never suspend."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.connection = connection

    async def execute(self, query: bytes, parameters: dict[str, Any], /) -> Cursor:
        """Run one statement (blocking, without suspending)."""
        cursor = self.connection.cursor(row_factory=dict_row)
        return _Rows(cursor.execute(query, parameters))

    def failed(self) -> bool:
        """Whether the transaction failed (PostgreSQL refuses statements until its end)."""
        return _failed(self.connection)


class _Rows:
    """A sync cursor's results behind the async methods ``Transaction`` awaits."""

    def __init__(self, cursor: psycopg.Cursor[DictRow]) -> None:
        self._cursor = cursor
        self.description = cursor.description
        self.rowcount = cursor.rowcount

    async def fetchall(self) -> list[Row]:
        return self._cursor.fetchall()

    async def fetchone(self) -> Row | None:
        return self._cursor.fetchone()


Statements = AsyncStatements | SyncStatements
PsycopgConnection = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]


def _failed(connection: PsycopgConnection) -> bool:
    return connection.info.transaction_status == pq.TransactionStatus.INERROR


def check_open_transaction(connection: PsycopgConnection) -> None:
    """ConfigurationError unless ``connection`` is in a transaction workpool can join: one
    open (or about to open: not autocommit) and not failed."""
    if connection.closed:
        raise ConfigurationError("connection= is closed: pass an open connection")
    status = connection.info.transaction_status
    if status == pq.TransactionStatus.INERROR:
        raise ConfigurationError(
            "connection= is in a failed transaction (an earlier statement raised): roll it "
            "back before enqueueing in it"
        )
    if status == pq.TransactionStatus.IDLE and connection.autocommit:
        raise ConfigurationError(
            "connection= is in autocommit mode, outside any transaction, so there is no "
            "transaction to join: open one (`with conn.transaction():`, or autocommit=False) "
            "or leave out connection= to store the run on its own"
        )
    if status not in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
        raise ConfigurationError(
            f"connection= is busy ({status.name}): pass a connection with no command in flight"
        )


class JoinedTransaction:
    """The operations that may join a caller's transaction, on its connection (see the
    module's docstring). The ``Backend`` signatures of ``enqueue``, ``send_event`` and
    ``cancel``."""

    def __init__(self, target: PostgresTarget, statements: Statements) -> None:
        self._target = target
        self._statements = statements

    async def _joined(self, operation: Callable[[Operations], Awaitable[T]]) -> T:
        schema = self._target.schema
        cursor = await self._statements.execute(
            ENTER, {"schema": schema, "table": f"{schema}.schema_version"}
        )
        entered = await cursor.fetchone()
        assert entered is not None
        if not entered["found"]:
            raise ConfigurationError(
                f"connection= is on database {entered['database']!r}, which has no workpool "
                f"schema {schema!r}: pass a connection to the pool's own database (its URL "
                "names it), or leave out connection="
            )
        try:
            queries = _queries()
            operations = Operations(self._statements, queries)
            result = await operation(operations)
            await operations.flush_counters()
            if operations.woken:  # sent by PostgreSQL at the caller's commit, or never
                parameters = {"channel": self._target.channel, "queues": sorted(operations.woken)}
                await self._statements.execute(queries["notify_at_commit"].encode(), parameters)
        finally:
            # After a statement failed the caller can only roll back, which restores it.
            if not self._statements.failed():
                await self._statements.execute(LEAVE, {"saved": entered["saved"]})
        return result

    async def enqueue(
        self, runs: Sequence[NewRun], now: float, *, batch: NewBatch | None = None
    ) -> list[Enqueued]:
        """See ``Backend.enqueue``."""
        return await self._joined(lambda ops: ops.enqueue(runs, now, batch))

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None = None,
        trace_context: str | None = None,
    ) -> EventSent:
        """See ``Backend.send_event``."""
        return await self._joined(
            lambda ops: ops.send_event(run_id, key, payload, now, event_id, trace_context)
        )

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """See ``Backend.cancel``."""
        return await self._joined(lambda ops: ops.cancel(run_id, reason, now, trace_context))

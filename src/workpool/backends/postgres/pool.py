"""A small pool of psycopg async connections, with no task of its own.

Why not ``psycopg_pool.AsyncConnectionPool``: it runs worker tasks on the event loop
that fill and check the pool. ``asyncio.run`` cancels every task before it runs
``shutdown_asyncgens()``, which is when workpool closes a loop's backend (see
``workpool.loops``), so that pool's ``close()`` then raised the workers' CancelledError
and left its connections for the garbage collector: two sockets per ``asyncio.run`` of
a run's enqueue, measured. This pool opens connections when asked, keeps the idle ones,
and closes them in ``close()``; nothing runs between calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection, pq
from psycopg.rows import DictRow, dict_row

from workpool.backends.postgres.url import PostgresTarget

Connection = AsyncConnection[DictRow]


URGENT_SLOTS = 2
"""Connections kept for urgent operations (lease renewals) beyond the pool's size."""


class ConnectionPool:
    """At most ``size`` autocommit connections (each transaction sends its BEGIN), and
    ``URGENT_SLOTS`` more for urgent callers, who so never queue behind the others (a
    fan-out of 50 steps once held a renewal back until the lease was lost)."""

    def __init__(self, target: PostgresTarget, size: int, connect_seconds: float) -> None:
        self._target = target
        self._slots = asyncio.Semaphore(size)
        self._urgent_slots = asyncio.Semaphore(URGENT_SLOTS)
        self._idle: list[Connection] = []
        self._connect_seconds = connect_seconds
        self._closed = False

    async def _connect(self) -> Connection:
        return await AsyncConnection.connect(
            self._target.conninfo,
            row_factory=dict_row,
            autocommit=True,
            connect_timeout=max(1, int(self._connect_seconds)),
            # No named prepared statements: PgBouncer in transaction mode (before 1.21)
            # runs each transaction on any server session, where a statement this
            # connection prepared is missing, or one of another client's name exists.
            prepare_threshold=None,
        )

    @asynccontextmanager
    async def connection(self, *, urgent: bool = False) -> AsyncIterator[Connection]:
        """A connection to use alone until the block ends (an idle one, else a new one);
        kept for the next caller only if it ended idle, outside any transaction."""
        async with self._urgent_slots if urgent else self._slots:
            connection = self._idle.pop() if self._idle else await self._connect()
            try:
                yield connection
            finally:
                reusable = (
                    not self._closed
                    and not connection.closed
                    and connection.info.transaction_status == pq.TransactionStatus.IDLE
                )
                if reusable:
                    self._idle.append(connection)
                else:
                    await connection.close()

    async def close(self) -> None:
        """Close the idle connections; those in use close when given back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()

"""WaitLink: the blocking pops of idle workers, on redis-py connections of their own.

A wait is on the path from an enqueue to the start of its run: the BLPOP reply wakes the
claimer. redis-py's pool costs a checkout and a release around each command (a lock,
a readiness probe of the socket, connection-count instrumentation), and the release
ran between the reply and the claimer's wake-up. The link keeps its idle connections
in a list instead: a wait takes one (or opens one), sends BLPOP packed by hiredis, and
puts it back once the reply is read; nothing else runs in between. An idle connection
the server closed meanwhile (its ``timeout``, a restart) is dropped for a new one.

Redis checks BLPOP timeouts only when its event loop wakes (every 100 ms at the default
``hz``), so a timed wake-up (a due timer, retry or scheduled run) would be up to 100 ms
late; the deadline is kept here instead, and a wait cut by it drops its connection
(its reply could still arrive).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import hiredis
from redis.asyncio import ConnectionPool
from redis.asyncio.connection import AbstractConnection

from workpool.backends.redis.connection import NETWORK_ERRORS, closed_while_idle
from workpool.errors import BackendUnavailableError

DEADLINE_SLACK = 0.002
"""Seconds the local deadline of a blocking wait gives the server's own timeout first."""


class WaitLink:
    """Blocking pops, each on a connection no other command uses meanwhile."""

    def __init__(self, factory: ConnectionPool) -> None:
        self._factory = factory
        self._idle: list[AbstractConnection] = []
        self._busy: set[AbstractConnection] = set()
        self._closed = False

    async def pop(self, keys: Sequence[str], seconds: float) -> None:
        """BLPOP one of ``keys`` (seconds: at least 0.001), or return after ``seconds``.

        A network failure raises BackendUnavailableError, unless the link was closed
        meanwhile: a wait that ``close`` cut, or that began or connected after it,
        returns quietly.
        """
        connection = None
        deadline = asyncio.timeout(seconds + DEADLINE_SLACK)
        try:
            async with deadline:
                connection = await self._connection()
                if self._closed:  # before or while it connected: close could not cut it
                    raise ConnectionError("the link was closed")
                await connection.send_packed_command(
                    # hiredis's stub types the tuple as one element long.
                    hiredis.pack_command(("BLPOP", *keys, f"{seconds:.3f}")),  # type: ignore[arg-type]
                    check_health=False,
                )
                await connection.read_response()
        except BaseException as error:
            if connection is not None:  # its reply may still come: it cannot be reused
                self._busy.discard(connection)
                await connection.disconnect(nowait=True)
            if deadline.expired():
                return
            if not isinstance(error, NETWORK_ERRORS):
                raise
            if not self._closed:
                raise BackendUnavailableError(f"lost contact with Redis: {error}") from error
            return
        self._busy.discard(connection)
        self._idle.append(connection)

    async def _connection(self) -> AbstractConnection:
        """An idle connection the server has not closed, else a new one (connected),
        marked busy."""
        connection: AbstractConnection | None = None
        while connection is None and self._idle:
            connection = self._idle.pop()
            writer = connection._writer  # redis-py keeps the stream private
            if writer is None or closed_while_idle(writer.transport):
                await connection.disconnect(nowait=True)
                connection = None
        if connection is None:
            # redis-py leaves make_connection and connect unannotated.
            connection = self._factory.make_connection()  # type: ignore[no-untyped-call]
        self._busy.add(connection)
        if not connection.is_connected:
            await connection.connect()
        return connection

    async def close(self) -> None:
        """Close every connection; a wait in progress returns."""
        self._closed = True
        connections = [*self._idle, *self._busy]
        self._idle.clear()
        for connection in connections:
            await connection.disconnect(nowait=True)

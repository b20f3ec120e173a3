"""CommandLink: one redis-py connection used directly for the backend's commands.

redis-py's client object and connection pool cost roughly twice the CPU of the
command itself per call (pool checkout, a task per socket timeout, instrumentation):
about 130 us against 65 us on the benchmark machine (docs/benchmarks.md). Every
backend operation is one command, so the backend keeps one connection of its own,
sends one command at a time on it, and bounds each with ``asyncio.timeout``, which
needs no extra task. redis-py still does what it is good at: URL options, AUTH,
SELECT, TLS and the reply parser (hiredis, which also packs the commands).
"""

from __future__ import annotations

import asyncio
from typing import Any

import hiredis
from redis.asyncio import ConnectionPool
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workpool.errors import BackendUnavailableError

COMMAND_TIMEOUT = 30.0
"""Seconds to wait for the reply of a (non-blocking) command before dropping the link."""

NETWORK_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)

UNAVAILABLE_REPLIES = (
    BusyLoadingError,  # LOADING: a restarted server reads its data back
    ReadOnlyError,  # READONLY: a replica, e.g. during a failover
    OutOfMemoryError,  # OOM: full under maxmemory-policy noeviction
    MasterDownError,
    TryAgainError,
    ClusterDownError,
)
"""Error replies of a server that is there but cannot serve writes for now: callers
treat them as an outage (retry later), not as a refused operation."""
UNAVAILABLE_CODES = ("BUSY ", "NOREPLICAS ")
"""The same, for codes redis-py has no class for (a script running too long...)."""


class CommandLink:
    """Sends commands one at a time on one connection; reconnects after a failure.

    Concurrent callers queue on a lock. A command that fails on the network, times out
    or is cancelled mid-flight drops the connection (its reply could still arrive and
    be read by the next caller); the next call opens a fresh one.
    """

    def __init__(self, factory: ConnectionPool) -> None:
        self._factory = factory
        self._connection: AbstractConnection | None = None
        self._lock = asyncio.Lock()

    async def call(self, *args: str | int | float) -> Any:
        """Send one command and return its parsed reply.

        Redis error replies are raised as redis-py's ``ResponseError`` subclasses;
        network failures and timeouts as ``BackendUnavailableError``.
        """
        async with self._lock:
            connection = self._connection
            try:
                async with asyncio.timeout(COMMAND_TIMEOUT):
                    if connection is None:
                        # redis-py leaves make_connection unannotated.
                        connection = self._factory.make_connection()  # type: ignore[no-untyped-call]
                        await connection.connect()
                        self._connection = connection
                    # hiredis packs in C; redis-py's packer costs ~1 us per argument.
                    await connection.send_packed_command(
                        # hiredis's stub types the tuple as one element long.
                        hiredis.pack_command(args),  # type: ignore[arg-type]
                        check_health=False,
                    )
                    return await connection.read_response()
            except BaseException as error:
                if connection is not None and _ends_connection(error):
                    self._connection = None
                    await connection.disconnect(nowait=True)
                # First: the builtin TimeoutError (from asyncio.timeout) is an OSError.
                if isinstance(error, TimeoutError):
                    raise BackendUnavailableError(
                        f"Redis did not answer {args[0]} within {COMMAND_TIMEOUT:.0f} s"
                    ) from error
                if isinstance(error, NETWORK_ERRORS):
                    raise BackendUnavailableError(f"lost contact with Redis: {error}") from error
                if _unavailable(error):
                    raise BackendUnavailableError(
                        f"Redis cannot serve {args[0]} now: {error}"
                    ) from error
                raise

    async def close(self) -> None:
        """Close the connection (a later call would open a new one)."""
        async with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            await connection.disconnect()


def _unavailable(error: BaseException) -> bool:
    """Whether an error reply says the server cannot serve for now (see
    ``UNAVAILABLE_REPLIES``; a script's reply carries the code of its command's error)."""
    if isinstance(error, UNAVAILABLE_REPLIES):
        return True
    return isinstance(error, ResponseError) and str(error).startswith(UNAVAILABLE_CODES)


def _ends_connection(error: BaseException) -> bool:
    """Whether the connection is unusable after ``error`` (anything but a reply error)."""
    return not isinstance(error, ResponseError)

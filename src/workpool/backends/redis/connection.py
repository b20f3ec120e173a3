"""CommandLink: one connection for the backend's commands, which callers share without
waiting for each other's replies (pipelining).

redis-py's client object and connection pool cost roughly twice the CPU of the command
itself per call (pool checkout, a task per socket timeout, instrumentation): about 130
us against 65 us on the benchmark machine (docs/benchmarks.md). Every backend operation
is one command, so the backend keeps one connection of its own. redis-py opens it (URL
options, AUTH, SELECT, TLS); then the link reads the replies itself: a small protocol
feeds the bytes to hiredis and hands each reply to the caller whose command came first
(Redis answers in order). So a call is one write and one future, concurrent callers
(a worker's claimer, finisher, renewer and steps; an async server's readers) each send
at once instead of queueing behind a lock for the previous reply, and a caller that
gives up (cancelled) leaves the connection usable: its reply is read and dropped.

Connections the server closed (its idle ``timeout``, a restart, a proxy or failover) are
replaced without the caller noticing: before a command goes on a connection with nothing
in flight, a zero-timeout poll of its socket shows whether the server's end of it (or
anything unasked) arrived while the loop did not run, as between two ``*_sync`` calls;
such a connection is dropped and a new one opened. A command whose connection is lost
after it was written may have run or not: it is sent again once, on a new connection,
only if the caller marked it ``repeatable`` (a repeat changes nothing: reads, and
scripts such as enqueue, idempotent by run id); otherwise the call raises
``BackendUnavailableError`` saying the command may have been applied. Error replies
(a script's refusal, LOADING, READONLY...) and a reply that does not come in time are
never sent again.
"""

from __future__ import annotations

import asyncio
import collections
import select
from typing import Any

import hiredis
from redis._parsers.base import BaseParser
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
    """Sends commands on one connection, many in flight; reconnects after a failure.

    A command whose reply does not come within ``COMMAND_TIMEOUT`` drops the connection
    (and fails the others in flight on it); the next call opens a fresh one.
    """

    def __init__(self, factory: ConnectionPool) -> None:
        self._factory = factory
        self._replies: _Replies | None = None
        self._opening = asyncio.Lock()

    async def call(self, *args: str | int | float, repeatable: bool = False, what: str = "") -> Any:
        """Send one command and return its parsed reply.

        ``repeatable``: running the command twice has the effect and reply of running it
        once, so it is sent again (once, on a new connection) if the connection is lost
        before its reply comes. ``what`` names it in errors (default: the command).
        Redis error replies are raised as redis-py's ``ResponseError`` subclasses;
        network failures, timeouts and a server that cannot serve now as
        ``BackendUnavailableError``.
        """
        what = what or str(args[0])
        # hiredis packs in C; redis-py's packer costs ~1 us per argument.
        packed = hiredis.pack_command(args)  # type: ignore[arg-type]
        try:
            result = await self._exchange(packed, what)
        except RedisConnectionError as error:
            if not repeatable:
                raise BackendUnavailableError(
                    f"lost contact with Redis while it ran {what}, which may have been "
                    f"applied or not: {error}"
                ) from error
            try:
                result = await self._exchange(packed, what)
            except RedisConnectionError as again:
                raise BackendUnavailableError(f"lost contact with Redis: {again}") from again
        if isinstance(result, Exception):  # an error reply (hiredis makes it, not raises)
            if _unavailable(result):
                raise BackendUnavailableError(f"Redis cannot serve {what} now: {result}")
            raise result
        return result

    async def _exchange(self, packed: bytes, what: str) -> Any:
        """Write one packed command on a usable connection and wait for its reply.
        RedisConnectionError: the connection was lost after the command was written."""
        replies = self._replies
        if replies is None or not replies.usable():
            replies = await self._open()
        reply = replies.send(packed)
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT):
                return await reply
        except TimeoutError:
            replies.drop()
            raise BackendUnavailableError(
                f"Redis did not answer {what} within {COMMAND_TIMEOUT:.0f} s"
            ) from None
        except OSError as error:
            raise RedisConnectionError(str(error)) from error

    async def close(self) -> None:
        """Close the connection (a later call would open a new one)."""
        replies, self._replies = self._replies, None
        if replies is not None:
            await replies.close()

    async def _open(self) -> _Replies:
        async with self._opening:
            stale = self._replies
            if stale is not None and stale.usable():
                return stale  # another caller opened it meanwhile
            self._replies = None
            if stale is not None:
                await stale.close()
            # redis-py leaves make_connection and connect unannotated.
            connection = self._factory.make_connection()  # type: ignore[no-untyped-call]
            try:
                await connection.connect()
            except (RedisConnectionError, RedisTimeoutError, OSError) as error:
                await connection.disconnect(nowait=True)
                raise BackendUnavailableError(f"lost contact with Redis: {error}") from error
            self._replies = _Replies(connection)
            return self._replies


class _Replies(asyncio.Protocol):
    """The reading end of the link's connection: replies, in order, to their callers.

    It takes the place of the stream redis-py opened the connection with (the
    transport's protocol), once the handshake is done. redis-py's connection object
    still owns the socket: closing goes through it.
    """

    def __init__(self, connection: AbstractConnection) -> None:
        self._connection = connection
        writer = connection._writer  # redis-py keeps the stream private; no API gives it
        assert writer is not None
        self._transport = writer.transport
        self._parser = hiredis.Reader(replyError=BaseParser.parse_error, encoding="utf-8")
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.lost: BaseException | None = None
        """Why the connection ended, once it has."""
        self._socket = _IdleSocket(self._transport)
        self._transport.set_protocol(self)

    def usable(self) -> bool:
        """Whether a command may go on this connection: not lost or closing, nor
        closed by the server while nothing was in flight (checked then only: with
        replies owed, the loop is reading it). One that is not is dropped."""
        if self.lost is not None or self._transport.is_closing():
            return False
        if self._waiting or not self._socket.has_input():
            return True
        self.lost = RedisConnectionError("the server closed the connection while idle")
        self._transport.abort()
        return False

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        """Write one packed command; the future of its reply."""
        reply = asyncio.get_running_loop().create_future()
        self._waiting.append(reply)
        self._transport.write(packed)
        return reply

    def drop(self) -> None:
        """End the connection now (a reply is overdue): every call in flight fails, and
        the next call opens a new one."""
        self.lost = self.lost or RedisTimeoutError("a reply was overdue")
        self._transport.abort()

    async def close(self) -> None:
        await self._connection.disconnect(nowait=True)

    def data_received(self, data: bytes) -> None:
        self._parser.feed(data)
        while (reply := self._parser.gets()) is not False:
            waiting = self._waiting.popleft()
            if not waiting.done():  # else its caller gave up: drop the reply
                waiting.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or RedisConnectionError("the connection to Redis was closed")
        while self._waiting:
            waiting = self._waiting.popleft()
            if not waiting.done():
                waiting.set_exception(RedisConnectionError(f"connection lost: {self.lost}"))

    def eof_received(self) -> bool:
        return False  # the server closed its end: close ours (connection_lost follows)


class _IdleSocket:
    """Polls the socket of a connection that owes no reply: anything to read there
    (the server's end of the connection, or bytes nobody asked for) means the
    connection cannot carry a command. The poll costs about 1 us."""

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        self._poll = select.poll()
        if sock is not None:  # else a transport without one: nothing to look at
            self._poll.register(sock.fileno(), select.POLLIN)

    def has_input(self) -> bool:
        """Whether the socket is readable, closed or in error now."""
        return bool(self._poll.poll(0))


def closed_while_idle(transport: asyncio.BaseTransport) -> bool:
    """Whether a connection that owes no reply can no longer carry a command (see
    ``_IdleSocket``); for connections the link does not keep (``WaitLink``)."""
    return transport.is_closing() or _IdleSocket(transport).has_input()


def _unavailable(error: BaseException) -> bool:
    """Whether an error reply says the server cannot serve for now (see
    ``UNAVAILABLE_REPLIES``; a script's reply carries the code of its command's error)."""
    if isinstance(error, UNAVAILABLE_REPLIES):
        return True
    return isinstance(error, ResponseError) and str(error).startswith(UNAVAILABLE_CODES)

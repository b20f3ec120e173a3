"""How idle workers learn of new work: ``LISTEN``/``NOTIFY``, polling while it is down.

Every transaction that makes work runnable in a queue sends ``NOTIFY`` on the schema's
channel with the queue's name (delivered at commit; PostgreSQL folds repeats within a
transaction). A backend's ``Listener`` holds one connection of its own that LISTENs,
started by its first claim or wait, and wakes the waits of the queue named.

No wake-up is lost: wake-ups are counted, ``claim_started`` notes the count, and a wait
that finds it changed since returns at once (the claim may have looked before that
commit). A claim that began while no connection listened may have missed notifications,
so the next (re)connection counts as a wake-up of every queue. While the connection is
down, waits poll: they last at most ``POLL_SECONDS``. A backend's first wait waits for
its first connection (up to ``POLL_SECONDS``) before it begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

import psycopg
from psycopg import AsyncConnection, sql

from workpool.backends.postgres.url import PostgresTarget

POLL_SECONDS = 0.5
"""Longest wait while no connection listens (the server is down or refuses LISTEN)."""
FIRST_RETRY_SECONDS = 0.05
"""First pause before the listening connection is tried again; doubles to the poll."""

logger = logging.getLogger("workpool.backends.postgres")


class _Waiter:
    def __init__(self, queues: Sequence[str]) -> None:
        self.queues = frozenset(queues)
        self.event = asyncio.Event()


class Listener:
    """The ``wait_for_work`` calls of one backend, and the connection that wakes them."""

    def __init__(self, target: PostgresTarget) -> None:
        self._target = target
        self._waiters: set[_Waiter] = set()
        self._wakes = 0
        self._wakes_seen = 0
        self._listening = False
        self._tried = asyncio.Event()
        """Set once the first connection has listened or failed."""
        self._claimed_unheard = False
        """A claim began while no connection listened."""
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def claim_started(self) -> None:
        """A claim is about to look: later wake-ups may be of work it does not see."""
        self._start()
        if not self._listening:
            self._claimed_unheard = True
        self._wakes_seen = self._wakes

    async def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Return after ``timeout`` seconds, or earlier when a queue of ``queues`` gets work
        (or spuriously)."""
        if self._closed:
            return
        self._start()
        if not self._tried.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tried.wait(), min(timeout, POLL_SECONDS))
        if self._wakes != self._wakes_seen:
            self._wakes_seen = self._wakes
            return
        waiter = _Waiter(queues)
        self._waiters.add(waiter)
        try:
            limit = timeout if self._listening else min(timeout, POLL_SECONDS)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.event.wait(), max(limit, 0))
        finally:
            self._waiters.discard(waiter)
            self._wakes_seen = self._wakes

    def _start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._listen())

    def _wake(self, queue: str | None) -> None:
        """Wake the waits on ``queue`` (None: every wait)."""
        self._wakes += 1
        for waiter in self._waiters:
            if queue is None or queue in waiter.queues:
                waiter.event.set()

    async def _listen(self) -> None:
        """Hold a LISTENing connection, reconnecting after an outage, until closed."""
        pause = FIRST_RETRY_SECONDS
        while not self._closed:
            try:
                async with await AsyncConnection.connect(
                    self._target.conninfo, autocommit=True
                ) as connection:
                    channel = sql.Identifier(self._target.channel)
                    await connection.execute(sql.SQL("LISTEN {}").format(channel))
                    self._listening = True
                    self._tried.set()
                    pause = FIRST_RETRY_SECONDS
                    if self._claimed_unheard:
                        self._claimed_unheard = False
                        self._wake(None)
                    async for notification in connection.notifies():
                        self._wake(notification.payload)
            except psycopg.Error as error:
                logger.debug("the LISTEN connection failed: %s", error)
            self._tried.set()
            if self._listening:
                self._listening = False
                self._wake(None)  # waits now poll
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_SECONDS)

    async def close(self) -> None:
        """Stop listening and end every wait."""
        self._closed = True
        self._wake(None)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

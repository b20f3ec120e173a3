"""How idle workers learn of new work: ``LISTEN``/``NOTIFY``, and polling when that is
down, deaf or turned off.

A commit that makes work runnable in a queue is followed by a ``NOTIFY`` on the
schema's channel with the queue's name (see ``notifying``), and wakes the waits of this
backend at once. A backend's ``Listener`` holds one connection of its own that LISTENs,
started by its first claim or wait, and wakes the waits of the queue named.

No wake-up is lost: wake-ups are counted, ``claim_started`` notes the count, and a wait
that finds it changed since returns at once (the claim may have looked before that
commit). A claim that began while no connection listened may have missed notifications,
so the next (re)connection counts as a wake-up of every queue.

LISTEN can be deaf: behind PgBouncer in transaction mode the session that LISTENed is
handed to other clients after each statement, and nothing arrives. So after LISTEN the
listener NOTIFYs a channel of its own from a pooled connection and waits up to
``PROBE_SECONDS`` for it; if it never comes, it says so once (a warning) and closes the
connection. ``?listen=off`` skips all of this. Without a listening connection (deaf, off,
or down until it is back) waits poll: each lasts ``POLL_FASTEST`` after a claim found
work, doubling while claims find none, up to ``POLL_SLOWEST``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence

import psycopg
from psycopg import AsyncConnection, sql

from workpool.backends.postgres.url import PostgresTarget
from workpool.errors import BackendUnavailableError

POLL_FASTEST = 0.05
"""A wait's length without a listening connection, after a claim found work."""
POLL_SLOWEST = 0.5
"""The longest wait without a listening connection (idle, deaf, off, or the server down)."""
FIRST_RETRY_SECONDS = 0.05
"""First pause before the listening connection is tried again; doubles to the slowest poll."""
PROBE_SECONDS = 3.0
"""How long the listener waits for its own NOTIFY before it decides LISTEN is deaf."""

logger = logging.getLogger("workpool.backends.postgres")

Notify = Callable[[str, list[str]], Awaitable[None]]
"""NOTIFY a channel once per payload, from a pooled connection."""

_warned: set[str] = set()
"""The channels this process has warned are deaf (once each)."""


class _Waiter:
    def __init__(self, queues: Sequence[str]) -> None:
        self.queues = frozenset(queues)
        self.event = asyncio.Event()


class Listener:
    """The ``wait_for_work`` calls of one backend, and the connection that wakes them."""

    def __init__(self, target: PostgresTarget, notify: Notify) -> None:
        self._target = target
        self._notify = notify
        self._probe_channel = f"workpool_probe_{secrets.token_hex(8)}"
        self._waiters: set[_Waiter] = set()
        self._wakes = 0
        self._wakes_seen = 0
        self._listening = False
        self._poll = POLL_FASTEST
        self._tried = asyncio.Event()
        """Set once the first connection has listened, failed or been found deaf."""
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

    def claim_ended(self, found_work: bool) -> None:
        """A claim took runs (polls stay fast) or none."""
        if found_work:
            self._poll = POLL_FASTEST

    def woken_here(self, queues: Iterable[str]) -> None:
        """This backend committed runnable work in ``queues``: wake its own waits now."""
        for queue in queues:
            self._wake(queue)

    async def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Return after ``timeout`` seconds, or earlier when a queue of ``queues`` gets work
        (or spuriously; or at the next poll while no connection listens)."""
        if self._closed:
            return
        self._start()
        if not self._tried.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tried.wait(), min(timeout, POLL_SLOWEST))
        if self._wakes != self._wakes_seen:
            self._wakes_seen = self._wakes
            return
        waiter = _Waiter(queues)
        self._waiters.add(waiter)
        polling = not self._listening
        try:
            limit = min(timeout, self._poll) if polling else timeout
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.event.wait(), max(limit, 0))
        finally:
            self._waiters.discard(waiter)
            self._wakes_seen = self._wakes
        if polling and not waiter.event.is_set():
            self._poll = min(self._poll * 2, POLL_SLOWEST)

    def _start(self) -> None:
        if self._task is not None or self._closed:
            return
        if not self._target.listen:
            self._tried.set()
            return
        self._task = asyncio.get_running_loop().create_task(self._listen())

    def _wake(self, queue: str | None) -> None:
        """Wake the waits on ``queue`` (None: every wait)."""
        self._wakes += 1
        for waiter in self._waiters:
            if queue is None or queue in waiter.queues:
                waiter.event.set()

    async def _listen(self) -> None:
        """Hold a LISTENing connection, reconnecting after an outage, until closed or
        found deaf."""
        pause = FIRST_RETRY_SECONDS
        while not self._closed:
            try:
                async with await AsyncConnection.connect(
                    self._target.conninfo, autocommit=True
                ) as connection:
                    for channel in (self._target.channel, self._probe_channel):
                        await connection.execute(
                            sql.SQL("LISTEN {}").format(sql.Identifier(channel))
                        )
                    if not await self._heard_probe(connection):
                        self._deaf()
                        return
                    self._listening = True
                    self._tried.set()
                    pause = FIRST_RETRY_SECONDS
                    if self._claimed_unheard:
                        self._claimed_unheard = False
                        self._wake(None)
                    async for notification in connection.notifies():
                        self._wake(notification.payload)
            except (psycopg.Error, BackendUnavailableError) as error:
                logger.debug("the LISTEN connection failed: %s", error)
            self._tried.set()
            if self._listening:
                self._listening = False
                self._poll = POLL_FASTEST
                self._wake(None)  # waits now poll
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_SLOWEST)

    async def _heard_probe(self, connection: AsyncConnection[object]) -> bool:
        """NOTIFY the probe channel from another connection: whether this one hears it
        within ``PROBE_SECONDS``. Raises if the NOTIFY could not be sent (an outage)."""
        sending = asyncio.ensure_future(self._notify(self._probe_channel, ["probe"]))
        try:
            async for notification in connection.notifies(timeout=PROBE_SECONDS):
                if notification.channel == self._probe_channel:
                    return True
                self._wake(notification.payload)
            return False
        finally:
            await sending

    def _deaf(self) -> None:
        """LISTEN hears nothing: say so once, and poll from now on."""
        self._tried.set()
        channel = self._target.channel
        if channel in _warned:
            return
        _warned.add(channel)
        logger.warning(
            "PostgreSQL LISTEN receives nothing (schema %s): this backend's own test "
            "NOTIFY did not arrive within %.0f s, as happens behind PgBouncer in "
            "transaction pooling mode. Idle workers poll instead (every %.2f to %.1f s), "
            "so runs start up to that much later. Connect workers to PostgreSQL directly "
            "or through a session-mode pool to be woken at once, or add listen=off to "
            "the URL (?listen=off) to poll without this check and warning.",
            self._target.schema,
            PROBE_SECONDS,
            POLL_FASTEST,
            POLL_SLOWEST,
        )

    async def close(self) -> None:
        """Stop listening and end every wait."""
        self._closed = True
        self._wake(None)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

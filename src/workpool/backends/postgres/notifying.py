"""How a backend tells the listeners that work became runnable: ``NOTIFY``, after the
commit and coalesced.

A transaction that NOTIFYs takes a database-wide lock at commit and holds it until the
commit is over, WAL flush included: every such commit waits for the one before, so
concurrent enqueues could not share a flush (measured: 100 concurrent callers enqueued
fewer runs per second than one). So the transactions that make work runnable do not
NOTIFY: once one commits, the backend hands its queues to its ``Notifier``, which sends
them in a transaction of its own that does not wait for its flush (a lost wake-up costs
a poll, see ``listening``). One round is in flight at a time; the queues of the commits
that end meanwhile are sent together by the next round, which starts after the round in
flight ends, so after those commits too. A caller returns once a round that began after
its commit has been sent: no wake-up is left behind a closed event loop, and a burst of
commits costs a few NOTIFYs, not one each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

import psycopg

from workpool.errors import BackendUnavailableError

logger = logging.getLogger("workpool.backends.postgres")


class Notifier:
    """Sends the queues of committed transactions with ``send``, one round at a time."""

    def __init__(self, send: Callable[[list[str]], Awaitable[None]]) -> None:
        self._send = send
        self._queues: set[str] = set()
        """Queues of commits that no round has begun to send."""
        self._next: asyncio.Future[None] | None = None
        """Resolved when the round that sends ``_queues`` has ended."""
        self._task: asyncio.Task[None] | None = None

    async def notify(self, queues: Iterable[str]) -> None:
        """Wake the listeners of ``queues`` (of a transaction that has committed); returns
        once that is sent, or failed (then the listeners poll or reconnect)."""
        new = set(queues)
        if not new:
            return
        self._queues |= new
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        sent = self._next
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._rounds())
        await asyncio.shield(sent)

    async def _rounds(self) -> None:
        try:
            while self._queues:
                queues, self._queues = sorted(self._queues), set()
                sent, self._next = self._next, None
                try:
                    await self._send(queues)
                except (BackendUnavailableError, psycopg.Error) as error:
                    logger.debug("a NOTIFY of %s failed: %s", queues, error)
                finally:
                    if sent is not None and not sent.done():
                        sent.set_result(None)
        finally:
            self._task = None

    async def close(self) -> None:
        """Let the round in flight, if any, end."""
        if self._task is not None:
            await asyncio.shield(self._task)

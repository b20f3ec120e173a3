"""How idle workers on one SQLite file learn of new work.

A ``Waits`` serves one backend's ``wait_for_work`` calls. They end when:

- this backend commits work for an awaited queue (an in-process event);
- a datagram arrives on the backend's ``Listener`` (``wakeups.py``): a commit in
  another process made work runnable in a queue this backend announced;
- where no listener can be had, a poll of ``PRAGMA data_version`` (which changes when
  another connection commits) sees a change: every 1 ms at first, doubling up to
  200 ms while nothing changes, so a quiet wait costs about 5 reads a second;
- the timeout passes.

No wake-up is lost: every wake-up received is counted, and ``claim_started`` notes the
count; a wait that finds it changed since the last claim began (or the last wait
ended) returns at once (the claim may have looked before that commit). A backend
announces its listener at its first wait for a queue; a commit between its last claim
and the announcement changes ``data_version`` between the two transactions, so that
first wait then returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence

from workpool.backends.sqlite.connection import ConnectionThread
from workpool.backends.sqlite.wakeups import Listener, Sender

FIRST_POLL_SECONDS = 0.001
"""First ``PRAGMA data_version`` poll interval of a wait, when polling."""
MAX_POLL_SECONDS = 0.2
"""Cap of the doubling poll interval."""

Announce = Callable[[str, Sequence[str]], Awaitable[None]]
"""Records in the database that a listener address waits on some queues."""


class _Waiter:
    """One ``wait_for_work`` call: the queues it waits on and the event that ends it."""

    def __init__(self, queues: Sequence[str]) -> None:
        self.queues = frozenset(queues)
        self.event = asyncio.Event()


class Waits:
    """The waits of one backend's idle workers, and the wake-ups it sends others."""

    def __init__(self, thread: ConnectionThread, *, listen: bool = True) -> None:
        self._thread = thread
        self._waiters: set[_Waiter] = set()
        self._wakes = 0
        """Wake-ups received so far: own commits for a queue, datagrams."""
        self._wakes_seen = 0
        """``_wakes`` when a claim last began to look, or a wait last ended."""
        self._version_at_claim: int | None = None
        self._first_poll = FIRST_POLL_SECONDS
        self._listen = listen
        self._listener: Listener | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop that watches the listener."""
        self._announced: set[str] = set()
        self._sender = Sender()
        self.gone: set[str] = set()
        """Addresses no listener holds any more, for the next transaction to forget."""

    @property
    def address(self) -> str | None:
        """This backend's listener address, once it has one."""
        return None if self._listener is None else self._listener.address

    def claim_started(self) -> None:
        """A claim is about to look: later wake-ups may be of work it does not see."""
        self._wakes_seen = self._wakes

    def claim_returned(self, found_work: bool) -> None:
        """The claim looked (as of ``data_version`` now seen); poll eagerly after work."""
        self._version_at_claim = self._thread.seen_data_version
        if found_work:
            self._first_poll = FIRST_POLL_SECONDS

    def committed(
        self, woken: set[str], addresses: Iterable[str], forgotten: Collection[str]
    ) -> None:
        """A transaction committed: it made work runnable in the ``woken`` queues, read
        the listeners waiting on them (``addresses``) and deleted the ``forgotten``
        ones. Wake this backend's own waiters on those queues, and the listeners."""
        self.gone.difference_update(forgotten)
        if woken:
            self._wake_own(woken)
        own = self.address
        self.gone.update(self._sender.wake(address for address in addresses if address != own))

    async def wait(self, queues: Sequence[str], timeout: float, announce: Announce) -> None:
        """Wait for work in ``queues`` for up to ``timeout`` seconds (see the module)."""
        waiter = _Waiter(queues)
        self._waiters.add(waiter)
        try:
            if self._wakes != self._wakes_seen:
                return
            if await self._listening(waiter.queues, announce):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await waiter.event.wait()
            else:
                await self._poll_until_change(waiter.event, timeout)
        finally:
            self._waiters.discard(waiter)
            self._wakes_seen = self._wakes  # each wake-up ends one wait, not every later one

    def close(self) -> None:
        """Stop listening; end every wait. Idempotent."""
        for waiter in self._waiters:
            waiter.event.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(listener.fileno())
            listener.close()
        self._listen = False
        self._sender.close()

    def _wake_own(self, queues: set[str]) -> None:
        self._wakes += 1
        for waiter in self._waiters:
            if waiter.queues & queues:
                waiter.event.set()

    def _on_datagram(self) -> None:
        if self._listener is not None and self._listener.drain():
            self._wakes += 1
            for waiter in self._waiters:
                waiter.event.set()

    async def _listening(self, queues: frozenset[str], announce: Announce) -> bool:
        """Whether a listener is announced for ``queues`` (announcing it if need be)."""
        if not self._listen:
            return False
        if self._listener is None:
            self._listener = Listener.open()
            if self._listener is None:
                self._listen = False
                return False
            self._loop = asyncio.get_running_loop()
            self._loop.add_reader(self._listener.fileno(), self._on_datagram)
        new = queues - self._announced
        if new:
            looked = self._version_at_claim
            if looked is None:  # no claim yet: from now on, then
                looked = await self._thread.data_version()
            await announce(self._listener.address, sorted(new))
            self._announced |= new
            if looked != self._thread.seen_data_version:
                self._wake_own(set(new))  # a commit since the last look went unsignalled
        return True

    async def _poll_until_change(self, event: asyncio.Event, timeout: float) -> None:
        """Poll ``data_version`` until it differs from the last claim's, ``event`` is
        set or ``timeout`` passes. On a database that other processes keep changing
        while claims find nothing, each wait starts where the last one left off, so the
        idle worker settles at about 5 claims a second instead of spinning."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        baseline = self._version_at_claim
        if baseline is None:
            baseline = await self._thread.data_version()
        delay = self._first_poll
        while (remaining := deadline - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(delay, remaining)):
                    await event.wait()
                return
            delay = min(delay * 2, MAX_POLL_SECONDS)
            if await self._thread.data_version() != baseline:
                self._first_poll = delay  # reset to the minimum by a claim that finds work
                return
        self._first_poll = FIRST_POLL_SECONDS  # a quiet database: poll eagerly again

"""One backend per event loop: opened on first use, closed with its loop, never shared
with a forked child.

asyncio connections (Redis sockets, the SQLite connection's thread) belong to the loop
that opened them, so a pool keeps one backend per loop. Each is closed when its loop
shuts down: ``asyncio.run`` (and ``asyncio.Runner``, which pytest-asyncio uses) call
``loop.shutdown_asyncgens()`` before closing the loop, which finalizes every async
generator begun on it. So opening a backend also begins a one-``yield`` generator whose
``finally`` closes that backend; ``asyncio.run(wf.run(x))`` in a loop leaves nothing
open. A loop closed by hand without ``shutdown_asyncgens()`` keeps its backend until
``await pool.aclose()`` is called on it.

In a child made by ``os.fork()`` the parent's backends are forgotten, never used or
closed (see ``workpool.forks``): the child opens its own.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

from workpool.backends.base import Backend
from workpool.forks import INHERITED, disown_loop, on_fork


@dataclass
class _Opened:
    backend: Backend
    guard: AsyncGenerator[None, None] | None
    """Closes ``backend`` when finalized: at its loop's ``shutdown_asyncgens()``, or
    by ``close()``."""
    inherited: bool = False
    """Opened by the parent of this forked process: never closed here."""


class LoopBackends:
    """The backend of each event loop that used the pool."""

    def __init__(self, open_backend: Callable[[], Awaitable[Backend]]) -> None:
        self._open_backend = open_backend
        self._opened: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Opened] = (
            weakref.WeakKeyDictionary()
        )
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        on_fork(self)

    async def get(self) -> Backend:
        """The running loop's backend, opened on first use."""
        loop = asyncio.get_running_loop()
        opened = self._opened.get(loop)
        if opened is not None:
            return opened.backend
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:
            opened = self._opened.get(loop)
            if opened is None:
                opened = await self._open(loop)
        self._opening.pop(loop, None)
        return opened.backend

    async def close(self) -> None:
        """Close the running loop's backend now (a later ``get`` opens a new one)."""
        opened = self._opened.pop(asyncio.get_running_loop(), None)
        if opened is None:
            return
        if opened.guard is None:
            await opened.backend.close()
        else:
            await opened.guard.aclose()  # its finally closes the backend

    def before_fork(self) -> None:
        """Nothing to do (see ``after_fork``)."""

    def after_fork(self, *, in_child: bool) -> None:
        """In a forked child: leave the parent's backends alone, and let go of the
        sockets of the loops no thread of the child runs; the child opens its own."""
        if not in_child:
            return
        try:
            running = asyncio.get_running_loop()  # forked from inside a coroutine
        except RuntimeError:
            running = None
        for loop, opened in list(self._opened.items()):
            opened.inherited = True
            if loop is not running:
                disown_loop(loop)
        INHERITED.append((self._opened, self._opening))
        self._opened = weakref.WeakKeyDictionary()
        self._opening = weakref.WeakKeyDictionary()

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _Opened:
        backend = await self._open_backend()
        opened = _Opened(backend, guard=None)
        if sys.get_asyncgen_hooks().firstiter is not None:  # the loop finalizes them
            opened.guard = self._closes_with_loop(loop, opened)
            await anext(opened.guard)  # registered with the loop from its first step
        self._opened[loop] = opened
        return opened

    async def _closes_with_loop(
        self, loop: asyncio.AbstractEventLoop, opened: _Opened
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._opened.get(loop) is opened:
                del self._opened[loop]  # the loop is shutting down: forget it
            if not opened.inherited:
                await opened.backend.close()

"""How ``ctx.step`` suspends a run: the step calls in progress, the durable waits
pending, and the moment every one of them is waiting (then each raises ``SuspendRun``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from workpool.engine.environment import SuspendRun, Suspension


class Suspending:
    """The suspension bookkeeping of one execution's steps (a base of ``Steps``)."""

    def __init__(self) -> None:
        self._busy = 0
        self._settled = asyncio.Event()
        self._settled.set()
        self._waits: list[tuple[str | None, float | None, str | None, asyncio.Future[None]]] = []
        self._watcher: asyncio.Task[None] | None = None
        self.suspension: Suspension | None = None
        """Set once the run is to be suspended (the pending waits were unwound)."""

    def _before_suspend(self) -> None:
        """Called once every step call waits, before the waits are unwound (must not
        raise: the waits unwind whatever it finds)."""

    @contextmanager
    def _active(self) -> Iterator[None]:
        """A step call in progress: the run is not suspended until none is."""
        self._busy += 1
        self._settled.clear()
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._settled.set()

    async def _suspend_until(
        self, child: str | None, wake_at: float | None, *, event: str | None = None
    ) -> NoReturn:
        """Wait durably; raises SuspendRun once the whole handler is waiting durably."""
        if self.suspension is not None:  # already unwinding (a wait in a finally block)
            raise SuspendRun
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waits.append((child, wake_at, event, future))
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._suspend_when_settled())
        self._busy -= 1  # a durable wait is not activity
        if self._busy == 0:
            self._settled.set()
        try:
            await future
        finally:
            self._busy += 1
        raise AssertionError("a durable wait only ends by SuspendRun")

    async def _suspend_when_settled(self) -> None:
        while True:
            # Let sibling coroutines (asyncio.gather) reach their own steps first.
            for _ in range(3):
                await asyncio.sleep(0)
            if self._busy == 0:
                break
            await self._settled.wait()
        self._before_suspend()
        times = [wake_at for _, wake_at, _, _ in self._waits if wake_at is not None]
        children = tuple(dict.fromkeys(child for child, _, _, _ in self._waits if child))
        events = tuple(dict.fromkeys(event for _, _, event, _ in self._waits if event))
        self.suspension = Suspension(min(times) if times else None, children, events)
        for _, _, _, future in self._waits:
            if not future.done():
                future.set_exception(SuspendRun())

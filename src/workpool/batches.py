"""Batch: a handle on a batch of runs (``Workpool.batch``), over what it needs of the
client (``BatchSource``): its counts, more runs while it is open, close, cancel."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Protocol

from workpool.backends.base import Backend
from workpool.decoding import batch_not_found, require_batch
from workpool.definitions import PreparedRun
from workpool.handles import RunHandle
from workpool.models import BatchStatus
from workpool.settings import Settings
from workpool.sync import Portal, sync_twin
from workpool.validation import duration_seconds

CANCEL_STEP = 500
"""Runs one ``cancel_batch`` operation cancels at most (``Batch.cancel`` repeats it)."""


class BatchSource(Protocol):
    """What a batch handle needs of the client that made it."""

    @property
    def portal(self) -> Portal:
        """The event loop of the ``*_sync`` methods."""
        ...

    @property
    def settings(self) -> Settings:
        """The pool's settings (its clock)."""
        ...

    async def backend(self) -> Backend:
        """The running event loop's backend."""
        ...

    async def add_to_batch(
        self, batch_id: str, runs: Sequence[PreparedRun], *, connection: object = None
    ) -> list[RunHandle[Any]]:
        """Store runs in an open batch (``Workpool.add_to_batch``)."""
        ...


class Batch:
    """A batch of runs with one ``on_complete`` callback: read its counts, add runs while
    it is open, close it, cancel what has not ended."""

    def __init__(
        self, client: BatchSource, batch_id: str, runs: Sequence[RunHandle[Any]] = ()
    ) -> None:
        self.client = client
        self.id = batch_id
        self.runs = tuple(runs)
        """The handles of the runs ``Workpool.batch`` stored (none from ``get_batch``)."""

    def __repr__(self) -> str:
        return f"<Batch {self.id}>"

    @property
    def portal(self) -> Portal:
        """The event loop of the ``*_sync`` methods (the pool's)."""
        return self.client.portal

    async def status(self) -> BatchStatus:
        """Its counts so far, whether it is open, and its callback run once enqueued.
        BatchNotFoundError if it is gone (retention deletes a completed batch)."""
        backend = await self.client.backend()
        return require_batch(await backend.get_batch(self.id), self.id)

    async def wait(self, timeout: timedelta | float | None = None) -> BatchStatus:
        """Wait until it completes (closed, every run ended: its callback is enqueued
        then); return its status. TimeoutError when ``timeout`` (a timedelta or seconds;
        None: no limit) passes first (the batch goes on)."""
        seconds = None
        if timeout is not None:
            seconds = duration_seconds(timeout, what="wait() timeout", positive=True)
        delay = 0.005
        try:
            async with asyncio.timeout(seconds):
                while not (status := await self.status()).completed:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.25)
        except TimeoutError:
            raise TimeoutError(
                f"batch {self.id} did not complete within {seconds} s; it keeps going"
            ) from None
        return status

    async def add(
        self, runs: Sequence[PreparedRun], *, connection: object = None
    ) -> list[RunHandle[Any]]:
        """Store more runs in the batch (from ``Workflow.prepare``), in one operation,
        while it is open; ``BatchClosedError`` once it is closed, storing nothing.
        ``connection=``: in your transaction (see ``Workpool.enqueue_many``)."""
        return await self.client.add_to_batch(self.id, runs, connection=connection)

    async def close(self) -> BatchStatus:
        """Close it: no runs may be added any more, and it completes (its callback is
        enqueued) when its last run ends, at once if none is left. Closing twice is
        harmless."""
        backend = await self.client.backend()
        closed = await backend.close_batch(self.id, self.client.settings.clock.now())
        return require_batch(closed, self.id)

    async def cancel(self, reason: str | None = None) -> int:
        """Cancel its runs that have not ended (running ones are interrupted, as
        ``Workpool.cancel`` does), in atomic steps of up to 500 runs; return how many
        were canceled or asked to. The batch completes as its last run ends."""
        backend = await self.client.backend()
        total = 0
        while True:
            now = self.client.settings.clock.now()
            changed = await backend.cancel_batch(self.id, reason, CANCEL_STEP, now)
            if changed is None:
                raise batch_not_found(self.id)
            if not changed:
                return total
            total += changed

    status_sync = sync_twin(status, "batch")
    wait_sync = sync_twin(wait, "batch")
    add_sync = sync_twin(add, "batch")
    close_sync = sync_twin(close, "batch")
    cancel_sync = sync_twin(cancel, "batch")

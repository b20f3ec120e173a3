"""Group commit: concurrent enqueues on one event loop share one backend operation.

A caller with nothing in flight on its loop writes at once, in its own task, so a lone
caller waits for nothing but its own write (no timer, no hand-off). Callers that arrive
while a write is in flight queue up; when it ends, one writer task stores everything
that accumulated meanwhile in one ``backend.enqueue`` (one Lua script call, one SQLite
transaction, one fsync), up to ``MAX_BATCH_RUNS`` runs a write, and hands each caller
its own outcomes. The worker's finisher batches outcomes the same way.

Each caller keeps the semantics of a call of its own:

- It returns only once its runs are stored, with their outcomes in its order. Within
  one write, runs are stored in arrival order, so a repeated idempotency key resolves
  to the first caller's run, as two calls in a row would (the backends resolve a
  repeated key within one batch to its first run).
- A coalesced write stores its runs at the latest creation time (``now``) of its
  callers, never before any caller's own: a run due by then is stored ``queued``, as
  it would be if that caller had written alone at that time.
- A batch the backend refuses is written again one caller at a time, concurrently:
  each caller gets its own result or its own error (one caller's bad run does not
  fail the others). Writing again is safe even if the refused write had stored
  something: an id already stored is returned unchanged (``created=False``).
- A caller cancelled while it waits leaves the batch alone: if its runs were not yet
  sent they are not written; if they were, the write goes on for the others.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from workpool.backends.base import Enqueued, NewRun
from workpool.forks import on_fork

__all__ = ["MAX_BATCH_RUNS", "EnqueueBatcher", "LoopBatchers", "Write"]

MAX_BATCH_RUNS = 500
"""The most runs one coalesced write holds (a caller's own batch may be larger: it is
never split, and goes alone)."""

Write = Callable[[Sequence[NewRun], float], Awaitable[list[Enqueued]]]
"""Stores runs in one backend operation: ``backend.enqueue`` of the loop's backend."""


@dataclass(eq=False)
class _Request:
    """One caller's runs, waiting for the next write."""

    runs: Sequence[NewRun]
    now: float
    outcome: asyncio.Future[list[Enqueued]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class EnqueueBatcher:
    """Coalesces the enqueues of one event loop (see the module's docstring)."""

    def __init__(self, write: Write, max_runs: int = MAX_BATCH_RUNS) -> None:
        self._write = write
        self._max_runs = max_runs
        self._busy = False
        """A write is in flight (a lone caller's, or the writer task's)."""
        self._waiting: list[_Request] = []
        self._writer: asyncio.Task[None] | None = None

    async def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store ``runs`` (with their creation time ``now``); their outcomes, in order."""
        if self._busy:
            request = _Request(runs, now)
            self._waiting.append(request)
            return await request.outcome  # cancelling it drops or leaves the request
        self._busy = True
        try:
            return await self._write(runs, now)
        finally:
            self._busy = False
            self._start_writer()

    def _start_writer(self) -> None:
        """Write what accumulated during the write that just ended, in a task of its own
        (no caller's cancellation can cancel a write that holds other callers' runs)."""
        if self._waiting and not self._busy:
            self._busy = True
            self._writer = asyncio.get_running_loop().create_task(
                self._write_waiting(), name="workpool-enqueue-batch"
            )

    async def _write_waiting(self) -> None:
        batch: list[_Request] = []
        try:
            while batch := self._next_batch():
                await self._write_batch(batch)
        finally:
            self._busy = False
            self._writer = None
            for request in (*batch, *self._waiting):  # left only if the loop is closing
                request.outcome.cancel()
            self._waiting.clear()

    def _next_batch(self) -> list[_Request]:
        """The oldest waiting requests, up to ``max_runs`` runs (at least one request);
        those whose caller stopped waiting are dropped unwritten."""
        batch: list[_Request] = []
        size = 0
        while self._waiting:
            request = self._waiting[0]
            if request.outcome.done():
                self._waiting.pop(0)
                continue
            if batch and size + len(request.runs) > self._max_runs:
                break
            batch.append(self._waiting.pop(0))
            size += len(request.runs)
        return batch

    async def _write_batch(self, batch: list[_Request]) -> None:
        if len(batch) == 1:
            await _deliver(batch[0], self._write(batch[0].runs, batch[0].now))
            return
        runs = [run for request in batch for run in request.runs]
        try:
            stored = await self._write(runs, max(request.now for request in batch))
        except Exception:
            # Refused (a bad run, an outage): each caller's runs on their own, so that
            # each gets its own outcome.
            await asyncio.gather(
                *(_deliver(request, self._write(request.runs, request.now)) for request in batch)
            )
            return
        start = 0
        for request in batch:
            end = start + len(request.runs)
            if not request.outcome.done():
                request.outcome.set_result(stored[start:end])
            start = end


async def _deliver(request: _Request, write: Awaitable[list[Enqueued]]) -> None:
    """Await ``write`` and hand its result or error to the request's caller."""
    try:
        stored = await write
    except Exception as error:
        if not request.outcome.done():
            request.outcome.set_exception(error)
        return
    if not request.outcome.done():
        request.outcome.set_result(stored)


class LoopBatchers:
    """The ``EnqueueBatcher`` of each event loop that enqueued through a client."""

    def __init__(self, write: Write, max_runs: int = MAX_BATCH_RUNS) -> None:
        self._write = write
        self._max_runs = max_runs
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EnqueueBatcher] = (
            weakref.WeakKeyDictionary()
        )
        on_fork(self)

    async def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store ``runs`` through the running loop's batcher."""
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = self._batchers[loop] = EnqueueBatcher(self._write, self._max_runs)
        return await batcher.enqueue(runs, now)

    def before_fork(self) -> None:
        """Nothing to do (see ``after_fork``)."""

    def after_fork(self, *, in_child: bool) -> None:
        """In a forked child: start afresh (the parent's writes are not the child's)."""
        if in_child:
            self._batchers = weakref.WeakKeyDictionary()

"""SQLiteBackend: the Backend protocol over one SQLite file in WAL mode.

Each method runs one ``BEGIN IMMEDIATE`` transaction (see ``operations``) in the
connection's own thread (see ``connection``); ``get_run`` is a single read.

Waking idle workers: ``wait_for_work`` returns at once when this instance enqueues to
one of the awaited queues (an in-process ``asyncio.Event``), and otherwise polls
``PRAGMA data_version``, which changes when any other connection (process) commits.
The poll interval starts at 1 ms and doubles up to 200 ms while nothing changes, so an
idle worker costs about 5 cheap pragma reads per second (no write, no file lock) after
its first second. When other connections commit but claims keep finding nothing (a
busy database, an idle queue), each wait starts where the last one left off, so the
idle worker settles at about 5 claims per second instead of spinning.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import TypeVar

from workpool.backends.base import (
    CancelResult,
    ClaimResult,
    Enqueued,
    Finish,
    Lease,
    MinuteCounters,
    NewRun,
    QueueSettings,
    RenewResult,
    Rerun,
    RunPage,
    RunRecord,
    StatsSnapshot,
    StepRecord,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.sqlite import reads, records
from workpool.backends.sqlite.connection import ConnectionThread
from workpool.backends.sqlite.operations import Operations
from workpool.backends.sqlite.sql import load_queries

T = TypeVar("T")

FIRST_POLL_SECONDS = 0.001
"""First ``PRAGMA data_version`` poll interval of a wait."""
MAX_POLL_SECONDS = 0.2
"""Cap of the doubling poll interval."""


class _Waiter:
    """One ``wait_for_work`` call: the queues it waits on and the event that ends it."""

    def __init__(self, queues: Sequence[str]) -> None:
        self.queues = frozenset(queues)
        self.event = asyncio.Event()


class SQLiteBackend:
    """Runs stored in one SQLite file; several processes of one host may share it."""

    def __init__(self, thread: ConnectionThread) -> None:
        self._thread = thread
        self._queries = load_queries()
        self._waiters: set[_Waiter] = set()
        self._first_poll = FIRST_POLL_SECONDS

    @classmethod
    async def open(cls, path: Path, *, synchronous: str = "FULL") -> SQLiteBackend:
        """Open (creating and migrating if needed) the database file at ``path``.

        ``synchronous``: the ``PRAGMA synchronous`` level, FULL or NORMAL (see
        ``workpool.backends.sqlite_synchronous``). Raises BackendUnavailableError if
        the file cannot be opened or created.
        """
        return cls(await ConnectionThread.open(path, synchronous))

    async def _transact(self, operation: Callable[[Operations], T]) -> T:
        """Run ``operation`` in one transaction, then wake waiters on the woken queues."""

        def work(connection: sqlite3.Connection) -> tuple[T, set[str]]:
            operations = Operations(connection, self._queries)
            result = operation(operations)
            operations.flush_counters()
            return result, operations.woken

        result, woken = await self._thread.transaction(work)
        self._wake(woken)
        return result

    def _wake(self, queues: set[str]) -> None:
        for waiter in self._waiters:
            if waiter.queues & queues:
                waiter.event.set()

    async def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """See ``Backend.enqueue``."""
        return await self._transact(lambda operations: operations.enqueue(runs, now))

    async def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        *,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        """See ``Backend.claim``."""
        result = await self._transact(
            lambda operations: operations.claim(
                queues, worker_id, limit, lease_seconds, max_lease_losses, now, workflows, alone
            )
        )
        if result.runs:
            self._first_poll = FIRST_POLL_SECONDS
        return result

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        *,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        """See ``Backend.renew``."""
        return await self._transact(
            lambda operations: operations.renew(leases, lease_seconds, now, progress)
        )

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """See ``Backend.finish``; all entries in one transaction."""
        return await self._transact(lambda operations: operations.finish(finishes, now))

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None = None
    ) -> StepRecord | None:
        """See ``Backend.save_step``."""
        return await self._transact(
            lambda operations: operations.save_step(lease, step, now, child)
        )

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        """See ``Backend.get_steps``: one SELECT."""
        query = self._queries["get_steps"]

        def read(connection: sqlite3.Connection) -> list[StepRecord]:
            rows = connection.execute(query, {"run_id": run_id}).fetchall()
            return [records.step_record(row) for row in rows]

        return await self._thread.read(read)

    async def get_children(self, run_id: str) -> list[str]:
        """See ``Backend.get_children``: one SELECT."""
        query = self._queries["get_children"]

        def read(connection: sqlite3.Connection) -> list[str]:
            return [records.text(row, "id") for row in connection.execute(query, {"id": run_id})]

        return await self._thread.read(read)

    async def set_queue(
        self,
        queue: str,
        *,
        max_parallelism: int | EllipsisType | None = ...,
        paused: bool | None = None,
        only_if_new: bool = False,
    ) -> QueueSettings:
        """See ``Backend.set_queue``."""
        return await self._transact(
            lambda operations: operations.set_queue(queue, max_parallelism, paused, only_if_new)
        )

    async def get_queue(self, queue: str) -> QueueSettings:
        """See ``Backend.get_queue``."""
        return await self._transact(lambda operations: operations.get_queue(queue))

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """See ``Backend.sync_registry``."""
        return await self._transact(
            lambda operations: operations.sync_registry(app, workflows, now, grace)
        )

    async def list_workflows(self) -> list[WorkflowInfo]:
        """See ``Backend.list_workflows``: one SELECT."""
        query = self._queries["list_workflows"]

        def read(connection: sqlite3.Connection) -> list[WorkflowInfo]:
            return [records.workflow_info(row) for row in connection.execute(query)]

        return await self._thread.read(read)

    async def heartbeat(self, worker: WorkerRecord, now: float) -> None:
        """See ``Backend.heartbeat``."""
        await self._transact(lambda operations: operations.heartbeat(worker, now))

    async def remove_worker(self, worker_id: str) -> None:
        """See ``Backend.remove_worker``."""
        await self._transact(lambda operations: operations.remove_worker(worker_id))

    async def list_workers(self, now: float) -> list[WorkerRecord]:
        """See ``Backend.list_workers``: one SELECT."""
        query = self._queries["live_workers"]

        def read(connection: sqlite3.Connection) -> list[WorkerRecord]:
            return [records.worker_record(row) for row in connection.execute(query, {"now": now})]

        return await self._thread.read(read)

    async def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        """See ``Backend.fail_unserved``."""
        return await self._transact(
            lambda operations: operations.fail_unserved(
                queue, workflow, available_before, limit, error, now
            )
        )

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """See ``Backend.acquire_lease``."""
        return await self._transact(
            lambda operations: operations.acquire_lease(name, holder, seconds, now)
        )

    async def release(self, leases: Sequence[Lease], now: float, *, started: bool = True) -> None:
        """See ``Backend.release``."""
        await self._transact(lambda operations: operations.release(leases, now, started))

    async def cancel(self, run_id: str, reason: str | None, now: float) -> CancelResult:
        """See ``Backend.cancel``."""
        return await self._transact(lambda operations: operations.cancel(run_id, reason, now))

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """See ``Backend.cancel_many``."""
        return await self._transact(
            lambda operations: operations.cancel_many(before, workflow, reason, limit, now)
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """See ``Backend.get_run``: one SELECT, consistent on its own."""
        query = self._queries["get_run"]

        def read(connection: sqlite3.Connection) -> RunRecord | None:
            row = connection.execute(query, {"id": run_id}).fetchone()
            return None if row is None else records.run_record(row)

        return await self._thread.read(read)

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        """See ``Backend.list_runs``: index ranges read in one read transaction."""
        return await self._thread.snapshot(
            lambda connection: reads.list_runs(
                connection, self._queries, status, workflow, queue, limit, cursor
            )
        )

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        """See ``Backend.get_stats``: three reads in one read transaction."""
        return await self._thread.snapshot(
            lambda connection: reads.get_stats(connection, self._queries, since, now)
        )

    async def get_minute_counters(self, since: float, now: float) -> list[MinuteCounters]:
        """See ``Backend.get_minute_counters``: one read."""
        return await self._thread.snapshot(
            lambda connection: reads.get_minute_counters(connection, self._queries, since, now)
        )

    async def purge(self, finished_before: float, limit: int, counters_before: float) -> int:
        """See ``Backend.purge``."""
        return await self._transact(
            lambda operations: operations.purge(finished_before, limit, counters_before)
        )

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """See ``Backend.rerun``."""
        return await self._transact(lambda operations: operations.rerun(run_id, new_id, now))

    async def wait_for_work(
        self, queues: Sequence[str], timeout: float, *, workflows: Sequence[str] | None = None
    ) -> None:
        """See ``Backend.wait_for_work`` and the module docstring for the polling cost.
        Any change to the file wakes a waiter, whatever its ``workflows``."""
        waiter = _Waiter(queues)
        self._waiters.add(waiter)
        try:
            await self._poll_until_change(waiter.event, timeout)
        finally:
            self._waiters.discard(waiter)

    async def _poll_until_change(self, event: asyncio.Event, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        baseline = self._thread.seen_data_version
        if baseline is None:
            baseline = await self._thread.data_version()
        delay = self._first_poll
        while (remaining := deadline - loop.time()) > 0:
            try:
                async with asyncio.timeout(min(delay, remaining)):
                    await event.wait()
                return
            except TimeoutError:
                pass
            delay = min(delay * 2, MAX_POLL_SECONDS)
            if await self._thread.data_version() != baseline:
                self._first_poll = delay  # reset to the minimum by a claim that finds work
                return
        self._first_poll = FIRST_POLL_SECONDS  # a quiet database: poll eagerly again

    async def close(self) -> None:
        """Close the connection and stop its thread; wake any waiter. Idempotent."""
        for waiter in self._waiters:
            waiter.event.set()
        await self._thread.close()

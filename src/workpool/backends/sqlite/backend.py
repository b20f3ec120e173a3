"""SQLiteBackend: the Backend protocol over one SQLite file in WAL mode.

Each method runs one ``BEGIN IMMEDIATE`` transaction (see ``operations``) on the
backend's one connection (see ``connection``); ``get_run`` is a single read. Idle
workers are woken by the commits that make work runnable, in this process or another
(see ``waiting``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import TypeVar

from workpool.backends.base import (
    BatchRecord,
    CancelResult,
    ClaimResult,
    Enqueued,
    EventSent,
    EventValue,
    Finish,
    GateUsage,
    Lease,
    NewBatch,
    NewRun,
    NewTick,
    PeriodCounters,
    QueueSettings,
    RenewResult,
    Rerun,
    RerunFromStep,
    RunAction,
    RunPage,
    RunRecord,
    SkippedTickRecord,
    StatsSnapshot,
    StepRecord,
    TickStarted,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.sqlite import reads, records
from workpool.backends.sqlite.connection import ConnectionThread
from workpool.backends.sqlite.operations import Operations
from workpool.backends.sqlite.operations.ticks import skipped_tick
from workpool.backends.sqlite.recovery import SQLiteRecovery
from workpool.backends.sqlite.sql import load_queries
from workpool.backends.sqlite.waiting import Waits
from workpool.errors import BackendUnavailableError

T = TypeVar("T")


class SQLiteBackend(SQLiteRecovery):
    """Runs stored in one SQLite file; several processes of one host may share it."""

    def __init__(self, thread: ConnectionThread, *, listen: bool = True) -> None:
        self._thread = thread
        self._queries = load_queries()
        self._waits = Waits(thread, listen=listen)

    def __repr__(self) -> str:
        return f"<SQLiteBackend {self._thread.path}>"

    @classmethod
    async def open(
        cls, path: Path, *, synchronous: str = "FULL", listen: bool = True
    ) -> SQLiteBackend:
        """Open (creating and migrating if needed) the database file at ``path``.

        ``synchronous``: ``PRAGMA synchronous``, FULL or NORMAL (see
        ``workpool.backends.sqlite_synchronous``). ``listen=False``: idle workers poll
        instead of listening for wake-ups. BackendUnavailableError if the file cannot be
        opened or created. A relative ``path`` is made absolute, so messages name it."""
        return cls(await ConnectionThread.open(path, synchronous), listen=listen)

    async def _transact(self, operation: Callable[[Operations], T], *, inline: bool = False) -> T:
        """Run ``operation`` in one transaction (``inline``: see ``connection``), then
        wake the waiters on the queues it made work runnable in, here and elsewhere."""
        gone = frozenset(self._waits.gone)

        def work(connection: sqlite3.Connection) -> tuple[T, set[str], list[str]]:
            operations = Operations(connection, self._queries)
            if gone:
                operations.forget_waiters(gone)
            result = operation(operations)
            operations.flush_counters()
            return result, operations.woken, operations.waiters_to_wake()

        result, woken, addresses = await self._thread.transaction(work, inline=inline)
        self._waits.committed(woken, addresses, gone)
        return result

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        *,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """See ``Backend.enqueue``; done by the event loop itself when it can start at once."""
        return await self._transact(
            lambda operations: operations.enqueue(runs, now, batch, added_by), inline=True
        )

    async def get_batch(self, batch_id: str) -> BatchRecord | None:
        """See ``Backend.get_batch``: one SELECT."""
        query = self._queries["get_batch"]

        def read(connection: sqlite3.Connection) -> BatchRecord | None:
            row = connection.execute(query, {"id": batch_id}).fetchone()
            return None if row is None else records.batch_record(row)

        return await self._thread.read(read)

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """See ``Backend.close_batch``."""
        return await self._transact(lambda operations: operations.close_batch(batch_id, now))

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        """See ``Backend.cancel_batch``."""
        return await self._transact(
            lambda operations: operations.cancel_batch(batch_id, reason, limit, now)
        )

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
        self._waits.claim_started()
        result = await self._transact(
            lambda operations: operations.claim(
                queues, worker_id, limit, lease_seconds, max_lease_losses, now, workflows, alone
            )
        )
        self._waits.claim_returned(found_work=bool(result.runs))
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

    async def take_event(
        self, lease: Lease, step: StepRecord, key: str, now: float
    ) -> StepRecord | None:
        """See ``Backend.take_event``."""
        return await self._transact(lambda operations: operations.take_event(lease, step, key, now))

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None = None,
        trace_context: str | None = None,
    ) -> EventSent:
        """See ``Backend.send_event``."""
        return await self._transact(
            lambda operations: operations.send_event(
                run_id, key, payload, now, event_id, trace_context
            )
        )

    async def set_event(self, lease: Lease, key: str, value: str) -> bool:
        """See ``Backend.set_event``."""
        return await self._transact(lambda operations: operations.set_event(lease, key, value))

    async def get_event(self, run_id: str, key: str) -> EventValue | None:
        """See ``Backend.get_event``: one SELECT."""
        query = self._queries["get_published"]

        def read(connection: sqlite3.Connection) -> EventValue | None:
            row = connection.execute(query, {"id": run_id, "key": key}).fetchone()
            if row is None:
                return None
            return EventValue(records.text(row, "status"), records.optional_text(row, "value"))

        return await self._thread.read(read)

    async def list_published(self, run_id: str) -> dict[str, str]:
        """See ``Backend.list_published``: one SELECT (the primary key's order)."""
        query = self._queries["list_published"]

        def read(connection: sqlite3.Connection) -> dict[str, str]:
            rows = connection.execute(query, {"id": run_id}).fetchall()
            return {str(row["key"]): str(row["value"]) for row in rows}

        return await self._thread.read(read)

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

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """See ``Backend.restore_registry``."""
        return await self._transact(
            lambda operations: operations.restore_registry(app, workflows, now)
        )

    async def list_workflows(self) -> list[WorkflowInfo]:
        """See ``Backend.list_workflows``: one SELECT."""
        query = self._queries["list_workflows"]

        def read(connection: sqlite3.Connection) -> list[WorkflowInfo]:
            return [records.workflow_info(row) for row in connection.execute(query)]

        return await self._thread.read(read)

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """See ``Backend.heartbeat``."""
        return await self._transact(lambda operations: operations.heartbeat(worker, now))

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

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """See ``Backend.start_tick``."""
        return await self._transact(lambda operations: operations.start_tick(tick, now))

    async def list_skipped_ticks(self, workflow: str | None, limit: int) -> list[SkippedTickRecord]:
        """See ``Backend.list_skipped_ticks``: one SELECT."""
        query = self._queries["list_skipped_ticks"]
        parameters = {"workflow": workflow, "limit": max(1, limit)}

        def read(connection: sqlite3.Connection) -> list[SkippedTickRecord]:
            return [skipped_tick(row) for row in connection.execute(query, parameters)]

        return await self._thread.read(read)

    async def release(
        self, leases: Sequence[Lease], now: float, *, attempt_used: bool = False
    ) -> None:
        """See ``Backend.release``."""
        await self._transact(lambda operations: operations.release(leases, now, attempt_used))

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """See ``Backend.cancel``."""
        return await self._transact(
            lambda operations: operations.cancel(run_id, reason, now, trace_context)
        )

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
            return None if row is None else records.checked_run(row)

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

    async def get_gates(self, prefix: str) -> list[GateUsage]:
        """See ``Backend.get_gates``: one read."""
        return await self._thread.snapshot(
            lambda connection: reads.get_gates(connection, self._queries, prefix)
        )

    async def get_counters(self, since: float, now: float, period: int) -> list[PeriodCounters]:
        """See ``Backend.get_counters``: one read."""
        return await self._thread.snapshot(
            lambda connection: reads.get_counters(connection, self._queries, since, now, period)
        )

    async def purge(
        self,
        finished_before: float,
        limit: int,
        counters_before: float,
        hours_before: float = 0.0,
    ) -> int:
        """See ``Backend.purge``."""
        return await self._transact(
            lambda operations: operations.purge(
                finished_before, limit, counters_before, hours_before
            )
        )

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """See ``Backend.rerun``."""
        return await self._transact(lambda operations: operations.rerun(run_id, new_id, now))

    async def rerun_from_step(
        self, run_id: str, step: str, reason: str, now: float
    ) -> RerunFromStep:
        """See ``Backend.rerun_from_step``."""
        return await self._transact(
            lambda operations: operations.rerun_from_step(run_id, step, reason, now)
        )

    async def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        """See ``Backend.act_on_run``."""
        return await self._transact(lambda operations: operations.act_on_run(action, run_id, now))

    async def wait_for_work(
        self, queues: Sequence[str], timeout: float, *, workflows: Sequence[str] | None = None
    ) -> None:
        """See ``Backend.wait_for_work`` and ``waiting``. Work for other workflows of
        the queues wakes a waiter too, whatever its ``workflows``."""
        await self._waits.wait(queues, timeout, self._announce)

    async def _announce(self, address: str, queues: Sequence[str]) -> None:
        await self._transact(lambda operations: operations.announce_waiter(address, queues))

    async def close(self) -> None:
        """Stop listening and withdraw the announcements, close the connection and stop
        its thread; wake any waiter. Idempotent."""
        address = self._waits.address
        self._waits.close()
        if address is not None:
            with contextlib.suppress(BackendUnavailableError):
                await self._transact(lambda operations: operations.forget_waiters([address]))
        await self._thread.close()

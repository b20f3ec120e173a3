"""PostgresBackend: the Backend protocol over one schema of a PostgreSQL database.

Each state transition is one transaction on a pooled connection (see ``operations`` and
``database``), validated before its first write; reads are one statement, or one
snapshot. Idle workers are woken by a ``NOTIFY`` sent after each commit that makes
work runnable (see ``notifying`` and ``listening``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import EllipsisType
from typing import TypeVar

from psycopg import AsyncConnection
from psycopg.rows import DictRow

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
from workpool.backends.postgres.database import Database
from workpool.backends.postgres.listening import Listener
from workpool.backends.postgres.notifying import Notifier
from workpool.backends.postgres.operations import Operations
from workpool.backends.postgres.reads import Reads
from workpool.backends.postgres.recovery import PostgresRecovery
from workpool.backends.postgres.sql import load_queries
from workpool.backends.postgres.url import parse_postgres_url
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.ticks import skipped_tick

T = TypeVar("T")


class PostgresBackend(PostgresRecovery):
    """Runs stored in one schema of a PostgreSQL database; any number of processes and
    hosts may share it."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._queries = load_queries()
        self._listener = Listener(database.target, self._notify)
        self._notifier = Notifier(lambda queues: self._notify(database.target.channel, queues))
        self._endings: set[asyncio.Future[None]] = set()
        """``finish`` and ``release`` calls in flight, which a claim lets commit first."""

    @classmethod
    async def open(cls, url: str) -> PostgresBackend:
        """Open the schema a ``postgresql://`` URL names (``?schema=``, default
        ``workpool``), creating and migrating it if needed. Raises ConfigurationError for
        a bad URL, BackendUnavailableError if the server cannot be reached."""
        return cls(await Database.open(parse_postgres_url(url)))

    async def _transact(
        self, operation: Callable[[Operations], Awaitable[T]], *, urgent: bool = False
    ) -> T:
        """Run ``operation`` in one transaction with its counters, then wake the workers
        of the queues it made work runnable in (``urgent``: see ``Database.transaction``)."""
        woken: set[str] = set()

        async def work(connection: AsyncConnection[DictRow]) -> T:
            operations = Operations(connection, self._queries)
            result = await operation(operations)
            await operations.flush_counters()
            woken.clear()  # of an attempt a deadlock undid
            woken.update(operations.woken)
            return result

        result = await self._database.transaction(work, urgent=urgent)
        if woken:
            self._listener.woken_here(woken)
            await self._notifier.notify(woken)
        return result

    async def _notify(self, channel: str, payloads: list[str]) -> None:
        """NOTIFY ``channel`` once per payload, in a transaction of its own."""
        parameters = {"channel": channel, "queues": payloads}
        await self._database.autocommit(self._queries["notify"].encode(), parameters)

    async def _ending(self, operation: Callable[[Operations], Awaitable[T]]) -> T:
        """Run an operation that ends runs (frees gate places and queue capacity), noted
        in flight until it commits."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._endings.add(done)
        try:
            return await self._transact(operation)
        finally:
            self._endings.discard(done)
            done.set_result(None)

    async def _read(self, reading: Callable[[Reads], Awaitable[T]]) -> T:
        return await self._database.transaction(
            lambda connection: reading(Reads(connection, self._queries))
        )

    async def enqueue(
        self,
        runs: Sequence[NewRun],
        now: float,
        *,
        batch: NewBatch | None = None,
        added_by: str | None = None,
    ) -> list[Enqueued]:
        """See ``Backend.enqueue``."""
        return await self._transact(lambda ops: ops.enqueue(runs, now, batch, added_by))

    async def get_batch(self, batch_id: str) -> BatchRecord | None:
        """See ``Backend.get_batch``: one SELECT."""
        row = await self._read(lambda reads: reads.one("get_batch", id=batch_id))
        return None if row is None else records.batch_record(row)

    async def close_batch(self, batch_id: str, now: float) -> BatchRecord | None:
        """See ``Backend.close_batch``."""
        return await self._transact(lambda ops: ops.close_batch(batch_id, now))

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        """See ``Backend.cancel_batch``."""
        return await self._transact(lambda ops: ops.cancel_batch(batch_id, reason, limit, now))

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
        """See ``Backend.claim``. Waits first for the finishes and releases this backend
        began before it: on one connection, as on SQLite and Redis, they would commit
        first, and a claim that overtook them would not see the gate places and queue
        capacity they free (it would start a lower-priority run meanwhile)."""
        if self._endings:
            await asyncio.wait(list(self._endings))
        self._listener.claim_started()
        result = await self._transact(
            lambda ops: ops.claim(
                queues, worker_id, limit, lease_seconds, max_lease_losses, now, workflows, alone
            )
        )
        self._listener.claim_ended(bool(result.runs))
        return result

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        *,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        """See ``Backend.renew``: one UPDATE, urgent (a late renewal loses leases)."""
        return await self._transact(
            lambda ops: ops.renew(leases, lease_seconds, now, progress), urgent=True
        )

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """See ``Backend.finish``; all entries in one transaction."""
        return await self._ending(lambda ops: ops.finish(finishes, now))

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None = None
    ) -> StepRecord | None:
        """See ``Backend.save_step``."""
        return await self._transact(lambda ops: ops.save_step(lease, step, now, child))

    async def take_event(
        self, lease: Lease, step: StepRecord, key: str, now: float
    ) -> StepRecord | None:
        """See ``Backend.take_event``."""
        return await self._transact(lambda ops: ops.take_event(lease, step, key, now))

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
            lambda ops: ops.send_event(run_id, key, payload, now, event_id, trace_context)
        )

    async def set_event(self, lease: Lease, key: str, value: str) -> bool:
        """See ``Backend.set_event``."""
        return await self._transact(lambda ops: ops.set_event(lease, key, value))

    async def get_event(self, run_id: str, key: str) -> EventValue | None:
        """See ``Backend.get_event``: one SELECT."""
        row = await self._read(lambda reads: reads.one("get_published", id=run_id, key=key))
        if row is None:
            return None
        value = row["value"]
        return EventValue(str(row["status"]), None if value is None else str(value))

    async def list_published(self, run_id: str) -> dict[str, str]:
        """See ``Backend.list_published``: one SELECT (the primary key's order)."""
        rows = await self._read(lambda reads: reads.all("list_published", id=run_id))
        return {str(row["key"]): str(row["value"]) for row in rows}

    async def get_steps(self, run_id: str) -> list[StepRecord]:
        """See ``Backend.get_steps``: one SELECT."""
        rows = await self._read(lambda reads: reads.all("get_steps", run_id=run_id))
        return [records.step_record(row) for row in rows]

    async def get_children(self, run_id: str) -> list[str]:
        """See ``Backend.get_children``: one SELECT."""
        rows = await self._read(lambda reads: reads.all("get_children", id=run_id))
        return [str(row["id"]) for row in rows]

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
            lambda ops: ops.set_queue(queue, max_parallelism, paused, only_if_new)
        )

    async def get_queue(self, queue: str) -> QueueSettings:
        """See ``Backend.get_queue``."""
        return await self._transact(lambda ops: ops.get_queue(queue))

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """See ``Backend.sync_registry``."""
        return await self._transact(lambda ops: ops.sync_registry(app, workflows, now, grace))

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """See ``Backend.restore_registry``."""
        return await self._transact(lambda ops: ops.restore_registry(app, workflows, now))

    async def list_workflows(self) -> list[WorkflowInfo]:
        """See ``Backend.list_workflows``: one SELECT."""
        rows = await self._read(lambda reads: reads.all("list_workflows"))
        return [records.workflow_info(row) for row in rows]

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """See ``Backend.heartbeat``."""
        return await self._transact(lambda ops: ops.heartbeat(worker, now))

    async def remove_worker(self, worker_id: str) -> None:
        """See ``Backend.remove_worker``."""
        await self._transact(lambda ops: ops.remove_worker(worker_id))

    async def list_workers(self, now: float) -> list[WorkerRecord]:
        """See ``Backend.list_workers``: one SELECT."""
        rows = await self._read(lambda reads: reads.all("live_workers", now=now))
        return [records.worker_record(row) for row in rows]

    async def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        """See ``Backend.fail_unserved``."""
        return await self._transact(
            lambda ops: ops.fail_unserved(queue, workflow, available_before, limit, error, now)
        )

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """See ``Backend.acquire_lease``: one upsert."""
        return await self._transact(lambda ops: ops.acquire_lease(name, holder, seconds, now))

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """See ``Backend.start_tick``."""
        return await self._transact(lambda ops: ops.start_tick(tick, now))

    async def list_skipped_ticks(self, workflow: str | None, limit: int) -> list[SkippedTickRecord]:
        """See ``Backend.list_skipped_ticks``: one SELECT."""
        rows = await self._read(
            lambda reads: reads.all("list_skipped_ticks", workflow=workflow, limit=max(1, limit))
        )
        return [skipped_tick(row) for row in rows]

    async def release(
        self, leases: Sequence[Lease], now: float, *, attempt_used: bool = False
    ) -> None:
        """See ``Backend.release``."""
        await self._ending(lambda ops: ops.release(leases, now, attempt_used))

    async def cancel(
        self, run_id: str, reason: str | None, now: float, trace_context: str | None = None
    ) -> CancelResult:
        """See ``Backend.cancel``."""
        return await self._transact(lambda ops: ops.cancel(run_id, reason, now, trace_context))

    async def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """See ``Backend.cancel_many``."""
        return await self._transact(
            lambda ops: ops.cancel_many(before, workflow, reason, limit, now)
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """See ``Backend.get_run``: one SELECT."""
        row = await self._read(lambda reads: reads.one("get_run", id=run_id))
        return None if row is None else records.checked_run(row)

    async def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        queue: str | None,
        limit: int,
        cursor: str | None,
    ) -> RunPage:
        """See ``Backend.list_runs``: index ranges read in one snapshot."""
        return await self._read(
            lambda reads: reads.list_runs(status, workflow, queue, limit, cursor)
        )

    async def get_stats(self, since: float, now: float) -> StatsSnapshot:
        """See ``Backend.get_stats``: reads in one snapshot."""
        return await self._read(lambda reads: reads.get_stats(since, now))

    async def get_gates(self, prefix: str) -> list[GateUsage]:
        """See ``Backend.get_gates``: one read."""
        return await self._read(lambda reads: reads.get_gates(prefix))

    async def get_counters(self, since: float, now: float, period: int) -> list[PeriodCounters]:
        """See ``Backend.get_counters``: one read."""
        return await self._read(lambda reads: reads.get_counters(since, now, period))

    async def purge(
        self,
        finished_before: float,
        limit: int,
        counters_before: float,
        hours_before: float = 0.0,
    ) -> int:
        """See ``Backend.purge``."""
        return await self._transact(
            lambda ops: ops.purge(finished_before, limit, counters_before, hours_before)
        )

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """See ``Backend.rerun``."""
        return await self._transact(lambda ops: ops.rerun(run_id, new_id, now))

    async def rerun_from_step(
        self, run_id: str, step: str, reason: str, now: float
    ) -> RerunFromStep:
        """See ``Backend.rerun_from_step``."""
        return await self._transact(lambda ops: ops.rerun_from_step(run_id, step, reason, now))

    async def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        """See ``Backend.act_on_run``."""
        return await self._transact(lambda ops: ops.act_on_run(action, run_id, now))

    async def wait_for_work(
        self, queues: Sequence[str], timeout: float, *, workflows: Sequence[str] | None = None
    ) -> None:
        """See ``Backend.wait_for_work`` and ``listening``. Work for other workflows of
        the queues wakes a waiter too, whatever its ``workflows``."""
        await self._listener.wait(queues, timeout)

    async def close(self) -> None:
        """Stop listening, end every wait and close the pool's connections. Idempotent."""
        await self._notifier.close()
        await self._listener.close()
        await self._database.close()

"""The body of every backend operation, run inside one transaction on the connection's thread.

An ``Operations`` object lives for one transaction. Besides each operation's result it
collects ``woken``: the queues that received runnable work (new runs, hook runs), so
the backend can wake its own ``wait_for_work`` callers after the commit.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from workpool.backends.base import (
    TERMINAL_STATES,
    CancelResult,
    ClaimedRun,
    ClaimResult,
    Enqueued,
    Finish,
    Lease,
    NewRun,
    RenewResult,
)
from workpool.backends.sqlite import records

PROMOTE_BATCH = 1000
"""Most scheduled runs one claim promotes per queue."""
REAP_BATCH = 1000
"""Most expired leases one claim reaps per queue."""


class Operations:
    """Every state transition, as statements on one connection inside one transaction."""

    def __init__(self, connection: sqlite3.Connection, queries: Mapping[str, str]) -> None:
        self._connection = connection
        self._queries = queries
        self.woken: set[str] = set()

    def _execute(self, name: str, **parameters: Any) -> sqlite3.Cursor:
        return self._connection.execute(self._queries[name], parameters)

    # enqueue ------------------------------------------------------------------------

    def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store runs, honouring idempotency keys and existing ids."""
        return [self._enqueue_one(run, now) for run in runs]

    def _enqueue_one(self, run: NewRun, now: float) -> Enqueued:
        key = run.idempotency_key
        if key is not None:
            held = self._execute("find_idempotency_key", workflow=run.workflow, key=key, now=now)
            row = held.fetchone()
            if row is not None:
                return Enqueued(run_id=records.text(row, "run_id"), created=False)
        status = "queued" if run.available_at <= now else "scheduled"
        inserted = self._execute(
            "insert_run",
            id=run.id,
            workflow=run.workflow,
            queue=run.queue,
            status=status,
            input=run.input,
            retry=run.retry,
            hooks=records.encode_hooks(run.hooks),
            now=now,
            available_at=run.available_at,
            idempotency_key=key,
        )
        if inserted.rowcount == 0:
            return Enqueued(run_id=run.id, created=False)
        if key is not None:
            expires_at = now + run.idempotency_ttl
            self._execute(
                "remember_idempotency_key",
                workflow=run.workflow,
                key=key,
                run_id=run.id,
                expires_at=expires_at,
            )
        self.woken.add(run.queue)
        return Enqueued(run_id=run.id, created=True)

    # claim --------------------------------------------------------------------------

    def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
    ) -> ClaimResult:
        """Promote due runs, reap expired leases, then lease up to ``limit`` queued runs."""
        unique = list(dict.fromkeys(queues))
        for queue in unique:
            self._execute("promote_due", queue=queue, now=now, batch=PROMOTE_BATCH)
        for queue in unique:
            self._reap(queue, max_lease_losses, now)
        claimed: list[ClaimedRun] = []
        for queue in unique:
            if len(claimed) >= limit:
                break
            claimed += self._claim_queue(queue, worker_id, limit - len(claimed), lease_seconds, now)
        row = self._execute("next_wake_at", queues=json.dumps(unique)).fetchone()
        wake_at = None if row is None or row["wake_at"] is None else float(row["wake_at"])
        return ClaimResult(runs=claimed, next_wake_at=wake_at)

    def _reap(self, queue: str, max_lease_losses: int, now: float) -> None:
        expired = self._execute("expired_leases", queue=queue, now=now, batch=REAP_BATCH)
        for row in expired.fetchall():
            run_id = records.text(row, "id")
            losses = records.integer(row, "lease_losses") + 1
            if records.flag(row, "cancel_requested"):
                self._end(run_id, "canceled", now, lease_loss=1)
            elif losses >= max_lease_losses:
                self._end(run_id, "failed", now, error=worker_lost_error(losses), lease_loss=1)
            else:
                self._execute("requeue_run", id=run_id, now=now, lease_loss=1)

    def _claim_queue(
        self, queue: str, worker_id: str, limit: int, lease_seconds: float, now: float
    ) -> list[ClaimedRun]:
        rows = self._execute(
            "claim_queued",
            queue=queue,
            worker_id=worker_id,
            limit=limit,
            now=now,
            expires_at=now + lease_seconds,
        ).fetchall()
        rows.sort(key=lambda row: (records.number(row, "available_at"), row["rowid"]))
        return [records.claimed_run(row) for row in rows]

    # renew, finish, release -----------------------------------------------------------

    def renew(self, leases: Sequence[Lease], lease_seconds: float, now: float) -> RenewResult:
        """Extend held leases; report the others lost and the held ones cancel-requested."""
        pairs = json.dumps([[lease.run_id, lease.token] for lease in leases])
        rows = self._execute("renew_leases", leases=pairs, expires_at=now + lease_seconds)
        renewed = {
            (row["id"], row["lease_token"]): records.flag(row, "cancel_requested") for row in rows
        }
        lost = {lease.run_id for lease in leases if (lease.run_id, lease.token) not in renewed}
        canceled = {run_id for (run_id, _), requested in renewed.items() if requested}
        return RenewResult(lost=frozenset(lost), cancel_requested=frozenset(canceled))

    def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """Apply each entry whose lease is held; False for the others."""
        return [self._finish_one(entry, now) for entry in finishes]

    def _finish_one(self, entry: Finish, now: float) -> bool:
        held = self._held(entry.lease)
        if held is None:
            return False
        run_id = entry.lease.run_id
        if entry.status == "succeeded":
            self._end(run_id, "succeeded", now, output=entry.output)
        elif records.flag(held, "cancel_requested"):
            self._end(run_id, "canceled", now, error=entry.error)
        elif entry.status == "retry":
            retry_at = now if entry.retry_at is None else entry.retry_at
            self._execute("retry_run", id=run_id, retry_at=retry_at, error=entry.error, now=now)
        else:
            error = entry.error if entry.status == "failed" else None
            self._end(run_id, entry.status, now, error=error)
        return True

    def release(self, leases: Sequence[Lease], now: float) -> None:
        """Queue held runs again now (or end them canceled if cancel was requested)."""
        for lease in leases:
            held = self._held(lease)
            if held is None:
                continue
            if records.flag(held, "cancel_requested"):
                self._end(lease.run_id, "canceled", now)
            else:
                self._execute("requeue_run", id=lease.run_id, now=now, lease_loss=0)

    def _held(self, lease: Lease) -> sqlite3.Row | None:
        found = self._execute("held_lease", id=lease.run_id, token=lease.token).fetchone()
        return found if isinstance(found, sqlite3.Row) else None

    # cancel -------------------------------------------------------------------------

    def cancel(self, run_id: str, reason: str | None, now: float) -> CancelResult:
        """Cancel one run: end it if not started, flag it if running."""
        row = self._execute("run_status", id=run_id).fetchone()
        if row is None:
            return "not_found"
        status = records.text(row, "status")
        if status in TERMINAL_STATES:
            return "finished"
        return self._cancel_active(run_id, status, reason, now)

    def _cancel_active(
        self, run_id: str, status: str, reason: str | None, now: float
    ) -> CancelResult:
        if status == "running":
            self._execute("request_cancel", id=run_id, reason=reason)
            return "requested"
        self._end(run_id, "canceled", now, cancel_reason=reason, cancel_requested=1)
        return "canceled"

    def cancel_many(
        self, before: float | None, workflow: str | None, reason: str | None, limit: int, now: float
    ) -> int:
        """Cancel up to ``limit`` active runs matching the filters, oldest first."""
        bound = math.inf if before is None else before
        if workflow is None:
            found = self._execute("cancelable_runs", before=bound, limit=limit)
        else:
            found = self._execute(
                "cancelable_runs_of_workflow", workflow=workflow, before=bound, limit=limit
            )
        rows = found.fetchall()
        for row in rows:
            self._cancel_active(records.text(row, "id"), records.text(row, "status"), reason, now)
        return len(rows)

    # terminal transitions and hooks ------------------------------------------------

    def _end(
        self,
        run_id: str,
        status: str,
        now: float,
        *,
        output: str | None = None,
        error: str | None = None,
        cancel_reason: str | None = None,
        cancel_requested: int = 0,
        lease_loss: int = 0,
    ) -> None:
        """Move a run to a terminal state and enqueue its hooks, once."""
        ended = self._execute(
            "end_run",
            id=run_id,
            status=status,
            now=now,
            output=output,
            error=error,
            cancel_reason=cancel_reason,
            cancel_requested=cancel_requested,
            lease_loss=lease_loss,
        ).fetchone()
        if ended is not None:
            self._fire_hooks(ended, now)

    def _fire_hooks(self, ended: sqlite3.Row, now: float) -> None:
        run_id = records.text(ended, "id")
        status = records.text(ended, "status")
        for index, hook in enumerate(records.decode_hooks(ended)):
            if hook.on_failure_only and status != "failed":
                continue
            inserted = self._execute(
                "insert_run",
                id=f"{run_id}-{index}",
                workflow=hook.workflow,
                queue=hook.queue,
                status="queued",
                input=records.hook_input(ended, hook.context),
                retry=hook.retry,
                hooks="[]",
                now=now,
                available_at=now,
                idempotency_key=None,
            )
            if inserted.rowcount:
                self.woken.add(hook.queue)


def worker_lost_error(losses: int) -> str:
    """The error JSON of a run failed because its lease expired too many times."""
    message = (
        f"the run's lease was lost {losses} times: the worker running it died or stalled "
        "each time, so it will not be retried"
    )
    return json.dumps({"type": "WorkerLostError", "message": message, "traceback": None})

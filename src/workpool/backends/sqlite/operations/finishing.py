"""The lease holder's writes: ``renew``, ``finish`` (end, retry or suspend an attempt)
and ``release``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from workpool.backends.base import Finish, Lease, RenewResult
from workpool.backends.checks import check_finishes
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.ending import Ending
from workpool.backends.sqlite.operations.transaction import EXECUTIONS, RETRIED, RUN_TIME, TIMED


class Finishing(Ending):
    """Renewing leases and ending attempts."""

    def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        """Extend held leases, storing their runs' ``progress``; report the others lost
        and the held ones cancel-requested (with their canceller's trace context)."""
        reported = progress or {}
        entries = json.dumps(
            [[lease.run_id, lease.token, reported.get(lease.run_id)] for lease in leases]
        )
        rows = self._execute("renew_leases", leases=entries, expires_at=now + lease_seconds)
        renewed: set[tuple[str, str]] = set()
        canceled: set[str] = set()
        canceled_by: dict[str, str] = {}
        for row in rows:
            run_id = records.text(row, "id")
            renewed.add((run_id, records.text(row, "lease_token")))
            if records.flag(row, "cancel_requested"):
                canceled.add(run_id)
                by = records.optional_text(row, "canceled_by")
                if by is not None:
                    canceled_by[run_id] = by
        lost = {lease.run_id for lease in leases if (lease.run_id, lease.token) not in renewed}
        return RenewResult(frozenset(lost), frozenset(canceled), canceled_by)

    def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """Apply each entry whose lease is held; False for the others (a run whose row
        is corrupt among them: its lease expires, and the claim that reaps it sets it
        aside)."""
        check_finishes(finishes, now)
        return [self._finish_one(entry, now) for entry in finishes]

    def _finish_one(self, entry: Finish, now: float) -> bool:
        held = self._held(entry.lease)
        if held is None:
            return False
        queue = records.text(held, "queue")
        self._left_running(queue)
        run_id = entry.lease.run_id
        if entry.progress is not None:
            self._execute("set_progress", id=run_id, progress=entry.progress)
        ran = now - records.number(held, "started_at")
        if entry.status != "suspend":
            tally = self._tally(queue, records.text(held, "workflow"), now)
            tally[EXECUTIONS] += 1
            tally[TIMED] += 1
            tally[RUN_TIME] += ran
            if entry.status == "retry" and not records.flag(held, "cancel_requested"):
                tally[RETRIED] += 1
        gated = held["gate"] is not None
        if entry.status == "succeeded":
            self._end(run_id, "succeeded", now, output=entry.output, ran=ran, gated=gated)
        elif records.flag(held, "cancel_requested"):
            self._end(run_id, "canceled", now, error=entry.error, ran=ran, gated=gated)
        elif entry.status == "retry":
            retry_at = now if entry.retry_at is None else entry.retry_at
            left = self._leave_gate(run_id, gated=gated)
            rows = self._execute(
                "retry_run", id=run_id, retry_at=retry_at, error=entry.error, now=now, ran=ran
            ).fetchall()
            self._refill(left)
            self._joined(rows, now)
        elif entry.status == "suspend":
            self._suspend(entry, records.text(held, "queue"), now, ran, gated)
        elif entry.status == "attention":
            left = self._leave_gate(run_id, gated=gated)
            self._execute("stop_run", id=run_id, error=entry.error, ran=ran)
            self._refill(left)
        else:
            error = entry.error if entry.status == "failed" else None
            self._end(run_id, entry.status, now, error=error, ran=ran, gated=gated)
        return True

    def _suspend(self, entry: Finish, queue: str, now: float, ran: float, gated: bool) -> None:
        """Suspend a held run, or queue it again at once if what it waits for is done."""
        due = entry.wake_at is not None and entry.wake_at <= now
        if not due and entry.waiting_on:
            ids = json.dumps(sorted(set(entry.waiting_on)))
            row = self._execute("unfinished_among", ids=ids).fetchone()
            due = records.integer(row, "unfinished") < len(set(entry.waiting_on))
        run_id = entry.lease.run_id
        events = json.dumps(list(entry.events)) if entry.events else None
        if not due and events is not None:
            due = self._execute("events_waiting", run_id=run_id, keys=events).fetchone() is not None
        left = self._leave_gate(run_id, gated=gated)
        if due:
            rows = self._execute("resume_now", id=run_id, now=now, ran=ran).fetchall()
            self.woken.add(queue)
            self._refill(left)
            self._joined(rows, now)
        else:
            self._execute("suspend_run", id=run_id, wake_at=entry.wake_at, events=events, ran=ran)
            self._refill(left)

    def release(self, leases: Sequence[Lease], now: float, attempt_used: bool) -> None:
        """Queue held runs again now (or end them canceled if cancel was requested); the
        next claim takes the same attempt again, unless ``attempt_used`` (a run whose
        row is corrupt keeps its lease, to be reaped and set aside)."""
        for lease in leases:
            held = self._held(lease)
            if held is None:
                continue
            self._left_running(records.text(held, "queue"))
            if records.flag(held, "cancel_requested"):
                self._end(lease.run_id, "canceled", now)
            else:
                self._requeue(lease.run_id, now, lease_loss=0, resume=not attempt_used)

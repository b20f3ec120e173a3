"""The lease holder's writes: ``renew``, ``finish`` (end, retry or suspend an attempt)
and ``release``. Each reads the held run ``FOR UPDATE`` before writing it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence

from workpool.backends.base import Finish, Lease, RenewResult
from workpool.backends.checks import check_finishes
from workpool.backends.postgres.operations.ending import Ending
from workpool.backends.postgres.operations.transaction import (
    EXECUTIONS,
    RETRIED,
    RUN_TIME,
    SUCCEEDED,
    TIMED,
    Row,
)
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.admission import gate_id, sound_gates


class Finishing(Ending):
    """Renewing leases and ending attempts."""

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        """Extend held leases in one statement, storing their runs' ``progress``; report
        the others lost and the held ones cancel-requested (with their canceller's trace
        context)."""
        reported = progress or {}
        ordered = sorted(leases, key=lambda lease: lease.run_id)
        rows = await self._all(
            "renew_leases",
            ids=[lease.run_id for lease in ordered],
            tokens=[lease.token for lease in ordered],
            reported=[reported.get(lease.run_id) for lease in ordered],
            expires_at=now + lease_seconds,
        )
        renewed = {(row["id"], row["lease_token"]): bool(row["cancel_requested"]) for row in rows}
        lost = {lease.run_id for lease in leases if (lease.run_id, lease.token) not in renewed}
        canceled = {run_id for (run_id, _), requested in renewed.items() if requested}
        canceled_by = {
            str(row["id"]): str(row["canceled_by"])
            for row in rows
            if row["cancel_requested"] and row["canceled_by"] is not None
        }
        return RenewResult(frozenset(lost), frozenset(canceled), canceled_by)

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        """Apply each entry whose lease is held; False for the others. One read of the
        runs first: the corrupt ones are left alone (a run whose row is corrupt is not
        finished: its lease expires, and the claim that reaps it sets it aside), and the
        gates their ends may admit at are locked, in one order for every transaction (a
        batch ending a hook's run, then a run whose hook is gated, locked them in the
        other order than a batch of the latter alone: deadlocks, each a second's wait).
        The successes with nothing else to do end in one statement (``_succeed_plain``);
        the other entries one by one."""
        check_finishes(finishes, now)
        checked = await self._checked_rows([entry.lease.run_id for entry in finishes])
        await self._lock_gates_of([row for _, row in checked.values()])
        corrupt = {run_id for run_id, (problem, _) in checked.items() if problem is not None}
        done = await self._succeed_plain(finishes, checked, now)
        return [
            entry.lease.run_id in done
            or (entry.lease.run_id not in corrupt and await self._finish_one(entry, now))
            for entry in finishes
        ]

    async def _succeed_plain(
        self, finishes: Sequence[Finish], checked: Mapping[str, tuple[str | None, Row]], now: float
    ) -> set[str]:
        """End as succeeded, in one UPDATE, the entries whose run (as read) has no gate,
        hooks, batch, parent or cancel request, and no progress to store; the UPDATE
        checks all that and the lease again as it locks each row. The ids it ended."""
        counts = Counter(entry.lease.run_id for entry in finishes)
        plain = sorted(
            (entry for entry in finishes if _plain(entry, checked, counts)),
            key=lambda entry: entry.lease.run_id,
        )
        if not plain:
            return set()
        rows = await self._all(
            "succeed_plain",
            ids=[entry.lease.run_id for entry in plain],
            tokens=[entry.lease.token for entry in plain],
            outputs=[entry.output for entry in plain],
            now=now,
        )
        for row in rows:
            queue, workflow = str(row["queue"]), str(row["workflow"])
            await self._left_running(queue)
            tally = self._tally(queue, workflow, now)
            tally[EXECUTIONS] += 1
            tally[TIMED] += 1
            tally[RUN_TIME] += float(row["ran"])
            tally[SUCCEEDED] += 1
        return {str(row["id"]) for row in rows}

    async def _lock_gates_of(self, rows: Sequence[Row]) -> None:
        """Lock the gates of the runs and of their gated hooks, in name order."""
        gates: set[str] = set()
        for row in rows:
            gates.update(gate for gate, _ in sound_gates(row))
            gates.update(
                gate_id(hook.workflow, None)
                for hook in records.decode_hooks(row)
                if hook.max_concurrency is not None
            )
        for gate in sorted(gates):
            await self._admitted(gate)

    async def _finish_one(self, entry: Finish, now: float) -> bool:
        held = await self._held(entry.lease)
        if held is None:
            return False
        queue = str(held["queue"])
        await self._left_running(queue)
        run_id = entry.lease.run_id
        if entry.progress is not None:
            await self._run("set_progress", id=run_id, progress=entry.progress)
        ran = now - float(held["started_at"])
        requested = bool(held["cancel_requested"])
        if entry.status != "suspend":
            tally = self._tally(queue, str(held["workflow"]), now)
            tally[EXECUTIONS] += 1
            tally[TIMED] += 1
            tally[RUN_TIME] += ran
            if entry.status == "retry" and not requested:
                tally[RETRIED] += 1
        gated = held["gate"] is not None
        if entry.status == "succeeded":
            await self._end(run_id, "succeeded", now, output=entry.output, ran=ran, gated=gated)
        elif requested:
            await self._end(run_id, "canceled", now, error=entry.error, ran=ran, gated=gated)
        elif entry.status == "retry":
            await self._retry(entry, held, now, ran)
        elif entry.status == "suspend":
            await self._suspend(entry, queue, now, ran, gated)
        elif entry.status == "attention":
            left = await self._leave_gate(run_id, gated=gated)
            await self._run("stop_run", id=run_id, error=entry.error, ran=ran)
            await self._refill(left)
        else:
            error = entry.error if entry.status == "failed" else None
            await self._end(run_id, entry.status, now, error=error, ran=ran, gated=gated)
        return True

    async def _retry(self, entry: Finish, held: Row, now: float, ran: float) -> None:
        run_id = entry.lease.run_id
        retry_at = now if entry.retry_at is None else entry.retry_at
        left = await self._leave_gate(run_id, gated=held["gate"] is not None)
        rows = await self._all(
            "retry_run", id=run_id, retry_at=retry_at, error=entry.error, now=now, ran=ran
        )
        await self._refill(left)
        for row in rows:
            self.woken.add(str(row["queue"]))
        await self._joined(rows, now)

    async def _suspend(
        self, entry: Finish, queue: str, now: float, ran: float, gated: bool
    ) -> None:
        """Suspend a held run, or queue it again at once if what it waits for is done."""
        due = entry.wake_at is not None and entry.wake_at <= now
        if not due and entry.waiting_on:
            ids = sorted(set(entry.waiting_on))
            row = await self._one("unfinished_among", ids=ids)
            due = (0 if row is None else int(row["unfinished"])) < len(ids)
        run_id = entry.lease.run_id
        events = json.dumps(list(entry.events)) if entry.events else None
        if not due and entry.events:
            waiting = await self._one("events_waiting", run_id=run_id, keys=list(entry.events))
            due = waiting is not None
        left = await self._leave_gate(run_id, gated=gated)
        if due:
            rows = await self._all("resume_now", id=run_id, now=now, ran=ran)
            self.woken.add(queue)
            await self._refill(left)
            await self._joined(rows, now)
        else:
            await self._run("suspend_run", id=run_id, wake_at=entry.wake_at, events=events, ran=ran)
            await self._refill(left)

    async def release(self, leases: Sequence[Lease], now: float, attempt_used: bool) -> None:
        """Queue held runs again now (or end them canceled if cancel was requested); the
        next claim takes the same attempt again, unless ``attempt_used`` (a run whose
        row is corrupt keeps its lease, to be reaped and set aside)."""
        corrupt = await self._corrupt_among([lease.run_id for lease in leases])
        for lease in leases:
            held = None if lease.run_id in corrupt else await self._held(lease)
            if held is None:
                continue
            await self._left_running(str(held["queue"]))
            if held["cancel_requested"]:
                await self._end(lease.run_id, "canceled", now)
            else:
                await self._requeue(lease.run_id, now, lease_loss=0, resume=not attempt_used)


def _plain(
    entry: Finish, checked: Mapping[str, tuple[str | None, Row]], counts: Counter[str]
) -> bool:
    """Whether the entry is a success with nothing to do but end its run (as read)."""
    if entry.status != "succeeded" or entry.progress is not None:
        return False
    if counts[entry.lease.run_id] != 1 or entry.lease.run_id not in checked:
        return False
    problem, row = checked[entry.lease.run_id]
    return (
        problem is None
        and row["status"] == "running"
        and not row["cancel_requested"]
        and row["gate"] is None
        and row["hooks"] == "[]"
        and row["batch_id"] is None
        and row["parent_run_id"] is None
    )

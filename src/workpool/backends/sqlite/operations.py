"""The body of every backend operation, run inside one transaction on the connection's thread.

An ``Operations`` object lives for one transaction. Besides each operation's result it
collects ``woken``: the queues that received runnable work (new runs, hook runs), so
the backend can wake its own ``wait_for_work`` callers after the commit.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import EllipsisType
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
    QueueSettings,
    RenewResult,
    Rerun,
    StepRecord,
    StepStatus,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.checks import check_finishes, check_new_runs, check_step
from workpool.backends.sqlite import records

COUNTERS = ("executions", "timed", "run_time", "succeeded", "failed", "canceled", "retried")
"""The columns of the counters table (see ``PairCounters``), in tally order."""
EXECUTIONS, TIMED, RUN_TIME, _, _, _, RETRIED = range(len(COUNTERS))
ACTIVE_ORDER = ("scheduled", "queued", "running", "suspended")
PROMOTE_BATCH = 1000
"""Most scheduled runs one claim promotes per queue."""
REAP_BATCH = 1000
"""Most expired leases one claim reaps per queue."""
RATE_ROUNDING = 1e-6
"""Seconds: a reserved start this close to now is now (float error in TAT - tolerance)."""


class Operations:
    """Every state transition, as statements on one connection inside one transaction."""

    def __init__(self, connection: sqlite3.Connection, queries: Mapping[str, str]) -> None:
        self._connection = connection
        self._queries = queries
        self.woken: set[str] = set()
        self._counts: dict[tuple[int, str, str], list[float]] = {}
        self._queue_settings: dict[str, QueueSettings] = {}

    def _execute(self, query: str, /, **parameters: Any) -> sqlite3.Cursor:
        return self._connection.execute(self._queries[query], parameters)

    # enqueue ------------------------------------------------------------------------

    def enqueue(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        """Store runs, honouring idempotency keys and existing ids."""
        check_new_runs(runs, now)
        return [self._enqueue_one(run, now) for run in runs]

    def _enqueue_one(
        self,
        run: NewRun,
        now: float,
        parent_run_id: str | None = None,
        parent_step: str | None = None,
    ) -> Enqueued:
        key = run.idempotency_key
        if key is not None:
            held = self._execute("find_idempotency_key", workflow=run.workflow, key=key, now=now)
            row = held.fetchone()
            if row is not None:
                return Enqueued(run_id=records.text(row, "run_id"), created=False)
        status = "queued" if run.available_at <= now else "scheduled"
        gate = None
        if run.max_concurrency is not None:
            gate = gate_id(run.workflow, run.concurrency_key)
            if run.skip_if_busy and self._admitted(gate) >= run.max_concurrency:
                return Enqueued(run_id=run.id, created=False, skipped=True)
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
            parent_run_id=parent_run_id,
            parent_step=parent_step,
            gate=gate,
            gate_limit=run.max_concurrency,
            rate_limits=records.encode_rate_limits(run.rate_limits),
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
        if status == "queued":
            self._became_queued(run, gate, now)
        else:
            self.woken.add(run.queue)  # its workers may need to wake up sooner
        return Enqueued(run_id=run.id, created=True)

    def _became_queued(self, run: NewRun, gate: str | None, now: float) -> None:
        """A new run stored queued: reserve its start time, then its gate, then wake."""
        limits = records.encode_rate_limits(run.rate_limits)
        if limits is not None and self._reserve_start(run.id, limits, now) > now:
            return  # deferred to its start time: scheduled
        if gate is None:
            self.woken.add(run.queue)
        else:
            self._fill(gate, run.max_concurrency)

    # claim --------------------------------------------------------------------------

    def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        """Promote due runs, reap expired leases, then lease up to ``limit`` queued runs
        of ``workflows`` (None: of every workflow), or one run to isolate if ``alone``."""
        unique = list(dict.fromkeys(queues))
        for queue in unique:
            for promotion in ("promote_due", "promote_timers"):
                promoted = self._execute(
                    promotion, queue=queue, now=now, batch=PROMOTE_BATCH
                ).fetchall()
                self._reserve_starts(promoted, now)
                for gate, gate_limit in {(row["gate"], row["gate_limit"]) for row in promoted}:
                    self._fill(gate, gate_limit)
        for queue in unique:
            self._reap(queue, max_lease_losses, now)
        lease = (worker_id, now, now + lease_seconds)
        served = {queue: self._served(queue, workflows) for queue in unique}
        claimed = self._claim_isolated(served, lease) if alone and limit > 0 else []
        isolated_since: float | None = None
        for queue in unique if not claimed else ():
            row = self._execute(
                "oldest_isolated", queue=queue, workflows=json.dumps(served[queue])
            ).fetchone()
            if row is not None and row["since"] is not None:
                since = float(row["since"])
                isolated_since = since if isolated_since is None else min(isolated_since, since)
            room = self._room(queue, limit - len(claimed))
            if room > 0:
                ids = self._oldest_claimable(queue, served[queue], room, isolate=0)
                claimed += self._lease(ids, lease)
        row = self._execute("next_wake_at", queues=json.dumps(unique)).fetchone()
        wake_at = None if row is None or row["wake_at"] is None else float(row["wake_at"])
        return ClaimResult(runs=claimed, next_wake_at=wake_at, isolated_since=isolated_since)

    def _served(self, queue: str, workflows: Sequence[str] | None) -> list[str]:
        """The workflows whose runs of ``queue`` the claim may take."""
        if workflows is not None:
            return list(dict.fromkeys(workflows))
        return [str(row["workflow"]) for row in self._execute("queue_workflows", queue=queue)]

    def _oldest_claimable(
        self, queue: str, workflows: Sequence[str], limit: int, *, isolate: int
    ) -> list[str]:
        """Up to ``limit`` claimable run ids of the workflows in ``queue``, oldest first:
        one index seek of ``limit`` rows per workflow, merged."""
        ranges = [
            [
                (float(row["available_at"]), str(row["id"]))
                for row in self._execute(
                    "claimable_in_pair",
                    queue=queue,
                    workflow=workflow,
                    isolate=isolate,
                    limit=limit,
                )
            ]
            for workflow in workflows
        ]
        return [run_id for _, run_id in itertools.islice(heapq.merge(*ranges), limit)]

    def _claim_isolated(
        self, served: Mapping[str, list[str]], lease: tuple[str, float, float]
    ) -> list[ClaimedRun]:
        """The oldest run to isolate of the first queue that has one and room, leased."""
        for queue, workflows in served.items():
            ids = self._oldest_claimable(queue, workflows, 1, isolate=1)
            if ids and self._room(queue, 1) > 0:
                return self._lease(ids, lease)
        return []

    def _room(self, queue: str, wanted: int) -> int:
        """How many of ``wanted`` runs of ``queue`` may start now, its settings allowing."""
        settings = self.get_queue(queue)
        if settings.paused:
            return 0
        if settings.max_parallelism is None:
            return wanted
        row = self._execute("running_in_queue", queue=queue).fetchone()
        return min(wanted, settings.max_parallelism - records.integer(row, "running"))

    def _reap(self, queue: str, max_lease_losses: int, now: float) -> None:
        expired = self._execute("expired_leases", queue=queue, now=now, batch=REAP_BATCH)
        for row in expired.fetchall():
            run_id = records.text(row, "id")
            losses = records.integer(row, "lease_losses") + 1
            tally = self._tally(queue, records.text(row, "workflow"), now)
            tally[EXECUTIONS] += 1
            if not records.flag(row, "cancel_requested") and losses < max_lease_losses:
                tally[RETRIED] += 1
            if records.flag(row, "cancel_requested"):
                self._end(run_id, "canceled", now, lease_loss=1)
            elif losses >= max_lease_losses:
                self._end(run_id, "failed", now, error=worker_lost_error(losses), lease_loss=1)
            else:
                self._requeue(run_id, now, lease_loss=1)

    def _lease(self, ids: Sequence[str], lease: tuple[str, float, float]) -> list[ClaimedRun]:
        """Make the queued runs ``ids`` running under new leases, in the order given."""
        if not ids:
            return []
        worker_id, now, expires_at = lease
        rows = self._execute(
            "claim_queued", ids=json.dumps(ids), worker_id=worker_id, now=now, expires_at=expires_at
        ).fetchall()
        order = {run_id: position for position, run_id in enumerate(ids)}
        rows.sort(key=lambda row: order[row["id"]])
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
        check_finishes(finishes, now)
        return [self._finish_one(entry, now) for entry in finishes]

    def _finish_one(self, entry: Finish, now: float) -> bool:
        held = self._held(entry.lease)
        if held is None:
            return False
        queue = records.text(held, "queue")
        self._left_running(queue)
        run_id = entry.lease.run_id
        ran = now - records.number(held, "started_at")
        if entry.status != "suspend":
            tally = self._tally(queue, records.text(held, "workflow"), now)
            tally[EXECUTIONS] += 1
            tally[TIMED] += 1
            tally[RUN_TIME] += ran
            if entry.status == "retry" and not records.flag(held, "cancel_requested"):
                tally[RETRIED] += 1
        if entry.status == "succeeded":
            self._end(run_id, "succeeded", now, output=entry.output, ran=ran)
        elif records.flag(held, "cancel_requested"):
            self._end(run_id, "canceled", now, error=entry.error, ran=ran)
        elif entry.status == "retry":
            retry_at = now if entry.retry_at is None else entry.retry_at
            left = self._leave_gate(run_id)
            rows = self._execute(
                "retry_run", id=run_id, retry_at=retry_at, error=entry.error, now=now, ran=ran
            ).fetchall()
            self._fill(*left)
            self._joined(rows, now)
        elif entry.status == "suspend":
            self._suspend(entry, records.text(held, "queue"), now, ran)
        else:
            error = entry.error if entry.status == "failed" else None
            self._end(run_id, entry.status, now, error=error, ran=ran)
        return True

    def _suspend(self, entry: Finish, queue: str, now: float, ran: float) -> None:
        """Suspend a held run, or queue it again at once if what it waits for is done."""
        due = entry.wake_at is not None and entry.wake_at <= now
        if not due and entry.waiting_on:
            ids = json.dumps(sorted(set(entry.waiting_on)))
            row = self._execute("unfinished_among", ids=ids).fetchone()
            due = records.integer(row, "unfinished") < len(set(entry.waiting_on))
        run_id = entry.lease.run_id
        left = self._leave_gate(run_id)
        if due:
            rows = self._execute("resume_now", id=run_id, now=now, ran=ran).fetchall()
            self.woken.add(queue)
            self._fill(*left)
            self._joined(rows, now)
        else:
            self._execute("suspend_run", id=run_id, wake_at=entry.wake_at, ran=ran)
            self._fill(*left)

    def _requeue(self, run_id: str, now: float, *, lease_loss: int) -> None:
        left = self._leave_gate(run_id)
        rows = self._execute("requeue_run", id=run_id, now=now, lease_loss=lease_loss).fetchall()
        self._fill(*left)
        self._joined(rows, now)

    # concurrency gates --------------------------------------------------------------

    def _leave_gate(self, run_id: str) -> tuple[str | None, int | None]:
        """Give up the run's place at its gate, if it holds one; return (gate, limit)."""
        row = self._execute("leave_gate", id=run_id).fetchone()
        if row is None:
            return None, None
        gate = records.text(row, "gate")
        self._execute("count_admitted", gate=gate, delta=-1)
        return gate, records.integer(row, "gate_limit")

    # rate limits ----------------------------------------------------------------------

    def _reserve_starts(self, rows: Sequence[sqlite3.Row], now: float) -> None:
        """For runs that just became queued: use a reservation made earlier, or make
        one, deferring the run to its start time if that is later than ``now``."""
        for row in rows:
            if row["status"] != "queued" or row["rate_limits"] is None:
                continue
            if row["rate_reserved"]:
                self._execute("use_reservation", id=row["id"])
            else:
                self._reserve_start(row["id"], row["rate_limits"], now)

    def _reserve_start(self, run_id: str, limits: str, now: float) -> float:
        """Reserve the run's start time with each of its limiters (GCRA); a start later
        than ``now`` makes the run scheduled then. Returns the start time."""
        spacing: list[tuple[str, float, float, float]] = []
        for limiter, count, per in json.loads(limits):
            row = self._execute("limiter_tat", id=limiter).fetchone()
            tat = now if row is None else float(row["tat"])
            interval = float(per) / int(count)
            spacing.append((str(limiter), tat, interval, float(per) - interval))
        start = max([now, *(tat - tolerance for _, tat, _, tolerance in spacing)])
        if start - now < RATE_ROUNDING:
            start = now  # a burst start a rounding error after now is now
        for limiter, tat, interval, _ in spacing:
            self._execute("set_limiter_tat", id=limiter, tat=max(tat, start) + interval)
        if start > now:
            self._execute("defer_start", id=run_id, start=start)
        return start

    def _admitted(self, gate: str) -> int:
        row = self._execute("gate_admitted", gate=gate).fetchone()
        return 0 if row is None else records.integer(row, "admitted")

    def _joined(self, rows: Sequence[sqlite3.Row], now: float) -> None:
        """Runs that just became queued (RETURNING rows): reserve their start times,
        then admit at their gates."""
        self._reserve_starts(rows, now)
        for row in rows:
            if row["status"] == "queued" and row["gate"] is not None:
                self._fill(row["gate"], row["gate_limit"])

    def _fill(self, gate: str | None, limit: int | None) -> None:
        """Admit the gate's oldest waiting runs while it admits fewer than ``limit``."""
        if gate is None or limit is None:
            return
        room = limit - self._admitted(gate)
        if room <= 0:
            return
        admitted = self._execute("admit_waiting", gate=gate, room=room).fetchall()
        if admitted:
            self._execute("count_admitted", gate=gate, delta=len(admitted))
            self.woken.update(records.text(row, "queue") for row in admitted)

    # steps --------------------------------------------------------------------------

    def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None
    ) -> StepRecord | None:
        """Store a step of a held run, starting its child first if it has one."""
        check_step(lease.run_id, step, now, child)
        if self._held(lease) is None:
            return None
        if child is not None:
            step = self._start_child(lease.run_id, step, child, now)
        self._execute(
            "save_step",
            run_id=lease.run_id,
            name=step.name,
            kind=step.kind,
            status=step.status,
            attempts=step.attempts,
            output=step.output,
            error=step.error,
            child_run_id=step.child_run_id,
            wake_at=step.wake_at,
            started_at=step.started_at,
            finished_at=step.finished_at,
        )
        self._execute("mark_has_steps", id=lease.run_id)
        return step

    def _start_child(
        self, parent_id: str, step: StepRecord, child: NewRun, now: float
    ) -> StepRecord:
        awaited = step.kind == "workflow"
        stored = self._enqueue_one(
            child, now, parent_run_id=parent_id, parent_step=step.name if awaited else None
        )
        step = replace(step, child_run_id=stored.run_id)
        if not awaited:
            return replace(step, output=json.dumps(stored.run_id))
        if stored.created:
            return step
        row = self._execute("child_outcome", id=stored.run_id).fetchone()
        if row is None or records.text(row, "status") not in TERMINAL_STATES:
            return step
        status, output, error = child_outcome(row)
        return replace(step, status=status, output=output, error=error, finished_at=now)

    def release(self, leases: Sequence[Lease], now: float) -> None:
        """Queue held runs again now (or end them canceled if cancel was requested)."""
        for lease in leases:
            held = self._held(lease)
            if held is None:
                continue
            self._left_running(records.text(held, "queue"))
            if records.flag(held, "cancel_requested"):
                self._end(lease.run_id, "canceled", now)
            else:
                self._requeue(lease.run_id, now, lease_loss=0)

    def _held(self, lease: Lease) -> sqlite3.Row | None:
        found = self._execute("held_lease", id=lease.run_id, token=lease.token).fetchone()
        return found if isinstance(found, sqlite3.Row) else None

    # queue settings -----------------------------------------------------------------

    def get_queue(self, queue: str) -> QueueSettings:
        """The queue's settings, or the defaults; read once per queue per transaction
        (a finish batch asks for every run it ends)."""
        settings = self._queue_settings.get(queue)
        if settings is None:
            settings = _settings(queue, self._execute("get_queue", queue=queue).fetchone())
            self._queue_settings[queue] = settings
        return settings

    def set_queue(
        self,
        queue: str,
        max_parallelism: int | EllipsisType | None,
        paused: bool | None,
        only_if_new: bool,
    ) -> QueueSettings:
        """Change the queue's settings; wake its workers if more runs may start."""
        row = self._execute("get_queue", queue=queue).fetchone()
        before = _settings(queue, row)
        if only_if_new and row is not None:
            return before
        after = QueueSettings(
            queue,
            before.max_parallelism if max_parallelism is ... else max_parallelism,
            before.paused if paused is None else paused,
        )
        self._execute(
            "set_queue", queue=queue, max_parallelism=after.max_parallelism, paused=after.paused
        )
        self._queue_settings[queue] = after
        if _capacity(after) > _capacity(before):
            self.woken.add(queue)
        return after

    def _left_running(self, queue: str) -> None:
        """A run of ``queue`` stops running: a full queue's idle workers may start one."""
        if self.get_queue(queue).max_parallelism is not None:
            self.woken.add(queue)

    # registry -----------------------------------------------------------------------

    def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """Remove ``app``'s stale records, then store the given ones."""
        defined = {workflow.name for workflow in workflows}
        stale = self._execute("stale_workflows", app=app, cutoff=now - grace).fetchall()
        removed = [row["name"] for row in stale if row["name"] not in defined]
        for name in removed:
            self._execute("delete_workflow", name=name)
        for workflow in workflows:
            self._execute(
                "register_workflow",
                name=workflow.name,
                app=app,
                queue=workflow.queue,
                max_concurrency=workflow.max_concurrency,
                retry=workflow.retry,
                cron=workflow.cron,
                now=now,
            )
        return removed

    def heartbeat(self, worker: WorkerRecord, now: float) -> None:
        """Store the worker's record; delete the expired ones."""
        self._execute("delete_expired_workers", now=now)
        self._execute(
            "store_worker",
            id=worker.id,
            app=worker.app,
            queues=json.dumps(worker.queues),
            workflows=json.dumps(worker.workflows),
            started_at=worker.started_at,
            now=now,
            expires_at=worker.expires_at,
        )

    def remove_worker(self, worker_id: str) -> None:
        """Delete the worker's record."""
        self._execute("delete_worker", id=worker_id)

    def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        """Fail the oldest claimable runs of the pair available before the cutoff."""
        found = self._execute(
            "fail_unserved_runs",
            queue=queue,
            workflow=workflow,
            before=available_before,
            limit=limit,
        ).fetchall()
        for row in found:
            self._end(records.text(row, "id"), "failed", now, error=error)
        return len(found)

    def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """Take or extend the named lease if it is free, expired or already ``holder``'s."""
        taken = self._execute(
            "take_lease", name=name, holder=holder, expires_at=now + seconds, now=now
        )
        return taken.rowcount == 1

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
        """Cancel up to ``limit`` active runs matching the filters, smallest id (oldest)
        first: a walk of the pairs' active index ranges."""
        bound = math.inf if before is None else before
        ranges = []
        for pair in self._execute("pairs").fetchall():
            if workflow is not None and pair["workflow"] != workflow:
                continue
            for status in ACTIVE_ORDER:
                found = self._execute(
                    "cancelable_in_pair",
                    queue=pair["queue"],
                    workflow=pair["workflow"],
                    status=status,
                    before=bound,
                    limit=limit,
                )
                ranges.append([(str(row["id"]), str(row["status"])) for row in found])
        rows = list(itertools.islice(heapq.merge(*ranges), limit))
        for run_id, status in rows:
            self._cancel_active(run_id, status, reason, now)
        return len(rows)

    # counters, retention, re-runs ----------------------------------------------------

    def _tally(self, queue: str, workflow: str, now: float) -> list[float]:
        """The counters (in ``COUNTERS`` order) this transaction adds to the minute of
        ``now`` for (queue, workflow); ``flush_counters`` writes them."""
        key = (int(now // 60) * 60, queue, workflow)
        tally = self._counts.get(key)
        if tally is None:
            tally = self._counts[key] = [0.0] * len(COUNTERS)
        return tally

    def flush_counters(self) -> None:
        """Write the counters this transaction added to, one row per (minute, pair)."""
        for (minute, queue, workflow), tally in self._counts.items():
            self._execute(
                "add_counters",
                minute=minute,
                queue=queue,
                workflow=workflow,
                **dict(zip(COUNTERS, tally, strict=True)),
            )
        self._counts.clear()

    def purge(self, finished_before: float, limit: int, counters_before: float) -> int:
        """Delete up to ``limit`` runs finished before the cutoff (steps and keys
        cascade), and the counters of minutes before ``counters_before``."""
        found = self._execute("purgeable_runs", before=finished_before, limit=limit)
        ids = [records.text(row, "id") for row in found.fetchall()]
        if ids:
            self._execute("delete_runs", ids=json.dumps(ids))
        self._execute("delete_counters", before=counters_before)
        return len(ids)

    def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """Store a queued copy of a failed or canceled run, linked both ways."""
        row = self._execute("rerun_source", id=run_id).fetchone()
        if row is None:
            return Rerun("not_found")
        status = records.text(row, "status")
        if row["retried_as"] is not None:
            return Rerun("exists", records.text(row, "retried_as"))
        if status == "succeeded":
            return Rerun("succeeded")
        if status not in TERMINAL_STATES:
            return Rerun("not_finished")
        rows = self._execute("insert_rerun", id=run_id, new_id=new_id, now=now).fetchall()
        if not rows:
            raise ValueError(f"cannot re-run as {new_id!r}: a run with that id exists")
        self._execute("mark_retried_as", id=run_id, new_id=new_id)
        self._joined(rows, now)
        if row["gate"] is None:
            self.woken.add(records.text(row, "queue"))
        return Rerun("created", new_id)

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
        ran: float = 0.0,
    ) -> None:
        """Move a run to a terminal state and enqueue its hooks, once."""
        left = self._leave_gate(run_id)
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
            ran=ran,
        ).fetchone()
        if ended is None:
            return
        self._tally(records.text(ended, "queue"), records.text(ended, "workflow"), now)[
            COUNTERS.index(status)
        ] += 1
        self._fill(*left)
        self._fire_hooks(ended, now)
        parent_id, parent_step = ended["parent_run_id"], ended["parent_step"]
        if parent_id is not None and parent_step is not None:
            outcome, output, error = child_outcome(ended)
            self._execute(
                "record_child_outcome",
                parent=parent_id,
                step=parent_step,
                child=run_id,
                now=now,
                status=outcome,
                output=output,
                error=error,
            )
            woken = self._execute("wake_parent", parent=parent_id, now=now).fetchall()
            for row in woken:
                if row["gate"] is None:
                    self.woken.add(records.text(row, "queue"))
            self._joined(woken, now)
        if status == "canceled":
            reason = f"parent run {run_id} was canceled"
            for child in self._execute("awaited_children", id=run_id).fetchall():
                self._cancel_active(
                    records.text(child, "id"), records.text(child, "status"), reason, now
                )

    def _fire_hooks(self, ended: sqlite3.Row, now: float) -> None:
        run_id = records.text(ended, "id")
        status = records.text(ended, "status")
        for index, hook in enumerate(records.decode_hooks(ended)):
            if hook.on_failure_only and status != "failed":
                continue
            gate = None if hook.max_concurrency is None else gate_id(hook.workflow, None)
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
                parent_run_id=None,
                parent_step=None,
                gate=gate,
                gate_limit=hook.max_concurrency,
                rate_limits=None,
            )
            if inserted.rowcount:
                self.woken.add(hook.queue)
                self._fill(gate, hook.max_concurrency)


def child_outcome(row: sqlite3.Row) -> tuple[StepStatus, str | None, str | None]:
    """The status, output and error a parent's step takes from its ended child."""
    status = records.text(row, "status")
    if status == "succeeded":
        return "succeeded", records.optional_text(row, "output"), None
    if status == "failed":
        return "failed", None, records.optional_text(row, "error")
    reason = records.optional_text(row, "cancel_reason") or ""
    error = json.dumps({"type": "RunCanceledError", "message": reason, "traceback": None})
    return "canceled", None, error


def _settings(queue: str, row: sqlite3.Row | None) -> QueueSettings:
    """A ``get_queue`` row as QueueSettings (no row: the defaults)."""
    if row is None:
        return QueueSettings(queue)
    limit = row["max_parallelism"]
    return QueueSettings(queue, None if limit is None else int(limit), bool(row["paused"]))


def _capacity(settings: QueueSettings) -> float:
    if settings.paused:
        return 0
    return math.inf if settings.max_parallelism is None else settings.max_parallelism


def gate_id(workflow: str, key: str | None) -> str:
    """The gate of (workflow, key); the name's length keeps names with ':' apart."""
    return f"{len(workflow)}:{workflow}:{key if key is not None else ''}"


def worker_lost_error(losses: int) -> str:
    """The error JSON of a run failed because its lease expired too many times."""
    message = (
        f"the run's lease was lost {losses} times: the worker running it died or stalled "
        "each time, so it will not be retried"
    )
    return json.dumps({"type": "WorkerLostError", "message": message, "traceback": None})

"""Operations outside a run's execution: queue settings, the workflow registry, worker
records, named leases, failing unserved runs, retention, re-runs and canceling a batch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from types import EllipsisType

from workpool.backends import rerunning
from workpool.backends.base import (
    ACTS_ON,
    TERMINAL_STATES,
    QueueSettings,
    Rerun,
    RerunFromStep,
    RunAction,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.checks import check_now
from workpool.backends.postgres.operations.ending import Ending
from workpool.backends.postgres.operations.transaction import settings_from_row
from workpool.backends.selecting import error_type


class Admin(Ending):
    """The operators' and housekeepers' operations."""

    async def set_queue(
        self,
        queue: str,
        max_parallelism: int | EllipsisType | None,
        paused: bool | None,
        only_if_new: bool,
    ) -> QueueSettings:
        """Change the queue's settings; wake its workers if more runs may start."""
        row = await self._one("lock_queue", queue=queue)
        before = settings_from_row(queue, row)
        if only_if_new and row is not None:
            return before
        after = QueueSettings(
            queue,
            before.max_parallelism if max_parallelism is ... else max_parallelism,
            before.paused if paused is None else paused,
        )
        await self._run(
            "set_queue", queue=queue, max_parallelism=after.max_parallelism, paused=after.paused
        )
        self._queue_settings[queue] = after
        if _capacity(after) > _capacity(before):
            self.woken.add(queue)
        return after

    async def sync_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float, grace: float
    ) -> list[str]:
        """Remove ``app``'s stale records, then store the given ones (in name order, so
        concurrent syncs lock the records in one order)."""
        defined = {workflow.name for workflow in workflows}
        stale = await self._all("stale_workflows", app=app, cutoff=now - grace)
        removed = [str(row["name"]) for row in stale if row["name"] not in defined]
        for name in removed:
            await self._run("delete_workflow", name=name)
        for workflow in sorted(workflows, key=lambda info: info.name):
            await self._store_workflow("register_workflow", app, workflow, now)
        return removed

    async def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """Store the given records whose name has no record (in name order, as
        ``sync_registry`` locks them); return their names."""
        restored = [
            workflow.name
            for workflow in sorted(workflows, key=lambda info: info.name)
            if await self._store_workflow("restore_workflow", app, workflow, now) == 1
        ]
        return sorted(restored)

    async def _store_workflow(
        self, query: str, app: str, workflow: WorkflowInfo, now: float
    ) -> int:
        """Run ``query`` (register or restore) for one record; the rows it changed."""
        return await self._run(
            query,
            name=workflow.name,
            app=app,
            queue=workflow.queue,
            max_concurrency=workflow.max_concurrency,
            retry=workflow.retry,
            cron=workflow.cron,
            rate_limits=workflow.rate_limits,
            limits=workflow.limits,
            now=now,
        )

    async def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """Store the worker's record; delete the expired ones; name the worker's
        workflows that have no registry record."""
        await self._run("delete_expired_workers", now=now)
        await self._run(
            "store_worker",
            id=worker.id,
            app=worker.app,
            queues=json.dumps(worker.queues),
            workflows=json.dumps(worker.workflows),
            started_at=worker.started_at,
            now=now,
            expires_at=worker.expires_at,
        )
        missing = await self._all("unregistered_workflows", workflows=list(worker.workflows))
        return [str(row["name"]) for row in missing]

    async def remove_worker(self, worker_id: str) -> None:
        """Delete the worker's record."""
        await self._run("delete_worker", id=worker_id)

    async def fail_unserved(
        self, queue: str, workflow: str, available_before: float, limit: int, error: str, now: float
    ) -> int:
        """Fail the first claimable runs of the pair available before the cutoff."""
        found = await self._all(
            "fail_unserved_runs",
            queue=queue,
            workflow=workflow,
            before=available_before,
            limit=limit,
        )
        for row in found:
            await self._end(str(row["id"]), "failed", now, error=error)
        return len(found)

    async def acquire_lease(self, name: str, holder: str, seconds: float, now: float) -> bool:
        """Take or extend the named lease if it is free, expired or already ``holder``'s."""
        taken = await self._run(
            "take_lease", name=name, holder=holder, expires_at=now + seconds, now=now
        )
        return taken == 1

    async def purge(
        self, finished_before: float, limit: int, counters_before: float, hours_before: float
    ) -> int:
        """Delete up to ``limit`` runs finished before the cutoff (steps, events and keys
        cascade), completed batches, the counters of minutes before ``counters_before``
        and those of hours before ``hours_before``."""
        found = await self._all("purgeable_runs", before=finished_before, limit=limit)
        deleted = await self._delete_terminal([str(row["id"]) for row in found])
        await self._run("delete_completed_batches", before=finished_before, limit=limit)
        await self._run("delete_counters", before=int(counters_before // 1))
        await self._run("delete_hour_counters", before=int(hours_before // 1))
        return deleted

    async def cancel_batch(
        self, batch_id: str, reason: str | None, limit: int, now: float
    ) -> int | None:
        """Cancel up to ``limit`` unfinished runs of the batch not yet cancel-requested,
        smallest id first; None if there is no such batch."""
        if await self.get_batch_record(batch_id) is None:
            return None
        found = await self._all("cancelable_in_batch", batch_id=batch_id, limit=limit)
        for row in found:
            await self._cancel_active(str(row["id"]), str(row["status"]), reason, now)
        return len(found)

    async def rerun(self, run_id: str, new_id: str, now: float) -> Rerun:
        """Store a queued copy of a failed or canceled run, linked both ways."""
        row = await self._one("rerun_source", id=run_id)
        if row is None:
            return Rerun("not_found")
        status = str(row["status"])
        if row["retried_as"] is not None:
            return Rerun("exists", str(row["retried_as"]))
        if status == "succeeded":
            return Rerun("succeeded")
        if status not in TERMINAL_STATES:
            return Rerun("not_finished")
        rows = await self._all("insert_rerun", id=run_id, new_id=new_id, now=now)
        if not rows:
            raise ValueError(f"cannot re-run as {new_id!r}: a run with that id exists")
        await self._run("mark_retried_as", id=run_id, new_id=new_id)
        await self._joined(rows, now)
        if row["gate"] is None:
            self.woken.add(str(row["queue"]))
        return Rerun("created", new_id)

    async def rerun_from_step(
        self, run_id: str, step: str, reason: str, now: float
    ) -> RerunFromStep:
        """Forget the step and the later ones of a needs_attention, failed or canceled
        run; queue it (a finished one with a fresh attempt)."""
        check_now(now)
        row = await self._one("rerun_check", id=run_id)
        if row is None:
            return "not_found"
        refused = rerunning.refusal(row)
        if refused is not None:
            return refused
        saved = await self._one("get_step", run_id=run_id, name=step)
        if saved is None:
            return "no_step"
        status = str(row["status"])
        if status == "failed":
            group = error_type(row["error"])
            self._failure(str(row["workflow"]), group).removed.append(run_id)
        await self._run(
            "forget_steps_from",
            run_id=run_id,
            position=saved["position"],
            started_at=saved["started_at"],
        )
        note = rerunning.rerun_note(row["rerun_from"], step, reason, now)
        queued = await self._all(
            "rerun_stopped",
            id=run_id,
            now=now,
            rerun_from=note,
            fresh=status != "needs_attention",
        )
        await self._wake(queued, now)
        return "queued"

    async def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        """Pause, resume or run now one run if its status allows; return that status."""
        check_now(now)
        row = await self._one("run_status", id=run_id)
        if row is None:
            return None
        status = str(row["status"])
        if status not in ACTS_ON[action]:
            return status
        if action == "pause":
            left = await self._leave_gate(run_id)
            await self._run("pause_run", id=run_id)
            await self._refill(left)
            return status
        query = "resume_run" if action == "resume" else "run_now"
        woken = await self._all(query, id=run_id, now=now)
        await self._wake(woken, now)
        self.woken.update(str(row["queue"]) for row in woken)  # a new time to wake at
        return status


def _capacity(settings: QueueSettings) -> float:
    if settings.paused:
        return 0
    return math.inf if settings.max_parallelism is None else settings.max_parallelism

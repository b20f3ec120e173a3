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
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.ending import Ending
from workpool.backends.sqlite.operations.transaction import settings_from_row


class Admin(Ending):
    """The operators' and housekeepers' operations."""

    def set_queue(
        self,
        queue: str,
        max_parallelism: int | EllipsisType | None,
        paused: bool | None,
        only_if_new: bool,
    ) -> QueueSettings:
        """Change the queue's settings; wake its workers if more runs may start."""
        row = self._execute("get_queue", queue=queue).fetchone()
        before = settings_from_row(queue, row)
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
            self._store_workflow("register_workflow", app, workflow, now)
        return removed

    def restore_registry(
        self, app: str, workflows: Sequence[WorkflowInfo], now: float
    ) -> list[str]:
        """Store the given records whose name has no record; return their names."""
        restored = [
            workflow.name
            for workflow in workflows
            if self._store_workflow("restore_workflow", app, workflow, now) == 1
        ]
        return sorted(restored)

    def _store_workflow(self, query: str, app: str, workflow: WorkflowInfo, now: float) -> int:
        """Run ``query`` (register or restore) for one record; the rows it changed."""
        return self._execute(
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
        ).rowcount

    def heartbeat(self, worker: WorkerRecord, now: float) -> list[str]:
        """Store the worker's record; delete the expired ones; name the worker's
        workflows that have no registry record."""
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
        missing = self._execute("unregistered_workflows", workflows=json.dumps(worker.workflows))
        return [records.text(row, "name") for row in missing.fetchall()]

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

    def purge(
        self, finished_before: float, limit: int, counters_before: float, hours_before: float
    ) -> int:
        """Delete up to ``limit`` runs finished before the cutoff (steps and keys
        cascade), the counters of minutes before ``counters_before`` and those of hours
        before ``hours_before``."""
        found = self._execute("purgeable_runs", before=finished_before, limit=limit)
        ids = [records.text(row, "id") for row in found.fetchall()]
        self._delete_runs(ids)
        self._execute("delete_completed_batches", before=finished_before, limit=limit)
        self._execute("delete_counters", before=counters_before)
        self._execute("delete_hour_counters", before=hours_before)
        return len(ids)

    def cancel_batch(self, batch_id: str, reason: str | None, limit: int, now: float) -> int | None:
        """Cancel up to ``limit`` unfinished runs of the batch not yet cancel-requested,
        smallest id first; None if there is no such batch."""
        if self.get_batch_record(batch_id) is None:
            return None
        found = self._execute("cancelable_in_batch", batch_id=batch_id, limit=limit).fetchall()
        for row in found:
            self._cancel_active(records.text(row, "id"), records.text(row, "status"), reason, now)
        return len(found)

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

    def rerun_from_step(self, run_id: str, step: str, reason: str, now: float) -> RerunFromStep:
        """Forget the step and the later ones of a needs_attention, failed or canceled
        run; queue it (a finished one with a fresh attempt)."""
        check_now(now)
        row = self._execute("rerun_check", id=run_id).fetchone()
        if row is None:
            return "not_found"
        refused = rerunning.refusal(row)
        if refused is not None:
            return refused
        saved = self._execute("get_step", run_id=run_id, name=step).fetchone()
        if saved is None:
            return "no_step"
        status = records.text(row, "status")
        if status == "failed":
            self._uncount_failures([row])
        self._execute(
            "forget_steps_from",
            run_id=run_id,
            position=saved["position"],
            started_at=saved["started_at"],
        )
        note = rerunning.rerun_note(records.optional_text(row, "rerun_from"), step, reason, now)
        queued = self._execute(
            "rerun_stopped",
            id=run_id,
            now=now,
            rerun_from=note,
            fresh=int(status != "needs_attention"),
        )
        self._wake(queued.fetchall(), now)
        return "queued"

    def act_on_run(self, action: RunAction, run_id: str, now: float) -> str | None:
        """Pause, resume or run now one run if its status allows; return that status."""
        check_now(now)
        row = self._execute("run_status", id=run_id).fetchone()
        if row is None:
            return None
        status = records.text(row, "status")
        if status not in ACTS_ON[action]:
            return status
        if action == "pause":
            left = self._leave_gate(run_id)
            self._execute("pause_run", id=run_id)
            self._refill(left)
            return status
        query = "resume_run" if action == "resume" else "run_now"
        woken = self._execute(query, id=run_id, now=now).fetchall()
        self._wake(woken, now)
        self.woken.update(str(row["queue"]) for row in woken)  # a new time to wake at
        return status


def _capacity(settings: QueueSettings) -> float:
    if settings.paused:
        return 0
    return math.inf if settings.max_parallelism is None else settings.max_parallelism

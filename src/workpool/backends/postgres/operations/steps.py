"""``save_step``: a held run's step, and the child run a ``workflow`` or ``emit`` step starts."""

from __future__ import annotations

import json
from dataclasses import replace

from workpool.backends.base import TERMINAL_STATES, Lease, NewRun, StepRecord
from workpool.backends.checks import check_step
from workpool.backends.postgres.operations.enqueueing import Enqueueing
from workpool.backends.sqlite.operations.ending import child_outcome


class Steps(Enqueueing):
    """Saving steps, starting children in the same transaction."""

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None
    ) -> StepRecord | None:
        """Store a step of a held run, starting its child first if it has one."""
        check_step(lease.run_id, step, now, child)
        if await self._held(lease) is None:
            return None
        if child is not None:
            step = await self._start_child(lease.run_id, step, child, now)
        await self._store_step(lease.run_id, step)
        return step

    async def _store_step(self, run_id: str, step: StepRecord) -> None:
        """Store the step (replacing one of its name); the run now has steps."""
        await self._run(
            "save_step",
            run_id=run_id,
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
            position=step.position,
            args_hash=step.args_hash,
        )
        await self._run("mark_has_steps", id=run_id)

    async def _start_child(
        self, parent_id: str, step: StepRecord, child: NewRun, now: float
    ) -> StepRecord:
        awaited = step.kind == "workflow"
        stored = await self._enqueue_one(
            child, now, parent_run_id=parent_id, parent_step=step.name if awaited else None
        )
        step = replace(step, child_run_id=stored.run_id)
        if not awaited:
            return replace(step, output=json.dumps(stored.run_id))
        if stored.created:
            return step
        row = await self._one("child_outcome", id=stored.run_id)
        if row is None or str(row["status"]) not in TERMINAL_STATES:
            return step
        status, output, error = child_outcome(row)
        return replace(step, status=status, output=output, error=error, finished_at=now)

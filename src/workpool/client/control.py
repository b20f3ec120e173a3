"""Cancelling runs, and queue settings."""

from __future__ import annotations

from datetime import datetime

from workpool import tracing
from workpool.backends.base import ACTS_ON, CancelResult, QueueSettings, RunAction
from workpool.client.events import Events
from workpool.errors import RunNotFoundError, RunStateError
from workpool.models import Run
from workpool.registry import check_parallelism
from workpool.sync import sync_twin
from workpool.validation import check_name

CANCEL_BATCH = 500


class Control(Events):
    """Cancels and queue settings."""

    async def cancel(
        self, run_id: str, reason: str | None = None, *, connection: object = None
    ) -> CancelResult:
        """Cancel a run: a pending run ends ``canceled`` at once; a running run is
        interrupted by its worker within one lease renewal. A finished run is left as is.

        Returns ``"canceled"``, ``"requested"`` (running) or ``"finished"``.
        ``connection=`` (PostgreSQL): in the caller's open transaction on that
        connection, taking effect when it commits (README "Enqueue in your transaction").
        """
        writer = await (self.backend() if connection is None else self._joined(connection))
        with tracing.calling("cancel", "cancel", run_id, {}) as span:
            now = self.settings.clock.now()
            result = await writer.cancel(run_id, reason, now, tracing.stored(span))
            tracing.annotate(span, {"workpool.cancel.result": result})
        if result == "not_found":
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        return result

    async def cancel_all(
        self,
        *,
        before: datetime | None = None,
        workflow: str | None = None,
        reason: str | None = None,
    ) -> int:
        """Cancel every unfinished run (created before ``before``, of ``workflow``).

        Works in batches, each atomic; returns how many runs were canceled or asked to.
        """
        backend = await self.backend()
        cutoff = before.timestamp() if before is not None else None
        total = 0
        while True:
            count = await backend.cancel_many(
                cutoff, workflow, reason, CANCEL_BATCH, self.settings.clock.now()
            )
            total += count
            if count == 0:
                return total

    # -- one run: pause, resume, run now -----------------------------------------------

    async def pause_run(self, run_id: str) -> Run:
        """Pause a queued or scheduled run: no worker starts it until ``resume_run``; it
        holds no concurrency place meanwhile (the next waiting run takes it) and its rate
        limit reservation is dropped. ``cancel`` still ends it, and its deadline still
        counts. Returns the run as now stored; RunStateError for a run in another
        state (a running run is not paused: cancel it, or pause it once it is queued
        again)."""
        return await self._act_on_run("pause", run_id)

    async def resume_run(self, run_id: str) -> Run:
        """Let a paused run start again, in its place: it keeps the time it was available
        at, so it goes ahead of runs queued while it was paused (a scheduled run goes back
        to its time). Returns the run as now stored; RunStateError if it is not paused."""
        return await self._act_on_run("resume", run_id)

    async def run_now(self, run_id: str) -> Run:
        """Make a scheduled run (a later start, or a retry waiting out its backoff)
        available at once, keeping its attempt count. Returns the run as now stored;
        RunStateError for a run in another state."""
        return await self._act_on_run("run_now", run_id)

    async def _act_on_run(self, action: RunAction, run_id: str) -> Run:
        backend = await self.backend()
        before = await backend.act_on_run(action, run_id, self.settings.clock.now())
        if before is None:
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        if before not in ACTS_ON[action]:
            raise RunStateError(f"run {run_id} is {before}: {_REFUSALS[action]}")
        return await self.get_run(run_id)

    # -- queues --------------------------------------------------------------------

    async def get_queue(self, queue: str) -> QueueSettings:
        """A queue's settings: ``max_parallelism`` (None: no limit) and ``paused``."""
        backend = await self.backend()
        return await backend.get_queue(check_name(queue, what="queue name"))

    async def set_max_parallelism(self, queue: str, limit: int | None) -> QueueSettings:
        """Let at most ``limit`` runs of ``queue`` run at once across every worker (None:
        no limit; 0: start none). Raising it starts waiting runs at once."""
        backend = await self.backend()
        name = check_name(queue, what="queue name")
        return await backend.set_queue(name, max_parallelism=check_parallelism(limit))

    async def pause(self, queue: str) -> QueueSettings:
        """Start no more runs of ``queue``; running runs finish and are recorded."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=True)

    async def resume(self, queue: str) -> QueueSettings:
        """Start runs of ``queue`` again (within its ``max_parallelism``)."""
        backend = await self.backend()
        return await backend.set_queue(check_name(queue, what="queue name"), paused=False)

    cancel_sync = sync_twin(cancel, "pool")
    pause_run_sync = sync_twin(pause_run, "pool")
    resume_run_sync = sync_twin(resume_run, "pool")
    run_now_sync = sync_twin(run_now, "pool")
    cancel_all_sync = sync_twin(cancel_all, "pool")
    get_queue_sync = sync_twin(get_queue, "pool")
    set_max_parallelism_sync = sync_twin(set_max_parallelism, "pool")
    pause_sync = sync_twin(pause, "pool")
    resume_sync = sync_twin(resume, "pool")


_REFUSALS: dict[RunAction, str] = {
    "pause": "only a queued or scheduled run can be paused (cancel a running run, or "
    "pause it once it is queued again)",
    "resume": "only a paused run can be resumed",
    "run_now": "only a scheduled run (a later start or a retry's backoff) can be run now",
}

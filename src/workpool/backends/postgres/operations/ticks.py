"""``start_tick``: a cron tick's run, started unless its trigger's overlap policy skips it.

The trigger's row in ``trigger_runs`` is locked by the read of its latest run, so two
leaders' ticks of one trigger judge it one after the other."""

from __future__ import annotations

from workpool.backends.base import (
    SKIPPED_TICKS_KEPT,
    NewTick,
    SkippedTickRecord,
    SkipReason,
    TickStarted,
)
from workpool.backends.checks import check_tick
from workpool.backends.postgres.operations.enqueueing import Enqueueing
from workpool.backends.postgres.operations.transaction import Row

ENDED = frozenset({"succeeded", "failed", "canceled"})
NOT_STARTED = frozenset({"queued", "scheduled"})


class Ticks(Enqueueing):
    """``start_tick`` over the trigger's latest run (``trigger_runs``) and the record of
    skipped ticks (``skipped_ticks``)."""

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """See ``Backend.start_tick``."""
        check_tick(tick, now)
        run = tick.run
        if run.idempotency_key is not None:
            held = await self._one(
                "find_idempotency_key", workflow=run.workflow, key=run.idempotency_key, now=now
            )
            if held is not None:
                return TickStarted(run_id=str(held["run_id"]), created=False)
        latest = await self._one(
            "trigger_latest_run", workflow=run.workflow, trigger_id=tick.trigger
        )
        reason = None if latest is None else _skip_reason(tick, latest)
        if latest is not None and reason is not None:
            return await self._skip(tick, reason, str(latest["id"]), now)
        enqueued = await self._enqueue_one(run, now)
        if enqueued.created:
            await self._run(
                "remember_trigger_run",
                workflow=run.workflow,
                trigger_id=tick.trigger,
                run_id=run.id,
            )
        return TickStarted(run_id=enqueued.run_id, created=enqueued.created)

    async def _skip(
        self, tick: NewTick, reason: SkipReason, run_id: str, now: float
    ) -> TickStarted:
        where = {"workflow": tick.run.workflow, "trigger_id": tick.trigger}
        await self._run(
            "record_skipped_tick",
            **where,
            scheduled_at=tick.scheduled_at,
            reason=reason,
            run_id=run_id,
            now=now,
        )
        await self._run("trim_skipped_ticks", **where, kept=SKIPPED_TICKS_KEPT)
        record = SkippedTickRecord(
            tick.run.workflow, tick.trigger, tick.scheduled_at, reason, run_id, now
        )
        return TickStarted(run_id=run_id, created=False, skipped=record)


def _skip_reason(tick: NewTick, latest: Row) -> SkipReason | None:
    """Why the trigger's overlap policy skips this tick, given its latest run; None: it
    does not."""
    status = str(latest["status"])
    if status in ENDED or tick.overlap == "allow_all":
        return None
    if tick.overlap == "skip":
        return "previous_run_active"
    waiting = status in NOT_STARTED and int(latest["claims"]) == 0
    return "buffer_full" if waiting else None

"""``start_tick``: a cron tick's run, started unless its trigger's overlap policy skips it."""

from __future__ import annotations

import sqlite3

from workpool.backends.base import (
    SKIPPED_TICKS_KEPT,
    NewTick,
    SkippedTickRecord,
    SkipReason,
    TickStarted,
)
from workpool.backends.checks import check_tick
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.enqueueing import Enqueueing

ENDED = frozenset({"succeeded", "failed", "canceled"})
NOT_STARTED = frozenset({"queued", "scheduled"})


class Ticks(Enqueueing):
    """``start_tick`` over the trigger's latest run (``trigger_runs``) and the record of
    skipped ticks (``skipped_ticks``)."""

    def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """See ``Backend.start_tick``."""
        check_tick(tick, now)
        run = tick.run
        if run.idempotency_key is not None:
            held = self._execute(
                "find_idempotency_key", workflow=run.workflow, key=run.idempotency_key, now=now
            ).fetchone()
            if held is not None:
                return TickStarted(run_id=records.text(held, "run_id"), created=False)
        latest = self._execute(
            "trigger_latest_run", workflow=run.workflow, trigger_id=tick.trigger
        ).fetchone()
        reason = None if latest is None else _skip_reason(tick, latest)
        if latest is not None and reason is not None:
            return self._skip(tick, reason, records.text(latest, "id"), now)
        enqueued = self._enqueue_one(run, now)
        if enqueued.created:
            self._execute(
                "remember_trigger_run",
                workflow=run.workflow,
                trigger_id=tick.trigger,
                run_id=run.id,
            )
        return TickStarted(run_id=enqueued.run_id, created=enqueued.created)

    def _skip(self, tick: NewTick, reason: SkipReason, run_id: str, now: float) -> TickStarted:
        where = {"workflow": tick.run.workflow, "trigger_id": tick.trigger}
        self._execute(
            "record_skipped_tick",
            **where,
            scheduled_at=tick.scheduled_at,
            reason=reason,
            run_id=run_id,
            now=now,
        )
        self._execute("trim_skipped_ticks", **where, kept=SKIPPED_TICKS_KEPT)
        record = SkippedTickRecord(
            tick.run.workflow, tick.trigger, tick.scheduled_at, reason, run_id, now
        )
        return TickStarted(run_id=run_id, created=False, skipped=record)


def _skip_reason(tick: NewTick, latest: sqlite3.Row) -> SkipReason | None:
    """Why the trigger's overlap policy skips this tick, given its latest run; None: it
    does not."""
    status = records.text(latest, "status")
    if status in ENDED or tick.overlap == "allow_all":
        return None
    if tick.overlap == "skip":
        return "previous_run_active"
    waiting = status in NOT_STARTED and records.integer(latest, "claims") == 0
    return "buffer_full" if waiting else None


def skipped_tick(row: records.Row) -> SkippedTickRecord:
    """A ``skipped_ticks`` row as a record (of SQLite or PostgreSQL)."""
    reason: SkipReason = "buffer_full" if row["reason"] == "buffer_full" else "previous_run_active"
    return SkippedTickRecord(
        workflow=records.text(row, "workflow"),
        trigger=records.text(row, "trigger_id"),
        scheduled_at=records.number(row, "scheduled_at"),
        reason=reason,
        run_id=records.text(row, "run_id"),
        recorded_at=records.number(row, "recorded_at"),
    )

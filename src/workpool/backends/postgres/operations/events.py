"""Events into a run (``send_event``, ``take_event``) and the values a run publishes
(``set_event``); ``get_event`` is a read of the backend's own."""

from __future__ import annotations

import json
from dataclasses import replace

from workpool.backends.base import TERMINAL_STATES, EventSent, Lease, StepRecord
from workpool.backends.checks import check_now, check_step
from workpool.backends.postgres.operations.ending import Ending
from workpool.backends.postgres.operations.steps import Steps
from workpool.backends.sqlite import records


class Events(Steps, Ending):
    """Storing events, handing them to steps, publishing values."""

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None,
        trace_context: str | None = None,
    ) -> EventSent:
        """Store the event unless its id was seen; queue the run if its suspension
        waits on ``key``. The run's row is locked first, so sends to one run queue."""
        check_now(now)
        row = await self._one("event_target", id=run_id)
        if row is None:
            return "not_found"
        if event_id is not None and await self._one(
            "event_id_seen", run_id=run_id, event_id=event_id
        ):
            return "duplicate"
        status = str(row["status"])
        if status in TERMINAL_STATES:
            return "finished"
        if event_id is not None:
            await self._run("remember_event_id", run_id=run_id, event_id=event_id)
        await self._run("store_event", run_id=run_id, key=key, payload=payload)
        if status == "suspended" and key in json.loads(row["awaited_events"] or "[]"):
            if trace_context is not None:
                await self._run("set_woken_by", id=run_id, trace_context=trace_context)
            await self._wake_suspended(run_id, now)
        return "sent"

    async def take_event(
        self, lease: Lease, step: StepRecord, key: str, now: float
    ) -> StepRecord | None:
        """Store a held run's event step, with the oldest event of ``key`` if one waits."""
        check_step(lease.run_id, step, now, None)
        if await self._held(lease) is None:
            return None
        saved = await self._one("get_step", run_id=lease.run_id, name=step.name)
        if saved is not None and saved["status"] == "succeeded":
            return records.step_record(saved)
        taken = await self._one("take_event", run_id=lease.run_id, key=key)
        if taken is not None:
            step = replace(step, status="succeeded", output=str(taken["payload"]), finished_at=now)
        await self._store_step(lease.run_id, step)
        return step

    async def set_event(self, lease: Lease, key: str, value: str) -> bool:
        """Publish ``value`` under ``key`` if the lease is held."""
        if await self._held(lease) is None:
            return False
        await self._run("publish_value", run_id=lease.run_id, key=key, value=value)
        return True

"""Events into a run (``send_event``, ``take_event``) and the values a run publishes
(``set_event``); ``get_event`` is a read of the backend's own."""

from __future__ import annotations

import json
from dataclasses import replace

from workpool.backends.base import TERMINAL_STATES, EventSent, Lease, StepRecord
from workpool.backends.checks import check_now, check_step
from workpool.backends.sqlite import records
from workpool.backends.sqlite.operations.ending import Ending
from workpool.backends.sqlite.operations.steps import Steps


class Events(Steps, Ending):
    """Storing events, handing them to steps, publishing values."""

    def send_event(
        self,
        run_id: str,
        key: str,
        payload: str,
        now: float,
        event_id: str | None,
        trace_context: str | None = None,
    ) -> EventSent:
        """Store the event unless its id was seen; queue the run if its suspension
        waits on ``key``."""
        check_now(now)
        row = self._execute("event_target", id=run_id).fetchone()
        if row is None:
            return "not_found"
        if (
            event_id is not None
            and self._execute("event_id_seen", run_id=run_id, event_id=event_id).fetchone()
        ):
            return "duplicate"
        status = records.text(row, "status")
        if status in TERMINAL_STATES:
            return "finished"
        if event_id is not None:
            self._execute("remember_event_id", run_id=run_id, event_id=event_id)
        self._execute("store_event", run_id=run_id, key=key, payload=payload)
        if status == "suspended" and key in json.loads(row["awaited_events"] or "[]"):
            if trace_context is not None:
                self._execute("set_woken_by", id=run_id, trace_context=trace_context)
            self._wake_suspended(run_id, now)
        return "sent"

    def take_event(self, lease: Lease, step: StepRecord, key: str, now: float) -> StepRecord | None:
        """Store a held run's event step, with the oldest event of ``key`` if one waits."""
        check_step(lease.run_id, step, now, None)
        if self._held(lease) is None:
            return None
        saved = self._execute("get_step", run_id=lease.run_id, name=step.name).fetchone()
        if saved is not None and saved["status"] == "succeeded":
            return records.step_record(saved)
        taken = self._execute("take_event", run_id=lease.run_id, key=key).fetchone()
        if taken is not None:
            step = replace(
                step, status="succeeded", output=records.text(taken, "payload"), finished_at=now
            )
        self._store_step(lease.run_id, step)
        return step

    def set_event(self, lease: Lease, key: str, value: str) -> bool:
        """Publish ``value`` under ``key`` if the lease is held."""
        if self._held(lease) is None:
            return False
        self._execute("publish_value", run_id=lease.run_id, key=key, value=value)
        return True

"""Events into runs and the values runs publish."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from workpool import tracing
from workpool.backends.base import TERMINAL_STATES
from workpool.client.reading import Reading
from workpool.errors import ConfigurationError, RunNotFoundError, RunStateError
from workpool.serialization import check_size, from_json, to_json
from workpool.sync import sync_twin
from workpool.validation import check_name, duration_seconds

EVENT_POLL_FIRST = 0.005
EVENT_POLL_LONGEST = 0.25
"""Seconds between the reads of ``get_event`` while it waits: doubling from the first."""


class Events(Reading):
    """``send_event``, ``get_event``, ``get_events``."""

    async def send_event(
        self,
        run_id: str,
        key: str,
        payload: Any,
        *,
        event_id: str | None = None,
        connection: object = None,
    ) -> bool:
        """Send an event to run ``run_id`` under ``key``, with ``payload`` (any JSON value
        within the pool's ``max_payload_bytes``; PayloadError otherwise, and nothing is
        sent). Stored durably before it returns; a ``ctx.step.wait_for_event(name,
        key)`` of the run takes it, one wait per event, in send order, also if the event
        came first. A run suspended waiting on ``key`` is queued at once, in the same
        atomic operation. RunNotFoundError for an unknown id; RunStateError for a run
        that has finished.

        ``event_id`` (a name, e.g. a webhook's delivery id) makes a sender's retry
        safe: an event of an id the run was sent before is not stored again, and the
        call returns False (also once the run has finished). Returns True when stored.
        ``connection=`` (PostgreSQL): stored in the caller's open transaction on that
        connection, so the run sees the event once it commits (README "Enqueue in your
        transaction")."""
        check_name(key, what="event key")
        if event_id is not None:
            check_name(event_id, what="event id")
        what = f"payload of event {key!r} for run {run_id}"
        text = check_size(
            to_json(payload, what=what), what=what, limit=self.settings.max_payload_bytes
        )
        writer = await (self.backend() if connection is None else self._joined(connection))
        now = self.settings.clock.now()
        attributes = {"workpool.event": key, "messaging.operation.type": "send"}
        with tracing.calling("send_event", f"send_event {key}", run_id, attributes) as span:
            result = await writer.send_event(run_id, key, text, now, event_id, tracing.stored(span))
            tracing.annotate(span, {"workpool.event.result": result})
        if result == "duplicate":
            return False
        if result == "not_found":
            raise RunNotFoundError(
                f"no run with id {run_id!r} exists: send events to a run by the id its "
                "handle has (handle.id), before retention deletes it"
            )
        if result == "finished":
            raise RunStateError(
                f"run {run_id} has finished and takes no more events; send events while it "
                "runs or waits, or start a new run"
            )
        return True

    async def get_event(
        self, run_id: str, key: str, timeout: timedelta | float | None = None
    ) -> Any:
        """The value run ``run_id`` published under ``key`` (``ctx.set_event``), the
        latest one. Without one yet, it waits while the run is active, reading every few
        ms at first, then every 0.25 s; it returns None if the run ended without
        publishing one, or once ``timeout`` (a timedelta or seconds; 0: read once; None:
        no limit) has passed. RunNotFoundError if there is no such run."""
        check_name(key, what="event key")
        seconds = None
        if timeout is not None:
            seconds = duration_seconds(timeout, what="get_event() timeout")
            if seconds < 0:
                raise ConfigurationError(
                    f"get_event() timeout must not be negative, got {timeout!r}"
                )
        backend = await self.backend()
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        delay = EVENT_POLL_FIRST
        while True:
            found = await backend.get_event(run_id, key)
            if found is None:
                raise RunNotFoundError(f"no run with id {run_id!r} exists")
            if found.value is not None:
                return from_json(found.value)
            if found.status in TERMINAL_STATES:
                return None
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            await asyncio.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, EVENT_POLL_LONGEST)

    async def get_events(self, run_id: str) -> dict[str, Any]:
        """Every value run ``run_id`` published (``ctx.set_event``): key -> the latest
        value, ordered by key; empty if it published none. One read, no waiting (see
        ``get_event`` to wait for a key). RunNotFoundError if there is no such run."""
        backend = await self.backend()
        stored = await backend.list_published(run_id)
        if not stored and await backend.get_run(run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        return {key: from_json(value) for key, value in stored.items()}

    send_event_sync = sync_twin(send_event, "pool")
    get_event_sync = sync_twin(get_event, "pool")
    get_events_sync = sync_twin(get_events, "pool")

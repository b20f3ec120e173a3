"""Cron ticks: ``start_tick.lua``'s reply and the skipped ticks it stores (JSON texts)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

from workpool.backends.base import NewTick, SkippedTickRecord, SkipReason, TickStarted
from workpool.errors import CorruptRecordError


def decode_tick_started(tick: NewTick, now: float, reply: Sequence[str]) -> TickStarted:
    """``start_tick.lua``'s reply: created, found, or skipped (with its record)."""
    if reply[0] != "skipped":
        return TickStarted(run_id=reply[1], created=reply[0] == "created")
    reason, run_id = _reason(reply[1]), reply[2]
    record = SkippedTickRecord(
        tick.run.workflow, tick.trigger, tick.scheduled_at, reason, run_id, now
    )
    return TickStarted(run_id=run_id, created=False, skipped=record)


def decode_skipped_ticks(texts: Sequence[str], limit: int) -> list[SkippedTickRecord]:
    """The newest ``limit`` of the stored skipped ticks, latest tick first; an
    unreadable one is left out (it is a record for reading, nothing depends on it)."""
    ticks = []
    for text in texts:
        with contextlib.suppress(CorruptRecordError):
            ticks.append(decode_skipped_tick(text))
    ticks.sort(key=lambda tick: (tick.scheduled_at, tick.recorded_at), reverse=True)
    return ticks[:limit]


def decode_skipped_tick(text: str) -> SkippedTickRecord:
    """One stored skipped tick, or CorruptRecordError saying what is wrong with it."""
    try:
        data = json.loads(text)
        return SkippedTickRecord(
            workflow=str(data["workflow"]),
            trigger=str(data["trigger"]),
            scheduled_at=float(data["scheduled_at"]),
            reason=_reason(data["reason"]),
            run_id=str(data["run_id"]),
            recorded_at=float(data["recorded_at"]),
        )
    except (ValueError, TypeError, KeyError) as error:
        raise CorruptRecordError(f"unreadable skipped tick record {text!r}: {error}") from None


def _reason(stored: object) -> SkipReason:
    if stored == "previous_run_active":
        return "previous_run_active"
    if stored == "buffer_full":
        return "buffer_full"
    raise ValueError(f"unknown skip reason {stored!r}")

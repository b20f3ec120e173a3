"""A registered workflow's cron triggers: the next tick in each trigger's time zone,
and what its last ticks did: started a run, were skipped, or neither.

A tick's run has the idempotency key ``cron:<trigger id>:<tick>`` (``worker/cron.py``;
``cron:<trigger index>:<tick>`` before triggers had ids), so the workflow's newest runs
tell the ticks that fired. The backend records each skipped tick with its reason
(``list_skipped_ticks``). A past tick with neither is ``missed``: no worker led the
app's crons then (or the leader fell behind); one still within the leader's wake-up
period is ``due``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from croniter import croniter

from workpool.cron import Cron
from workpool.errors import ConfigurationError
from workpool.models import Run, SkippedTick

RECENT = 5
"""Past ticks shown per trigger."""
GRACE_SECONDS = 4.0
"""A tick this recent without a run is ``due``: the cron leader wakes every 2 s."""

TickState = Literal["fired", "skipped", "missed", "due"]


@dataclass(frozen=True, slots=True)
class Tick:
    """One past tick of a trigger: the run it started, or the record of its skip."""

    at: datetime
    state: TickState
    run: Run | None = None
    skipped: SkippedTick | None = None


@dataclass(frozen=True, slots=True)
class Trigger:
    """One cron trigger of a registered workflow."""

    index: int
    id: str
    expression: str
    timezone: str
    overlap: str
    next_at: datetime | None
    """The next tick, in the trigger's time zone; None if the trigger is unreadable."""
    ticks: list[Tick]
    """The last ticks that the workflow's newest runs cover, newest first."""
    skipped_kept: int = 0
    """How many of its skipped ticks the backend keeps (the newest 100 at most)."""
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Known:
    """What is stored about a workflow's recent ticks."""

    runs: Mapping[str, Run]
    """The workflow's newest runs, by idempotency key."""
    skipped: Sequence[SkippedTick]
    covered_since: float
    """Seconds: ticks since then are judged (the runs read cover them)."""


def triggers(
    stored: Sequence[Any],
    runs: Sequence[Run],
    skipped: Sequence[SkippedTick],
    covered_since: float,
    now: float,
) -> list[Trigger]:
    """The triggers of a registry record's ``cron`` list; ``runs`` are the workflow's
    newest runs, which tell every tick since ``covered_since`` (seconds) that fired;
    ``skipped`` its skipped ticks kept."""
    by_key = {run.idempotency_key: run for run in runs if run.idempotency_key}
    known = Known(by_key, skipped, covered_since)
    return [_trigger(index, item, known, now) for index, item in enumerate(stored)]


def _trigger(index: int, item: Any, known: Known, now: float) -> Trigger:
    data = item if isinstance(item, dict) else {}
    expression, timezone = str(data.get("expression", "")), str(data.get("timezone", "UTC"))
    trigger_id = str(data.get("id") or f"{expression} {timezone}")
    overlap = str(data.get("overlap") or "skip")
    try:
        cron = Cron(expression, timezone)
    except ConfigurationError as error:
        return Trigger(
            index, trigger_id, expression, timezone, overlap, None, [], problem=str(error)
        )
    own = [tick for tick in known.skipped if tick.trigger == trigger_id]
    by_time = {tick.scheduled_at.timestamp(): tick for tick in own}
    ticks = []
    for tick in reversed(recent_ticks(cron, now, RECENT)):
        if tick < known.covered_since and tick not in by_time:
            break
        run = known.runs.get(f"cron:{trigger_id}:{tick!r}") or known.runs.get(
            f"cron:{index}:{tick!r}"
        )
        ticks.append(_tick(datetime.fromtimestamp(tick, cron.zone()), run, by_time.get(tick), now))
    next_at = datetime.fromtimestamp(cron.next_after(now), cron.zone())
    return Trigger(index, trigger_id, expression, timezone, overlap, next_at, ticks, len(own))


def _tick(at: datetime, run: Run | None, skipped: SkippedTick | None, now: float) -> Tick:
    if run is not None:
        return Tick(at, "fired", run=run)
    if skipped is not None:
        return Tick(at, "skipped", skipped=skipped)
    return Tick(at, "due" if now - at.timestamp() < GRACE_SECONDS else "missed")


def recent_ticks(cron: Cron, now: float, count: int) -> list[float]:
    """The last ``count`` ticks at or before ``now``, oldest first, as the cron leader
    computes them (``Cron.next_after``, so daylight saving time is treated alike)."""
    back = croniter(cron.expression, datetime.fromtimestamp(now, cron.zone()))
    start = now
    for _ in range(count + 1):  # one more: an autumn repeat the leader does not fire
        start = back.get_prev(datetime).timestamp()
    ticks = []
    tick = cron.next_after(start - 1)
    while tick <= now:
        ticks.append(tick)
        tick = cron.next_after(tick)
    return ticks[-count:]

"""A registered workflow's cron triggers: the next tick in each trigger's time zone,
and whether its last ticks fired a run or were skipped.

No backend stores skipped ticks, so they are found from what is stored: each tick's
run has the idempotency key ``cron:<trigger index>:<tick>`` (``worker/cron.py``), so a
recent tick whose key is on none of the workflow's newest runs did not fire (its
workflow was at ``max_concurrency``, or no worker led the app's crons then).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from croniter import croniter

from workpool.cron import Cron
from workpool.errors import ConfigurationError
from workpool.models import Run

RECENT = 5
"""Past ticks shown per trigger."""
GRACE_SECONDS = 4.0
"""A tick this recent without a run is ``due``: the cron leader wakes every 2 s."""

TickState = Literal["fired", "skipped", "due"]


@dataclass(frozen=True, slots=True)
class Tick:
    """One past tick of a trigger; ``run`` is the run it started, if it did."""

    at: datetime
    state: TickState
    run: Run | None = None


@dataclass(frozen=True, slots=True)
class Trigger:
    """One cron trigger of a registered workflow."""

    index: int
    expression: str
    timezone: str
    next_at: datetime | None
    """The next tick, in the trigger's time zone; None if the trigger is unreadable."""
    ticks: list[Tick]
    """The last ticks that the workflow's newest runs cover, newest first."""
    problem: str | None = None


def triggers(
    stored: Sequence[Any], runs: Sequence[Run], covered_since: float, now: float
) -> list[Trigger]:
    """The triggers of a registry record's ``cron`` list; ``runs`` are the workflow's
    newest runs, which tell every tick since ``covered_since`` (seconds)."""
    by_key = {run.idempotency_key: run for run in runs if run.idempotency_key}
    return [_trigger(index, item, by_key, covered_since, now) for index, item in enumerate(stored)]


def _trigger(
    index: int, item: Any, by_key: Mapping[str, Run], covered_since: float, now: float
) -> Trigger:
    data = item if isinstance(item, dict) else {}
    expression, timezone = str(data.get("expression", "")), str(data.get("timezone", "UTC"))
    try:
        cron = Cron(expression, timezone)
    except ConfigurationError as error:
        return Trigger(index, expression, timezone, None, [], problem=str(error))
    ticks = []
    for tick in reversed(recent_ticks(cron, now, RECENT)):
        if tick < covered_since:
            break
        run = by_key.get(f"cron:{index}:{tick!r}")
        state: TickState = "fired" if run else "due" if now - tick < GRACE_SECONDS else "skipped"
        ticks.append(Tick(datetime.fromtimestamp(tick, cron.zone()), state, run))
    next_at = datetime.fromtimestamp(cron.next_after(now), cron.zone())
    return Trigger(index, expression, timezone, next_at, ticks)


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

"""The last hour minute by minute, from the backend's per-minute counters, as bars of
an inline SVG chart (no script draws it: it shows with JavaScript off)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from workpool.backends.base import MinuteCounters, PairCounters

MINUTES = 60
"""Minutes a chart covers, the current one included."""


@dataclass(frozen=True, slots=True)
class Minute:
    """What ended in one minute: runs that completed, and attempts that failed."""

    start: datetime
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    retried: int = 0
    executions: int = 0

    @property
    def completed(self) -> int:
        """Runs that ended for good in the minute."""
        return self.succeeded + self.failed + self.canceled

    def describe(self) -> str:
        """One line for the bar's tooltip."""
        return (
            f"{self.start:%H:%M} UTC: {self.succeeded} succeeded, {self.failed} failed, "
            f"{self.canceled} canceled, {self.retried} retried"
        )


@dataclass(frozen=True, slots=True)
class Rect:
    """One SVG rectangle, in the chart's viewBox units."""

    x: float
    y: float
    width: float
    height: float
    kind: str
    """``succeeded``, ``failed`` or ``canceled``: its CSS class."""


@dataclass(frozen=True, slots=True)
class Hour:
    """A chart: the minutes of the last hour, oldest first, and their sums."""

    minutes: list[Minute]

    @property
    def completed(self) -> int:
        return sum(minute.completed for minute in self.minutes)

    @property
    def failed(self) -> int:
        return sum(minute.failed for minute in self.minutes)

    @property
    def retried(self) -> int:
        return sum(minute.retried for minute in self.minutes)

    @property
    def failure_rate(self) -> float | None:
        """Runs that failed for good over runs that ended; None when none ended."""
        return self.failed / self.completed if self.completed else None

    @property
    def per_minute(self) -> float:
        """Runs completed per minute, on average over the hour."""
        return self.completed / len(self.minutes) if self.minutes else 0.0

    @property
    def peak(self) -> int:
        return max((minute.completed for minute in self.minutes), default=0)

    def bars(self, width: float, height: float) -> list[tuple[Minute, list[Rect]]]:
        """Each minute with its stacked rectangles (succeeded at the bottom, then
        canceled, then failed), scaled so the busiest minute fills ``height``."""
        if not self.minutes:
            return []
        step = width / len(self.minutes)
        scale = height / self.peak if self.peak else 0.0
        drawn = []
        for index, minute in enumerate(self.minutes):
            rects, top = [], height
            for kind, count in (
                ("succeeded", minute.succeeded),
                ("canceled", minute.canceled),
                ("failed", minute.failed),
            ):
                if count:
                    size = count * scale
                    top -= size
                    rects.append(Rect(index * step + step * 0.1, top, step * 0.8, size, kind))
            drawn.append((minute, rects))
        return drawn


def last_hour(minutes: Sequence[MinuteCounters], now: float, *, queue: str | None = None) -> Hour:
    """The ``MINUTES`` minutes up to the one holding ``now``, from the counters of
    ``get_minute_counters`` (of one queue, if given); minutes without counts are zero."""
    last = int(now // 60) * 60
    starts = [last - 60 * (MINUTES - 1 - index) for index in range(MINUTES)]
    by_start = {int(minute.minute): minute.counters for minute in minutes}
    return Hour(
        [_minute(start, by_start.get(start, []), queue) for start in starts],
    )


def _minute(start: int, counters: Sequence[PairCounters], queue: str | None) -> Minute:
    chosen = [pair for pair in counters if queue is None or pair.queue == queue]
    return Minute(
        start=datetime.fromtimestamp(start, UTC),
        succeeded=sum(pair.succeeded for pair in chosen),
        failed=sum(pair.failed for pair in chosen),
        canceled=sum(pair.canceled for pair in chosen),
        retried=sum(pair.retried for pair in chosen),
        executions=sum(pair.executions for pair in chosen),
    )

"""The last hour minute by minute, from the backend's per-minute counters, as bars of
an inline SVG chart (no script draws it: it shows with JavaScript off)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from workpool.backends.base import MinuteCounters, PairCounters

MINUTES = 60
"""Minutes a chart covers, the current one included."""
TIME_TICKS: tuple[tuple[str, float], ...] = (
    ("60 min ago", 0.0),
    ("45 min", 0.25),
    ("30 min", 0.5),
    ("15 min", 0.75),
    ("now", 1.0),
)
"""The time axis of the overview's chart: each label and where it is, as a share of
the width (the stylesheet places the labels at the same shares)."""
ROUND_STEPS = (1, 2, 3, 4, 5, 6, 8, 10)
"""The first digits a scale's middle line may have (times a power of ten)."""


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
    def rate_text(self) -> str:
        """The pace of the hour in words that never read "0.0": "56 per minute",
        "0.75 per minute", or for a quiet hour "1 every 30 min"."""
        rate = self.per_minute
        if not self.completed:
            return "none in the last hour"
        if rate >= 10:
            return f"{rate:.0f} per minute"
        if rate >= 1:
            return f"{rate:.1f} per minute"
        if rate >= 0.1:
            return f"{rate:.2g} per minute"
        return f"1 every {round(len(self.minutes) / self.completed)} min"

    @property
    def peak(self) -> int:
        return max((minute.completed for minute in self.minutes), default=0)

    @property
    def scale_top(self) -> int:
        """The top of the chart's scale: twice the smallest round number (1, 2, 3, 4,
        5, 6 or 8 times a power of ten) that is at least half the busiest minute, so
        that the middle line is round too; 0 for an empty hour."""
        if not self.peak:
            return 0
        power = 1
        while True:
            for step in ROUND_STEPS:
                if 2 * step * power >= self.peak:
                    return 2 * step * power
            power *= 10

    @property
    def time_ticks(self) -> tuple[tuple[str, float], ...]:
        """The labels of the time axis and their places (``TIME_TICKS``)."""
        return TIME_TICKS

    @property
    def scale(self) -> list[int]:
        """The scale's labels, top first: runs per minute at the top, middle and bottom."""
        top = self.scale_top
        return [top, top // 2, 0] if top else [0]

    def bars(
        self, width: float, height: float, *, scaled: bool = False
    ) -> list[tuple[Minute, list[Rect]]]:
        """Each minute with its stacked rectangles (succeeded at the bottom, then
        canceled, then failed), scaled so the busiest minute fills ``height``, or, if
        ``scaled``, so that ``scale_top`` does."""
        if not self.minutes:
            return []
        step = width / len(self.minutes)
        ceiling = self.scale_top if scaled else self.peak
        scale = height / ceiling if ceiling else 0.0
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

"""The overview's and the workflows page's charts: a ``Workpool.history`` series as the
bars of an inline SVG chart (no script draws it: it shows with JavaScript off), over
the range the page asks for (an hour, a day or a week)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from workpool.history import Outcomes, Series

ROUND_STEPS = (1, 2, 3, 4, 5, 6, 8, 10)
"""The first digits a scale's middle line may have (times a power of ten)."""


@dataclass(frozen=True, slots=True)
class Range:
    """A span a chart covers, as the range selector names it."""

    key: str
    """Its value in the page's ``range`` query parameter."""
    label: str
    span: timedelta
    per: str
    """The unit of the scale: runs per bar."""
    ticks: tuple[tuple[str, float], ...]
    """The time axis: each label and where it is, as a share of the width (the
    stylesheet places the labels at the same shares, per range)."""
    stamp: str
    """How a bar's tooltip names its period (strftime, UTC)."""


RANGES = (
    Range(
        "hour",
        "hour",
        timedelta(hours=1),
        "/min",
        (("60 min ago", 0.0), ("45 min", 0.25), ("30 min", 0.5), ("15 min", 0.75), ("now", 1.0)),
        "%H:%M",
    ),
    Range(
        "day",
        "day",
        timedelta(days=1),
        "/15 min",
        (("24 h ago", 0.0), ("18 h", 0.25), ("12 h", 0.5), ("6 h", 0.75), ("now", 1.0)),
        "%a %H:%M",
    ),
    Range(
        "week",
        "week",
        timedelta(days=7),
        "/h",
        (("7 days ago", 0.0), ("5 days", 2 / 7), ("3 days", 4 / 7), ("1 day", 6 / 7), ("now", 1.0)),
        "%a %d %b %H:00",
    ),
)
"""The ranges the selector offers; the first is the default."""


def range_named(key: str | None) -> Range:
    """The range a query parameter names; the hour for anything else."""
    return next((choice for choice in RANGES if choice.key == key), RANGES[0])


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
class Chart:
    """One scope's periods over a range, oldest first, and their sums."""

    range: Range
    series: Series

    @property
    def periods(self) -> list[Outcomes]:
        return self.series.periods

    @property
    def completed(self) -> int:
        return self.series.overall.completed

    @property
    def failed(self) -> int:
        return self.series.overall.failed

    @property
    def retried(self) -> int:
        return self.series.overall.retries

    @property
    def failure_rate(self) -> float | None:
        """Runs that failed for good over runs that ended; None when none ended."""
        return self.series.overall.failure_rate

    @property
    def rate_text(self) -> str:
        """The pace of the range in words that never read "0.0": "56 per minute", "0.75
        per minute", "3 per hour", or when quiet "1 every 30 min", "1 every 5 h"."""
        return pace(self.series.overall, self.range.label)

    @property
    def peak(self) -> int:
        return max((period.completed for period in self.periods), default=0)

    @property
    def scale_top(self) -> int:
        """The top of the chart's scale: twice the smallest round number (1, 2, 3, 4,
        5, 6 or 8 times a power of ten) that is at least half the busiest period, so
        that the middle line is round too; 0 for an empty range."""
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
        return self.range.ticks

    @property
    def scale(self) -> list[int]:
        """The scale's labels, top first: runs per period at the top, middle and bottom."""
        top = self.scale_top
        return [top, top // 2, 0] if top else [0]

    def describe(self, period: Outcomes) -> str:
        """One line for a bar's tooltip."""
        return (
            f"{period.start:{self.range.stamp}} UTC: {period.succeeded} succeeded, "
            f"{period.failed} failed, {period.canceled} canceled, {period.retries} retried"
        )

    def bars(
        self, width: float, height: float, *, scaled: bool = False
    ) -> list[tuple[Outcomes, list[Rect]]]:
        """Each period with its stacked rectangles (succeeded at the bottom, then
        canceled, then failed), scaled so the busiest period fills ``height``, or, if
        ``scaled``, so that ``scale_top`` does."""
        if not self.periods:
            return []
        step = width / len(self.periods)
        ceiling = self.scale_top if scaled else self.peak
        scale = height / ceiling if ceiling else 0.0
        drawn = []
        for index, period in enumerate(self.periods):
            rects, top = [], height
            for kind, count in (
                ("succeeded", period.succeeded),
                ("canceled", period.canceled),
                ("failed", period.failed),
            ):
                if count:
                    size = count * scale
                    top -= size
                    rects.append(Rect(index * step + step * 0.1, top, step * 0.8, size, kind))
            drawn.append((period, rects))
        return drawn


def pace(outcomes: Outcomes, label: str) -> str:
    """Runs completed per minute or per hour of ``outcomes``, in words."""
    if not outcomes.completed:
        return f"none in the last {label}"
    rate, minutes = outcomes.per_minute, outcomes.length / timedelta(minutes=1)
    if rate >= 10:
        return f"{rate:.0f} per minute"
    if rate >= 1:
        return f"{rate:.1f} per minute"
    if rate >= 0.1:
        return f"{rate:.2g} per minute"
    if minutes <= 60:
        return f"1 every {round(minutes / outcomes.completed)} min"
    if outcomes.per_hour >= 1:
        return f"{outcomes.per_hour:.2g} per hour"
    return f"1 every {round(minutes / 60 / outcomes.completed)} h"

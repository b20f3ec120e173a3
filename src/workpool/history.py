"""What ``Workpool.history`` reports: what ended, period by period, over up to a week.

The backend keeps counters per minute for a day and per hour for a week (see
``Backend.get_counters``); a span picks the shortest period that keeps its periods few
enough to draw, from the rows the span allows."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from workpool.backends.base import PairCounters, PeriodCounters

MAX_SPAN = timedelta(days=7)
"""The longest span ``history`` accepts: counters are kept per hour for this long."""
MINUTES_KEPT = timedelta(days=1)
"""How long counters are kept per minute (``stats`` windows reach this far back)."""
PERIODS: tuple[tuple[timedelta, timedelta], ...] = (
    (timedelta(hours=2), timedelta(minutes=1)),
    (timedelta(hours=12), timedelta(minutes=5)),
    (MINUTES_KEPT, timedelta(minutes=15)),
    (MAX_SPAN, timedelta(hours=1)),
)
"""Each span's period: the first whose span is at least as long."""


@dataclass(frozen=True, slots=True)
class Outcomes:
    """What ended in one stretch of time: a period, or a whole span.

    ``failure_rate`` = failed / completed (None when no run ended); ``per_minute`` and
    ``per_hour``: runs completed per minute or hour of the stretch (its throughput)."""

    start: datetime
    length: timedelta
    executions: int = 0
    """Attempts that ended."""
    succeeded: int = 0
    failed: int = 0
    """Runs that failed for good."""
    canceled: int = 0
    retries: int = 0
    """Attempts that ended with another one scheduled."""
    average_run_time: timedelta | None = None
    """Mean duration of the attempts that ended (None when none was timed)."""

    @property
    def completed(self) -> int:
        """Runs that ended for good: succeeded + failed + canceled."""
        return self.succeeded + self.failed + self.canceled

    @property
    def failure_rate(self) -> float | None:
        """Runs that failed for good over runs that ended; None when none ended."""
        return self.failed / self.completed if self.completed else None

    @property
    def per_minute(self) -> float:
        """Runs completed per minute, on average over the stretch."""
        return self.completed / (self.length / timedelta(minutes=1))

    @property
    def per_hour(self) -> float:
        """Runs completed per hour, on average over the stretch."""
        return self.per_minute * 60


@dataclass(frozen=True, slots=True)
class Series:
    """One scope's history: every period of the span, oldest first (a period without a
    count is all zeros), and the span's sums."""

    overall: Outcomes
    periods: list[Outcomes]


@dataclass(frozen=True, slots=True)
class History:
    """``Workpool.history``: the totals, and the same per queue and per workflow."""

    span: timedelta
    period: timedelta
    total: Series
    by_queue: dict[str, Series] = field(default_factory=dict)
    by_workflow: dict[str, Series] = field(default_factory=dict)


def period_of(span: timedelta) -> timedelta:
    """The period a span is told in (``PERIODS``); ValueError for a span that is not
    whole minutes, more than 0 and at most ``MAX_SPAN``."""
    if not timedelta(0) < span <= MAX_SPAN or span % timedelta(minutes=1):
        raise ValueError(
            f"span must be whole minutes, more than 0 and at most {MAX_SPAN.days} days "
            f"(per-hour counters are kept a week), not {span}"
        )
    return next(period for longest, period in PERIODS if span <= longest)


def bounds(span: timedelta, now: float) -> tuple[float, int, int]:
    """(first period's start, period in seconds, number of periods): the periods of
    ``span`` up to and including the one holding ``now``."""
    period = int(period_of(span).total_seconds())
    count = math.ceil(span.total_seconds() / period)
    last = math.floor(now / period) * period
    return last - (count - 1) * period, period, count


def summarize_history(
    found: Sequence[PeriodCounters],
    span: timedelta,
    now: float,
    queue: str | None = None,
    workflow: str | None = None,
) -> History:
    """Add up ``get_counters``' periods per scope, keeping the pairs that match."""
    first, period, count = bounds(span, now)
    starts = [first + index * period for index in range(count)]
    kept = set(starts)
    rows = [
        (stored.start, pair)
        for stored in found
        if stored.start in kept
        for pair in stored.counters
        if (queue is None or pair.queue == queue)
        and (workflow is None or pair.workflow == workflow)
    ]

    def series(chosen: Callable[[PairCounters], bool]) -> Series:
        by_start: dict[float, list[PairCounters]] = {}
        for start, pair in rows:
            if chosen(pair):
                by_start.setdefault(start, []).append(pair)
        periods = [_outcomes(start, period, by_start.get(start, [])) for start in starts]
        every = [pair for pairs in by_start.values() for pair in pairs]
        return Series(_outcomes(first, period * count, every), periods)

    queues = sorted({pair.queue for _, pair in rows})
    workflows = sorted({pair.workflow for _, pair in rows})
    return History(
        span=span,
        period=timedelta(seconds=period),
        total=series(lambda pair: True),
        by_queue={name: series(_of_queue(name)) for name in queues},
        by_workflow={name: series(_of_workflow(name)) for name in workflows},
    )


def _of_queue(name: str) -> Callable[[PairCounters], bool]:
    return lambda pair: pair.queue == name


def _of_workflow(name: str) -> Callable[[PairCounters], bool]:
    return lambda pair: pair.workflow == name


def _outcomes(start: float, seconds: float, pairs: Sequence[PairCounters]) -> Outcomes:
    timed = sum(pair.timed for pair in pairs)
    return Outcomes(
        start=datetime.fromtimestamp(start, UTC),
        length=timedelta(seconds=seconds),
        executions=sum(pair.executions for pair in pairs),
        succeeded=sum(pair.succeeded for pair in pairs),
        failed=sum(pair.failed for pair in pairs),
        canceled=sum(pair.canceled for pair in pairs),
        retries=sum(pair.retried for pair in pairs),
        average_run_time=(
            timedelta(seconds=sum(pair.run_time for pair in pairs) / timed) if timed else None
        ),
    )

"""The overview's figures: every queue's runs now, its history over the range asked
for, and its settings.

One refresh reads ``stats`` (active counts per (queue, workflow), live workers), the
counters of the range (``history``: per minute for the hour, per 15 minutes for the
day, per hour for the week), the live workers and each queue's settings: reads whose
cost grows with queues, pairs and periods, never with the runs stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from workpool.app import Workpool
from workpool.backends.base import QueueSettings, WorkerRecord
from workpool.dashboard.charts import RANGES, Chart, Range
from workpool.history import History, Outcomes, Series
from workpool.stats import Figures, Unserved


@dataclass(frozen=True, slots=True)
class QueueView:
    """One queue: its runs now, its history and its settings."""

    name: str
    now: Figures
    chart: Chart
    settings: QueueSettings


@dataclass(frozen=True, slots=True)
class Overview:
    """Everything the overview shows."""

    at: datetime
    total: Figures
    chart: Chart
    queues: list[QueueView]
    unserved: list[Unserved]
    workers: list[WorkerRecord]
    ranges: tuple[Range, ...] = RANGES


async def read_overview(pool: Workpool, chosen: Range) -> Overview:
    """The overview as the backend tells it now, its charts over ``chosen``."""
    stats = await pool.stats(timedelta(minutes=1))
    workers = await pool.live_workers()
    history = await pool.history(chosen.span)
    names = set(stats.by_queue) | set(pool.queue_defaults)
    names |= {workflow.queue for workflow in pool.workflows.values()}
    names |= {queue for worker in workers for queue in worker.queues}
    queues = [
        QueueView(
            name=name,
            now=stats.by_queue.get(name, Figures()),
            chart=Chart(chosen, history.by_queue.get(name) or quiet(history)),
            settings=await pool.get_queue(name),
        )
        for name in sorted(names)
    ]
    return Overview(
        at=datetime.fromtimestamp(pool.settings.clock.now(), UTC),
        total=stats.total,
        chart=Chart(chosen, history.total),
        queues=queues,
        unserved=stats.unserved,
        workers=workers,
    )


def quiet(history: History) -> Series:
    """A series of the history's periods with nothing in them (a scope without counts)."""
    total = history.total
    return Series(
        Outcomes(total.overall.start, total.overall.length),
        [Outcomes(period.start, period.length) for period in total.periods],
    )

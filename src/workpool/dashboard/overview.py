"""The overview's figures: every queue's runs now, its last hour and its settings.

One refresh reads ``stats`` (active counts per (queue, workflow), live workers), the
per-minute counters of the last hour (``get_minute_counters``), the live workers and
each queue's settings: reads whose cost grows with queues, pairs and minutes, never
with the runs stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from workpool.app import Workpool
from workpool.backends.base import QueueSettings, WorkerRecord
from workpool.dashboard.charts import MINUTES, Hour, last_hour
from workpool.stats import Figures, Unserved


@dataclass(frozen=True, slots=True)
class QueueView:
    """One queue: its runs now, its last hour and its settings."""

    name: str
    now: Figures
    hour: Hour
    settings: QueueSettings


@dataclass(frozen=True, slots=True)
class Overview:
    """Everything the overview shows."""

    at: datetime
    total: Figures
    hour: Hour
    queues: list[QueueView]
    unserved: list[Unserved]
    workers: list[WorkerRecord]


async def read_overview(pool: Workpool) -> Overview:
    """The overview as the backend tells it now."""
    stats = await pool.stats(timedelta(minutes=1))
    workers = await pool.live_workers()
    backend = await pool.backend()
    now = pool.settings.clock.now()
    minutes = await backend.get_minute_counters(now - 60 * (MINUTES - 1), now)
    names = set(stats.by_queue) | set(pool.queue_defaults)
    names |= {workflow.queue for workflow in pool.workflows.values()}
    names |= {queue for worker in workers for queue in worker.queues}
    queues = [
        QueueView(
            name=name,
            now=stats.by_queue.get(name, Figures()),
            hour=last_hour(minutes, now, queue=name),
            settings=await pool.get_queue(name),
        )
        for name in sorted(names)
    ]
    return Overview(
        at=datetime.fromtimestamp(now, UTC),
        total=stats.total,
        hour=last_hour(minutes, now),
        queues=queues,
        unserved=stats.unserved,
        workers=workers,
    )

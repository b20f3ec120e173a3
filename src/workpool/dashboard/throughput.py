"""The workflows page's throughput: per workflow, the runs that finished over the range
asked for (per minute and per hour), the share that failed, and a small chart; one
``history`` read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from workpool.app import Workpool
from workpool.dashboard.charts import RANGES, Chart, Range
from workpool.dashboard.overview import quiet


@dataclass(frozen=True, slots=True)
class Throughput:
    """Each workflow's chart over one range, by name."""

    range: Range
    charts: dict[str, Chart]
    ranges: tuple[Range, ...] = RANGES

    @property
    def hourly(self) -> bool:
        """Whether the range is long enough to tell its pace per hour first."""
        return self.range.span > timedelta(hours=1)


async def read_throughput(pool: Workpool, chosen: Range, names: list[str]) -> Throughput:
    """The charts of the workflows ``names`` and of every other workflow with counts."""
    history = await pool.history(chosen.span)
    every = sorted(set(names) | set(history.by_workflow))
    return Throughput(
        chosen,
        {name: Chart(chosen, history.by_workflow.get(name) or quiet(history)) for name in every},
    )

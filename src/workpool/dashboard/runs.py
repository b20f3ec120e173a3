"""Runs: a filtered page of the list, and one run with its steps and why it waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

from workpool.app import Workpool
from workpool.dashboard.timeline import StepRow, timeline
from workpool.errors import RunNotFoundError
from workpool.models import Run, RunList, RunState

STATUSES: tuple[str, ...] = get_args(RunState)
PAGE_SIZE = 50
"""Runs per page unless the link says (``limit``, at most ``MAX_PAGE_SIZE``)."""
MAX_PAGE_SIZE = 200


@dataclass(frozen=True, slots=True)
class Filters:
    """The runs list's filters, as its form and links carry them."""

    status: RunState | None = None
    queue: str | None = None
    workflow: str | None = None
    limit: int = PAGE_SIZE

    def query(self, cursor: str | None = None) -> dict[str, str]:
        """The filters (and a cursor) as query parameters, empty ones left out."""
        values = {"status": self.status, "queue": self.queue, "workflow": self.workflow}
        values["limit"] = str(self.limit) if self.limit != PAGE_SIZE else None
        values["cursor"] = cursor
        return {name: value for name, value in values.items() if value}


@dataclass(frozen=True, slots=True)
class RunsPage:
    """One page of the runs list and what its filter form offers."""

    filters: Filters
    page: RunList
    first: bool
    """Whether this is the newest page (no cursor was given)."""
    queues: list[str]
    workflows: list[str]
    missing: str | None = None
    """A run id searched for that does not exist."""


@dataclass(frozen=True, slots=True)
class RunDetail:
    """One run, its steps, the reason it waits (if it does) and what it published."""

    run: Run
    steps: list[StepRow]
    waiting: str | None
    at: datetime
    events: dict[str, Any] = field(default_factory=dict)
    """The values the run published (``ctx.set_event``), by key."""


async def read_runs(
    pool: Workpool, filters: Filters, cursor: str | None, missing: str | None = None
) -> RunsPage:
    """The page of runs matching ``filters`` from ``cursor``, newest first (one
    ``list_runs`` page and one ``stats`` read for the filter's choices)."""
    page = await pool.list_runs(
        status=filters.status,
        queue=filters.queue,
        workflow=filters.workflow,
        limit=filters.limit,
        cursor=cursor,
    )
    stats = await pool.stats(timedelta(minutes=1))
    workflows = set(stats.by_workflow) | set(pool.workflows)
    return RunsPage(
        filters=filters,
        page=page,
        first=cursor is None,
        queues=sorted(set(stats.by_queue) | set(pool.queue_defaults)),
        workflows=sorted(workflows),
        missing=missing,
    )


async def find_run(pool: Workpool, run_id: str) -> Run | None:
    """The run with that id, or None."""
    try:
        return await pool.get_run(run_id)
    except RunNotFoundError:
        return None


async def read_run(pool: Workpool, run_id: str) -> RunDetail:
    """A run, its steps, why it waits and the values it published; RunNotFoundError if
    there is none."""
    run = await pool.get_run(run_id)
    steps = await pool.get_steps(run_id)
    now = datetime.fromtimestamp(pool.settings.clock.now(), UTC)
    waiting = await pool.waiting_reason(run)
    events = await pool.get_events(run_id)
    return RunDetail(run, timeline(steps, now), waiting, now, events)

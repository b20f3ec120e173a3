"""Reading runs, steps, counters, workers and the registry."""

from __future__ import annotations

from datetime import timedelta
from typing import get_args

from workpool.backends.base import WorkerRecord
from workpool.client.base import ClientBase
from workpool.decoding import (
    registered_workflow,
    require_run,
    run_from_record,
    skipped_tick,
    step_from_record,
)
from workpool.errors import ConfigurationError, RunNotFoundError
from workpool.history import History, bounds, summarize_history
from workpool.limits import GATE_PREFIX, LimitUsage, limit_usage
from workpool.models import RegisteredWorkflow, Run, RunList, RunState, SkippedTick, Step
from workpool.stats import MAX_WINDOW, Stats, summarize
from workpool.sync import sync_twin
from workpool.validation import as_timedelta, short_repr
from workpool.waiting import waiting_reason

MAX_PAGE = 1000
"""The most runs one ``list_runs`` page may hold."""
RUN_STATES: frozenset[str] = frozenset(get_args(RunState))


class Reading(ClientBase):
    """Reads: one backend read each, values decoded."""

    async def get_run(self, run_id: str) -> Run:
        """The full record of a run, with its parent and children; RunNotFoundError if
        there is none."""
        backend = await self.backend()
        record = await backend.get_run(run_id)
        children = tuple(await backend.get_children(run_id)) if record is not None else ()
        return require_run(record, run_id, children)

    async def get_steps(self, run_id: str) -> list[Step]:
        """Every saved step of a run (``ctx.step.*``), oldest first; RunNotFoundError if
        there is no such run."""
        backend = await self.backend()
        records = await backend.get_steps(run_id)
        if not records and await backend.get_run(run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r} exists")
        now = self.settings.clock.now()
        return [step_from_record(run_id, record, now) for record in records]

    async def list_runs(
        self,
        *,
        status: RunState | None = None,
        workflow: str | None = None,
        queue: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunList:
        """Runs matching every filter given, newest first, one page at a time: pass the
        page's ``cursor`` back for the next. A page costs O(limit) whatever the history
        size (per (queue, workflow) pair matching the filters)."""
        if status is not None and status not in RUN_STATES:
            raise ValueError(
                f"unknown run status {status!r}: use one of {', '.join(sorted(RUN_STATES))}"
            )
        wanted: object = limit  # typed int, but callers pass anything
        if isinstance(wanted, bool) or not isinstance(wanted, int) or not 1 <= wanted <= MAX_PAGE:
            raise ValueError(
                f"limit must be between 1 and {MAX_PAGE} (a whole number), not {short_repr(limit)}"
            )
        backend = await self.backend()
        page = await backend.list_runs(status, workflow, queue, limit, cursor)
        return RunList(runs=[run_from_record(record) for record in page.runs], cursor=page.cursor)

    async def stats(
        self,
        window: timedelta | float = timedelta(minutes=5),
        *,
        queue: str | None = None,
        workflow: str | None = None,
    ) -> Stats:
        """Backlog and activity now, and what happened in the last ``window`` (a
        timedelta or seconds; whole minutes, at most 24 hours), in total, per queue and
        per workflow. One backend read from counters kept per minute: its cost does not
        grow with history."""
        window = as_timedelta(window, what="window", positive=True)
        if not timedelta(0) < window <= MAX_WINDOW:
            raise ValueError(f"window must be more than 0 and at most {MAX_WINDOW}, not {window}")
        backend = await self.backend()
        now = self.settings.clock.now()
        snapshot = await backend.get_stats(now - window.total_seconds(), now)
        return summarize(snapshot, now, window, queue=queue, workflow=workflow)

    async def history(
        self,
        span: timedelta | float = timedelta(hours=1),
        *,
        queue: str | None = None,
        workflow: str | None = None,
    ) -> History:
        """What ended over the last ``span`` (a timedelta or seconds; whole minutes, at
        most 7 days), period by period, in total, per queue and per workflow: each
        period's outcomes, and the span's throughput and failure rate. Periods are a
        minute up to 2 hours, 5 minutes up to 12, 15 minutes up to a day (counters are
        kept per minute for a day) and an hour up to a week (per hour for a week). One
        backend read whose cost grows with the pairs and the periods, not the history."""
        span = as_timedelta(span, what="span", positive=True)
        now = self.settings.clock.now()
        first, period, _ = bounds(span, now)
        backend = await self.backend()
        found = await backend.get_counters(first, now, period)
        return summarize_history(found, span, now, queue=queue, workflow=workflow)

    async def live_workers(self) -> list[WorkerRecord]:
        """The workers that announced themselves lately: what each serves (its app,
        queues and workflows), by id."""
        backend = await self.backend()
        return await backend.list_workers(self.settings.clock.now())

    async def waiting_reason(self, run: Run) -> str | None:
        """Why a pending run has not started, if something other than a busy worker
        holds it (every reason that holds, joined): no live worker defines its workflow
        on its queue, its workflow is at its concurrency limit, it is rate limited or
        scheduled for later, its queue is paused or at its ``max_parallelism``. None for
        runs that are not pending. ``RunHandle.result``'s timeout says the same."""
        backend = await self.backend()
        return await waiting_reason(backend, run, self.settings.clock.now())

    async def list_workflows(self) -> list[RegisteredWorkflow]:
        """The workflows registered by the workers of every app, by name."""
        backend = await self.backend()
        return [registered_workflow(info) for info in await backend.list_workflows()]

    async def limit_usage(self) -> list[LimitUsage]:
        """Each shared limit (``Workpool.limit``) now, by name: its runs in use and
        waiting (every key together) and the registered workflows it covers. Limits
        this pool defines and those the registry records are listed even when idle."""
        backend = await self.backend()
        gates = await backend.get_gates(GATE_PREFIX)
        registered = [registered_workflow(info) for info in await backend.list_workflows()]
        return limit_usage(gates, registered, self.registry.limits)

    async def list_skipped_ticks(
        self, *, workflow: str | None = None, limit: int = 50
    ) -> list[SkippedTick]:
        """The newest cron ticks that started no run (of ``workflow``, or of every
        workflow), latest tick first: each with its trigger, time and reason. The
        backend keeps the newest 100 of each trigger. ``limit``: 1 to 1000."""
        if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
            raise ConfigurationError(
                f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r}"
            )
        backend = await self.backend()
        return [
            skipped_tick(record) for record in await backend.list_skipped_ticks(workflow, limit)
        ]

    get_run_sync = sync_twin(get_run, "pool")
    get_steps_sync = sync_twin(get_steps, "pool")
    list_runs_sync = sync_twin(list_runs, "pool")
    stats_sync = sync_twin(stats, "pool")
    history_sync = sync_twin(history, "pool")
    list_workflows_sync = sync_twin(list_workflows, "pool")
    limit_usage_sync = sync_twin(limit_usage, "pool")
    list_skipped_ticks_sync = sync_twin(list_skipped_ticks, "pool")

"""``workpool cron skipped``: the skipped cron ticks the backend recorded (issue 23)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.cli.helpers import workpool
from tests.cli.test_inspect_commands import WIDTH, rows, succeeded
from workpool import Cron, RunContext, Workpool
from workpool.clock import ManualClock
from workpool.worker.cron import CronScheduler

START = datetime(2026, 1, 15, 2, 59, tzinfo=UTC).timestamp()


async def _skip_two_ticks(url: str) -> str:
    """Fire poll's minutely trigger at 03:00, skip it at 03:01 and 03:02 (no worker runs
    the first run); return that run's id."""
    clock = ManualClock(START)
    pool = Workpool(url, app="cli-tests", clock=clock)

    @pool.workflow(cron=[Cron("* * * * *", name="minutely")])
    async def poll(ctx: RunContext, _: None) -> None: ...

    try:
        scheduler = CronScheduler(pool.registry, pool.settings, "worker-a")
        backend = await pool.backend()
        for minute in range(4):
            await scheduler.step(backend, START + 60 * minute)
        [run] = (await pool.list_runs(workflow="poll")).runs
    finally:
        await pool.aclose()
    return run.id


async def test_cron_skipped_lists_each_skipped_tick_with_its_trigger_and_reason(
    backend_url: str,
) -> None:
    run_id = await _skip_two_ticks(backend_url)
    listing = succeeded(workpool(backend_url, "cron", "skipped"))
    assert all(len(line) <= WIDTH for line in listing.splitlines())
    assert rows(listing) == [
        ["2026-01-15", "03:02:00", "poll", "minutely", "previous_run_active", run_id],
        ["2026-01-15", "03:01:00", "poll", "minutely", "previous_run_active", run_id],
    ]
    data = json.loads(succeeded(workpool(backend_url, "cron", "skipped", "--json", "--limit", "1")))
    assert data["skipped"] == [
        {
            "workflow": "poll",
            "trigger": "minutely",
            "scheduled_at": "2026-01-15T03:02:00+00:00",
            "reason": "previous_run_active",
            "run_id": run_id,
            "recorded_at": "2026-01-15T03:02:00+00:00",
        }
    ]
    other = workpool(backend_url, "cron", "skipped", "--workflow", "other")
    assert succeeded(other) == "no skipped cron ticks recorded\n"

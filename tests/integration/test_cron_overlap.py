"""End to end: each cron trigger's overlap policy, judged against its own runs only
(issue 23, defect 4), driven by the manual clock on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

from workpool import Cron, RunContext, Workpool
from workpool.clock import ManualClock
from workpool.worker.cron import CronScheduler

BEFORE_THREE = datetime(2026, 1, 15, 2, 59, tzinfo=UTC).timestamp()
"""02:59 UTC in winter: 03:59 in Paris, so both README triggers tick at 03:00 UTC."""


async def _scheduler(pool: Workpool, clock: ManualClock) -> CronScheduler:
    scheduler = CronScheduler(pool.registry, pool.settings, "worker-a")
    await scheduler.step(await pool.backend(), clock.now())  # leads; ticks from 02:59
    return scheduler


async def _step_at(pool: Workpool, scheduler: CronScheduler, clock: ManualClock, at: float) -> None:
    clock.advance(at - clock.now())
    await scheduler.step(await pool.backend(), clock.now())


async def _inputs(pool: Workpool, workflow: str) -> list[object]:
    runs = (await pool.list_runs(workflow=workflow)).runs
    return [run.input for run in reversed(runs)]  # oldest first


async def test_the_readme_triggers_both_fire_at_three_and_neither_shadows_the_other(
    pool: Workpool,
) -> None:
    clock = ManualClock(BEFORE_THREE)
    pool.clock = clock

    @pool.workflow(
        cron=[
            Cron("*/5 * * * *", timezone="Europe/Paris", input={"full": False}),
            Cron("0 3 * * *", input={"full": True}),
        ]
    )
    async def sync_catalog(ctx: RunContext, options: dict[str, bool]) -> None: ...

    scheduler = await _scheduler(pool, clock)
    await _step_at(pool, scheduler, clock, BEFORE_THREE + 60)  # 03:00 UTC: both tick
    assert scheduler.fired == 2
    assert scheduler.skipped == 0
    assert sorted(map(str, await _inputs(pool, "sync_catalog"))) == [
        "{'full': False}",
        "{'full': True}",
    ]
    # No worker runs them: at 03:05 the five-minute trigger's own run still waits, so
    # its tick is skipped and recorded; the nightly run is not what skipped it.
    await _step_at(pool, scheduler, clock, BEFORE_THREE + 360)
    assert (scheduler.fired, scheduler.skipped) == (2, 1)
    [skipped] = await pool.list_skipped_ticks(workflow="sync_catalog")
    assert skipped.trigger == "*/5 * * * * Europe/Paris"
    assert skipped.scheduled_at == datetime(2026, 1, 15, 3, 5, tzinfo=UTC)
    assert skipped.reason == "previous_run_active"
    five_minute_run = (await pool.list_runs(workflow="sync_catalog")).runs
    assert skipped.run_id in {run.id for run in five_minute_run if run.input == {"full": False}}

"""End to end: each cron trigger's overlap policy, judged against its own runs only
(issue 23, defect 4), driven by the manual clock on every backend."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

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
    inputs = await _inputs(pool, "sync_catalog")
    assert sorted(inputs, key=str) == [{"full": False}, {"full": True}]
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


async def test_buffer_one_keeps_one_tick_waiting_and_allow_all_starts_every_tick(
    pool: Workpool,
) -> None:
    clock = ManualClock(BEFORE_THREE)
    pool.clock = clock

    @pool.workflow(cron=[Cron("* * * * *", overlap="buffer_one")])
    async def buffered(ctx: RunContext, _: None) -> None: ...

    @pool.workflow(max_concurrency=2, cron=[Cron("* * * * *", overlap="allow_all")])
    async def every(ctx: RunContext, _: None) -> None: ...

    scheduler = await _scheduler(pool, clock)
    for minute in (1, 2, 3):
        await _step_at(pool, scheduler, clock, BEFORE_THREE + 60 * minute)
    # No worker: buffered's first run never starts, so it is the one buffered run.
    assert len(await _inputs(pool, "buffered")) == 1
    assert len(await _inputs(pool, "every")) == 3
    skipped = await pool.list_skipped_ticks()
    assert [(tick.workflow, tick.reason) for tick in skipped] == [("buffered", "buffer_full")] * 2


async def test_the_warning_of_a_skipped_tick_names_its_trigger(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(BEFORE_THREE)
    pool.clock = clock

    @pool.workflow(cron=[Cron("* * * * *", name="minutely")])
    async def poll(ctx: RunContext, _: None) -> None: ...

    scheduler = await _scheduler(pool, clock)
    await _step_at(pool, scheduler, clock, BEFORE_THREE + 60)
    with caplog.at_level(logging.WARNING, logger="workpool.cron"):
        await _step_at(pool, scheduler, clock, BEFORE_THREE + 120)
    [warning] = [
        record.getMessage() for record in caplog.records if record.levelno == logging.WARNING
    ]
    assert "tick 2026-01-15T03:01:00+00:00 of poll trigger 'minutely' skipped" in warning
    assert "still active" in warning

"""End to end: cron triggers fired by one leader among workers, on every backend."""

from __future__ import annotations

import asyncio
import time

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import Cron, RunContext, Workpool
from workpool.clock import ManualClock
from workpool.worker.cron import CronScheduler

EVERY_SECOND = "* * * * * *"


async def test_five_workers_fire_each_tick_once(pool: Workpool) -> None:
    ticks: list[str] = []

    @pool.workflow(max_concurrency=None, cron=[Cron(EVERY_SECOND, input="tick")])
    async def heartbeat(ctx: RunContext, note: str) -> None:
        ticks.append(ctx.run_id)

    workers = [fast_worker(pool) for _ in range(5)]
    async with workers[0], workers[1], workers[2], workers[3], workers[4]:
        began = time.monotonic()
        await wait_until(lambda: len(ticks) >= 3)
        elapsed = time.monotonic() - began
    leaders = [worker for worker in workers if worker.cron.fired]
    assert len(leaders) == 1
    assert len(ticks) <= elapsed + 2  # one per second, never one per worker
    assert len(set(ticks)) == len(ticks)
    keys = [(await pool.get_run(run_id)).idempotency_key for run_id in ticks]
    assert len(set(keys)) == len(keys)


async def test_a_tick_is_skipped_while_the_triggers_previous_run_is_active(pool: Workpool) -> None:
    release = asyncio.Event()
    started: list[str] = []

    @pool.workflow(max_concurrency=1, cron=[Cron(EVERY_SECOND)])
    async def slow_report(ctx: RunContext, _: None) -> None:
        started.append(ctx.run_id)
        await release.wait()

    async with fast_worker(pool) as worker:
        await wait_until(lambda: worker.cron.skipped >= 2)
        assert len(started) == 1
        release.set()


async def test_a_new_leader_does_not_catch_up_missed_ticks(pool: Workpool) -> None:
    clock = ManualClock()
    pool.clock = clock

    @pool.workflow(max_concurrency=None, cron=[Cron("*/5 * * * *")])
    async def sweep(ctx: RunContext, _: None) -> None: ...

    backend = await pool.backend()
    scheduler = CronScheduler(pool.registry, pool.settings, "worker-a")
    await scheduler.step(backend, clock.now())  # leads; next tick within 5 minutes
    clock.advance(3 * 3600)  # three hours without a step: 36 ticks missed
    await scheduler.step(backend, clock.now())
    await scheduler.step(backend, clock.now())
    assert scheduler.fired == 1  # the one due tick, not 36

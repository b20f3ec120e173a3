"""End to end: a queue's max_parallelism and pause, across several workers."""

from __future__ import annotations

import asyncio

from tests.integration.conftest import fast_worker
from workpool import RunContext, Workpool


async def test_max_parallelism_holds_across_workers(pool: Workpool) -> None:
    pool.queue("partner", max_parallelism=2)
    running = 0
    seen: list[int] = []

    @pool.workflow(queue="partner", max_concurrency=None)
    async def call_partner(ctx: RunContext, n: int) -> int:
        nonlocal running
        running += 1
        seen.append(running)
        await asyncio.sleep(0.02)
        running -= 1
        return n

    handles = [await call_partner.run(n) for n in range(20)]
    workers = [pool.worker(queues=["partner"], concurrency=5) for _ in range(3)]
    async with workers[0], workers[1], workers[2]:
        for handle in handles:
            await handle.result(timeout=20)
    assert max(seen) == 2
    assert (await pool.get_queue("partner")).max_parallelism == 2


async def test_a_paused_queue_finishes_what_runs_and_starts_again_on_resume(
    pool: Workpool,
) -> None:
    started: list[int] = []
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def job(ctx: RunContext, n: int) -> int:
        started.append(n)
        if n == 0:
            await release.wait()
        return n

    first = await job.run(0)
    async with fast_worker(pool):
        for _ in range(500):
            if started:
                break
            await asyncio.sleep(0.01)
        await pool.pause("default")
        later = [await job.run(n) for n in range(1, 4)]
        release.set()
        assert await first.result(timeout=10) == 0  # a running run finishes while paused
        await asyncio.sleep(0.5)
        assert started == [0]
        await pool.resume("default")
        assert [await handle.result(timeout=10) for handle in later] == [1, 2, 3]

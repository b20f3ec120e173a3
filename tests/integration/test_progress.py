"""End to end: a handler reports progress; callers read the latest, on every backend."""

from __future__ import annotations

import asyncio
import threading

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import PayloadError, RetryPolicy, RunContext, Workpool


async def test_callers_read_the_latest_progress_while_the_run_goes_on(pool: Workpool) -> None:
    go_on = asyncio.Event()

    @pool.workflow()
    async def importer(ctx: RunContext, rows: int) -> int:
        for done in range(1, rows + 1):
            await ctx.set_progress({"done": done, "of": rows})
        await go_on.wait()
        await ctx.set_progress({"done": rows, "of": rows, "phase": "finished"})
        return rows

    handle = await importer.run(3)
    assert await handle.progress() is None
    async with fast_worker(pool):
        await wait_until(lambda: handle.progress(), limit=10)
        assert await handle.progress() == {"done": 3, "of": 3}
        assert (await pool.get_run(handle.id)).progress == {"done": 3, "of": 3}
        go_on.set()
        assert await handle.result(timeout=10) == 3
    # The last value, reported just before the run ended, is stored with its outcome.
    assert await handle.progress() == {"done": 3, "of": 3, "phase": "finished"}


async def test_a_sync_handler_reports_progress_from_its_thread(pool: Workpool) -> None:
    go_on = threading.Event()

    @pool.workflow()
    def resize(ctx: RunContext, images: int) -> str:
        ctx.set_progress_sync(f"{images} images queued")
        go_on.wait(20)
        return "done"

    handle = await resize.run(4)
    async with fast_worker(pool):
        await wait_until(lambda: handle.progress(), limit=10)
        assert await handle.progress() == "4 images queued"
        go_on.set()
        await handle.result(timeout=10)
    assert await asyncio.to_thread(handle.progress_sync) == "4 images queued"


async def test_progress_that_cannot_be_stored_is_refused_in_the_handler(pool: Workpool) -> None:
    refused: list[str] = []

    @pool.workflow()
    async def careless(ctx: RunContext, value: int) -> int:
        for bad in (float("nan"), "x" * (pool.max_payload_bytes + 1), {1, 2}):
            try:
                await ctx.set_progress(bad)
            except PayloadError as error:
                refused.append(str(error))
        await ctx.set_progress("fine")
        return value

    handle = await careless.run(1)
    async with fast_worker(pool):
        await handle.result(timeout=10)
    assert len(refused) == 3
    assert all("progress of run" in message for message in refused)
    assert await handle.progress() == "fine"


async def test_a_retry_keeps_the_progress_until_it_reports_its_own(pool: Workpool) -> None:
    @pool.workflow(retries=RetryPolicy(max_attempts=2, initial_backoff=0.01))
    async def twice(ctx: RunContext, value: int) -> int:
        if ctx.attempt == 1:
            await ctx.set_progress("first attempt got halfway")
            raise ConnectionError("flaky")
        return value

    handle = await twice.run(1)
    async with fast_worker(pool):
        await handle.result(timeout=10)
    assert await handle.progress() == "first attempt got halfway"

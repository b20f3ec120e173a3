"""The synchronous twins, called from plain threads with no event loop."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import Finished, Pending, RunCanceledError, RunContext, Success, Workpool


async def test_sync_twins_work_without_an_event_loop(pool: Workpool) -> None:
    @pool.workflow()
    async def add_one(ctx: RunContext, value: int) -> int:
        return value + 1

    def plain_script() -> None:
        handle = add_one.run_sync(1)
        assert handle.result_sync(timeout=10) == 2
        assert handle.status_sync() == Finished(Success(output=2))
        by_name = pool.run_by_name_sync("add_one", 10)
        assert by_name.result_sync(timeout=10) == 11
        assert pool.get_run_sync(by_name.id).output == 11
        batch = pool.enqueue_many_sync([add_one.prepare(n) for n in range(3)])
        assert [h.result_sync(timeout=10) for h in batch] == [1, 2, 3]
        later = add_one.run_sync(5, run_after=timedelta(minutes=5))
        assert later.status_sync() == Pending(previous_attempts=0)
        later.cancel_sync("no")
        with pytest.raises(RunCanceledError):
            later.result_sync(timeout=5)
        assert pool.cancel_sync(later.id) == "finished"
        assert pool.cancel_all_sync() == 0

    async with fast_worker(pool):
        await asyncio.to_thread(plain_script)

"""The claim loop of a worker whose slots are all taken waits; it does not spin."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from tests.integration.conftest import fast_worker
from workpool import RetryPolicy, RunContext, Workpool
from workpool.backends.base import ClaimResult

LATER = RetryPolicy(max_attempts=2, initial_backoff=timedelta(seconds=60))


async def test_a_full_worker_told_of_a_retry_does_not_spin(pool: Workpool) -> None:
    cpu_used: list[float] = []

    @pool.workflow(retries=LATER)
    async def fails_once(ctx: RunContext, _: None) -> None:
        raise ConnectionError("try again in a minute")

    @pool.workflow()
    async def holds_the_slot(ctx: RunContext, failing_run: str) -> None:
        # Once the retry is written, the finisher has told the claimer about it, after
        # this run took the worker's only slot.
        for _ in range(500):
            if (await pool.get_run(failing_run)).status == "scheduled":
                break
            await asyncio.sleep(0.01)
        started = time.process_time()
        await asyncio.sleep(0.5)
        cpu_used.append(time.process_time() - started)

    failing = await fails_once.run(None)
    holder = await holds_the_slot.run(failing.id)
    async with fast_worker(pool, concurrency=1):
        await holder.result(timeout=10)
    # Idle, the process needs a few ms of CPU in 0.5 s; a spinning claim loop, all of it.
    assert cpu_used[0] < 0.2, f"the worker used {cpu_used[0]:.2f} s of CPU while waiting"


async def test_a_stop_during_a_claim_starts_or_hands_back_what_the_claim_took(
    pool: Workpool,
) -> None:
    """A claim is one atomic backend operation: once sent, it commits even if the worker
    stops waiting for its reply. The worker must take its runs, not leave them running
    under a lease nobody renews."""

    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, value: int) -> int:
        await asyncio.sleep(0.05)
        return value

    backend = await pool.backend()  # the backend the worker will use on this loop
    real_claim = backend.claim
    committed, deliver = asyncio.Event(), asyncio.Event()

    async def slow_reply(*args: Any, **kwargs: Any) -> ClaimResult:
        result = await real_claim(*args, **kwargs)  # done in the store
        if result.runs:
            committed.set()
            await deliver.wait()  # its reply still on its way
        return result

    backend.claim = slow_reply  # type: ignore[method-assign]
    worker = fast_worker(pool)
    async with worker:
        handles = await pool.enqueue_many([chore.prepare(n) for n in range(3)])
        await asyncio.wait_for(committed.wait(), timeout=10)
        worker.stop()
        await asyncio.sleep(0.1)
        deliver.set()
    runs = [await pool.get_run(handle.id) for handle in handles]
    assert {run.status for run in runs} <= {"succeeded", "queued"}, runs
    assert all(run.executions <= 1 for run in runs)


async def test_a_worker_with_few_slots_fills_them_all_with_one_claim(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, value: int) -> int:
        return value

    backend = await pool.backend()  # the backend the worker will use on this loop
    real_claim = backend.claim
    sizes: list[int] = []

    async def counted(*args: Any, **kwargs: Any) -> ClaimResult:
        result = await real_claim(*args, **kwargs)
        sizes.append(len(result.runs))
        return result

    backend.claim = counted  # type: ignore[method-assign]
    handles = await pool.enqueue_many([chore.prepare(n) for n in range(40)])
    async with fast_worker(pool, concurrency=10):
        for handle in handles:
            await handle.result(timeout=20)
    assert max(sizes) == 10  # not a quarter of the slots: a claim per two runs drained slowly
    assert sum(sizes) == 40

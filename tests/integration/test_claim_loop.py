"""The claim loop of a worker whose slots are all taken waits; it does not spin."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

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


async def claim_sizes(pool: Workpool) -> list[int]:
    """The number of runs each claim of the pool's backend (on this loop) returns, as
    the worker makes them."""
    backend = await pool.backend()  # the backend the worker will use on this loop
    real_claim = backend.claim
    sizes: list[int] = []

    async def counted(*args: Any, **kwargs: Any) -> ClaimResult:
        result = await real_claim(*args, **kwargs)
        sizes.append(len(result.runs))
        return result

    backend.claim = counted  # type: ignore[method-assign]
    return sizes


async def test_a_worker_with_few_slots_fills_them_all_with_one_claim(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, value: int) -> int:
        return value

    sizes = await claim_sizes(pool)
    handles = await pool.enqueue_many([chore.prepare(n) for n in range(40)])
    async with fast_worker(pool, concurrency=10):
        for handle in handles:
            await handle.result(timeout=20)
    assert sizes[0] == 10  # not a quarter of the slots: a claim per two runs drained slowly
    assert sum(sizes) == 40


@pytest.mark.parametrize("claim_ahead", [True, False])
async def test_a_worker_draining_short_runs_claims_ahead_but_runs_no_more_than_its_slots(
    pool: Workpool, claim_ahead: bool
) -> None:
    running = 0
    most_at_once = 0

    @pool.workflow(max_concurrency=None)
    async def chore(ctx: RunContext, value: int) -> int:
        nonlocal running, most_at_once
        running += 1
        most_at_once = max(most_at_once, running)
        await asyncio.sleep(0)
        running -= 1
        return value

    sizes = await claim_sizes(pool)
    handles = await pool.enqueue_many([chore.prepare(n) for n in range(300)])
    async with fast_worker(pool, concurrency=2, claim_ahead=claim_ahead):
        for handle in handles:
            await handle.result(timeout=30)
    # Claims of more runs than slots: the next runs were ready when slots freed.
    assert (max(sizes) > 2) is claim_ahead, sizes
    assert most_at_once <= 2


async def test_runs_held_ahead_behind_a_slow_run_are_handed_back_to_other_workers(
    pool: Workpool,
) -> None:
    slow_started, release_slow = asyncio.Event(), asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def quick(ctx: RunContext, value: int) -> int:
        return value

    @pool.workflow(max_concurrency=None)
    async def slow(ctx: RunContext, _: None) -> None:
        slow_started.set()
        await asyncio.wait_for(release_slow.wait(), timeout=60)

    before = await pool.enqueue_many([quick.prepare(n) for n in range(200)])
    slow_run = await slow.run(None)
    after = await pool.enqueue_many([quick.prepare(n) for n in range(200)])
    first = fast_worker(pool, concurrency=1)  # max_hold: a quarter of its 2 s lease
    async with first:
        await asyncio.wait_for(slow_started.wait(), timeout=30)
        # Its only slot is taken until the test says; what it claimed ahead meanwhile
        # must not wait for that.
        async with fast_worker(pool, concurrency=5):
            for handle in [*before, *after]:
                assert await handle.result(timeout=30) is not None
            assert first.held_ahead == 0
            assert (await pool.get_run(slow_run.id)).status == "running"
            release_slow.set()
            await slow_run.result(timeout=10)
    # Runs handed back before they began did not spend an attempt.
    for handle in after:
        assert (await pool.get_run(handle.id)).attempts == 1

"""Group commit: concurrent enqueues on one pool share backend operations.

Each test counts the backend's ``enqueue`` calls by wrapping the real method of the
pool's own backend instance (the calls still reach the real store).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from workpool import RunContext, RunHandle, Workflow, Workpool
from workpool.backends.base import Backend, Enqueued, NewRun
from workpool.definitions import PreparedRun, RunOptions

CALLERS = 100


class EnqueueCounter:
    """Counts the calls and runs that reach ``backend.enqueue``."""

    def __init__(self, backend: Backend) -> None:
        self.calls: list[int] = []
        real = backend.enqueue

        async def counted(runs: Sequence[NewRun], now: float) -> list[Enqueued]:
            self.calls.append(len(runs))
            return await real(runs, now)

        backend.enqueue = counted  # type: ignore[method-assign, assignment]


def define_take(pool: Workpool) -> Workflow[int, int]:
    @pool.workflow()
    async def take(ctx: RunContext, value: int) -> int:
        return value

    return take


async def test_concurrent_runs_are_all_stored_in_fewer_operations(pool: Workpool) -> None:
    take = define_take(pool)
    counter = EnqueueCounter(await pool.backend())

    handles = await asyncio.gather(*(take.run(number) for number in range(CALLERS)))

    assert len({handle.id for handle in handles}) == CALLERS
    for number, handle in enumerate(handles):
        run = await pool.get_run(handle.id)
        assert (run.id, run.input, run.status) == (handle.id, number, "queued")
    assert sum(counter.calls) == CALLERS
    assert len(counter.calls) < CALLERS / 10, counter.calls


async def test_a_lone_caller_writes_at_once_in_one_operation(pool: Workpool) -> None:
    take = define_take(pool)
    counter = EnqueueCounter(await pool.backend())

    for number in range(3):
        handle = await take.run(number)
        assert (await pool.get_run(handle.id)).input == number

    assert counter.calls == [1, 1, 1]


async def test_concurrent_callers_with_one_idempotency_key_get_one_run(pool: Workpool) -> None:
    take = define_take(pool)
    counter = EnqueueCounter(await pool.backend())

    handles = await asyncio.gather(
        *(take.run(number, idempotency_key="order-7") for number in range(20))
    )

    assert {handle.id for handle in handles} == {handles[0].id}
    assert (await pool.get_run(handles[0].id)).input == 0
    assert len((await pool.list_runs()).runs) == 1
    assert len(counter.calls) < 20


async def test_a_run_the_backend_refuses_fails_its_caller_alone(pool: Workpool) -> None:
    take = define_take(pool)
    counter = EnqueueCounter(await pool.backend())
    refused = PreparedRun("take", '"\ud800"', RunOptions(), take)  # no store takes it

    async def bad_caller() -> RunHandle[Any]:
        return (await pool.enqueue_many([refused]))[0]

    results = await asyncio.gather(
        *(take.run(number) for number in range(10)),
        bad_caller(),
        *(take.run(number) for number in range(10, 20)),
        return_exceptions=True,
    )

    errors = [result for result in results if isinstance(result, BaseException)]
    assert len(errors) == 1
    assert isinstance(errors[0], ValueError)
    assert results[10] is errors[0]
    handles = [result for result in results if not isinstance(result, BaseException)]
    stored = [await pool.get_run(handle.id) for handle in handles]
    assert sorted(run.input for run in stored) == list(range(20))
    assert len((await pool.list_runs()).runs) == 20
    assert sum(counter.calls) > 21  # the refused batch was written again, caller by caller


async def test_invalid_input_fails_in_its_caller_before_any_batch(pool: Workpool) -> None:
    take = define_take(pool)

    results = await asyncio.gather(
        take.run(1),
        take.run("not a number"),  # type: ignore[arg-type]
        take.run(3),
        return_exceptions=True,
    )

    assert isinstance(results[1], ValueError)  # pydantic's ValidationError
    handles = [result for result in results if not isinstance(result, BaseException)]
    assert [(await pool.get_run(handle.id)).input for handle in handles] == [1, 3]


async def test_a_cancelled_caller_does_not_cancel_the_others(pool: Workpool) -> None:
    take = define_take(pool)
    backend = await pool.backend()
    real = backend.enqueue
    first_write_started, release = asyncio.Event(), asyncio.Event()

    async def held(runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        first_write_started.set()
        await release.wait()  # keeps the first write in flight while others queue
        return await real(runs, now)

    backend.enqueue = held  # type: ignore[method-assign, assignment]
    first = asyncio.create_task(take.run(0))
    await first_write_started.wait()
    waiting = [asyncio.create_task(take.run(number)) for number in range(1, 11)]
    for _ in range(3):
        await asyncio.sleep(0)  # each waiting caller reaches the queue (no I/O before it)
    assert not any(task.done() for task in waiting)
    waiting[3].cancel()
    release.set()

    handles = await asyncio.gather(first, *waiting, return_exceptions=True)

    assert isinstance(handles[4], asyncio.CancelledError)
    good = [handle for handle in handles if not isinstance(handle, BaseException)]
    inputs = sorted([(await pool.get_run(handle.id)).input for handle in good])
    assert inputs == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]


def test_threads_calling_run_sync_are_batched_too(backend_url: str) -> None:
    pool = Workpool(backend_url, app="tests")
    try:
        take = define_take(pool)
        counter = EnqueueCounter(pool.portal.call(pool.backend(), "pool.backend"))
        barrier = threading.Barrier(CALLERS)
        handles: dict[int, Any] = {}

        def caller(number: int) -> None:
            barrier.wait()
            handles[number] = take.run_sync(number)

        threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(handles) == CALLERS
        for number, handle in handles.items():
            assert pool.get_run_sync(handle.id).input == number
        assert sum(counter.calls) == CALLERS
        assert len(counter.calls) < CALLERS, counter.calls
    finally:
        pool.close()


@pytest.mark.parametrize("size", [1, 499, 500, 501, 1200])
async def test_batches_are_bounded(pool: Workpool, size: int) -> None:
    take = define_take(pool)
    counter = EnqueueCounter(await pool.backend())

    handles = await asyncio.gather(*(take.run(number) for number in range(size)))

    assert len({handle.id for handle in handles}) == size
    assert sum(counter.calls) == size
    assert max(counter.calls) <= 500

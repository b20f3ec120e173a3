"""EnqueueBatcher over a recording write function: who writes what, and when."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from tests.conformance.helpers import new_run
from tests.polling import wait_until
from workpool.backends.base import Enqueued, NewRun
from workpool.coalescing import EnqueueBatcher


class Store:
    """Records each write; writes wait on ``gate`` while it is closed."""

    def __init__(self) -> None:
        self.writes: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.refuse: set[str] = set()

    async def write(self, runs: Sequence[NewRun], now: float) -> list[Enqueued]:
        self.writes.append([run.id for run in runs])
        await self.gate.wait()
        refused = [run.id for run in runs if run.id in self.refuse]
        if refused:
            raise ValueError(f"run {refused[0]}: refused")
        return [Enqueued(run.id, True) for run in runs]


def runs(count: int) -> list[NewRun]:
    return [new_run(1_700_000_000.0) for _ in range(count)]


async def test_a_lone_caller_writes_in_its_own_call() -> None:
    store = Store()
    batcher = EnqueueBatcher(store.write)
    [run] = runs(1)

    assert await batcher.enqueue([run], 1.0) == [Enqueued(run.id, True)]
    assert store.writes == [[run.id]]


async def test_callers_during_a_write_go_together_up_to_the_bound() -> None:
    store = Store()
    batcher = EnqueueBatcher(store.write, max_runs=5)
    store.gate.clear()
    first, *others = runs(13)
    leader = asyncio.create_task(batcher.enqueue([first], 1.0))
    await asyncio.sleep(0)
    followers = [asyncio.create_task(batcher.enqueue([run], 1.0)) for run in others]
    await asyncio.sleep(0)
    store.gate.set()

    results = await asyncio.gather(leader, *followers)

    assert [result[0].run_id for result in results] == [first.id] + [run.id for run in others]
    assert [len(write) for write in store.writes] == [1, 5, 5, 2]


async def test_a_refused_batch_is_written_again_caller_by_caller() -> None:
    store = Store()
    batcher = EnqueueBatcher(store.write)
    store.gate.clear()
    first, good, bad, other = runs(4)
    store.refuse.add(bad.id)
    tasks = [asyncio.create_task(batcher.enqueue([run], 1.0)) for run in (first, good, bad, other)]
    await asyncio.sleep(0)
    store.gate.set()

    results = await asyncio.gather(*tasks, return_exceptions=True)

    assert results[0] == [Enqueued(first.id, True)]
    assert results[1] == [Enqueued(good.id, True)]
    assert isinstance(results[2], ValueError)
    assert results[3] == [Enqueued(other.id, True)]
    assert store.writes[1] == [good.id, bad.id, other.id]  # refused, then one by one


async def test_a_caller_cancelled_before_its_write_is_not_written() -> None:
    store = Store()
    batcher = EnqueueBatcher(store.write)
    store.gate.clear()
    first, dropped, kept = runs(3)
    tasks = [asyncio.create_task(batcher.enqueue([run], 1.0)) for run in (first, dropped, kept)]
    await asyncio.sleep(0)
    tasks[1].cancel()
    store.gate.set()

    results = await asyncio.gather(*tasks, return_exceptions=True)

    assert isinstance(results[1], asyncio.CancelledError)
    assert store.writes == [[first.id], [kept.id]]


async def test_a_cancelled_writer_cancels_its_waiters_instead_of_leaving_them() -> None:
    writes: list[int] = []
    first_write, later_writes = asyncio.Event(), asyncio.Event()

    async def write(batch: Sequence[NewRun], now: float) -> list[Enqueued]:
        writes.append(len(batch))
        await (first_write if len(writes) == 1 else later_writes).wait()
        return [Enqueued(run.id, True) for run in batch]

    batcher = EnqueueBatcher(write)
    first, second, third = runs(3)
    leader = asyncio.create_task(batcher.enqueue([first], 1.0))
    await asyncio.sleep(0)
    waiters = [asyncio.create_task(batcher.enqueue([run], 1.0)) for run in (second, third)]
    await asyncio.sleep(0)
    first_write.set()
    await leader
    await wait_until(lambda: writes == [1, 2])  # the writer task is inside its write
    writer = next(task for task in asyncio.all_tasks() if task.get_name().startswith("workpool"))
    writer.cancel()

    for waiter in waiters:
        with pytest.raises(asyncio.CancelledError):
            await waiter
    later_writes.set()
    assert await batcher.enqueue(runs(1), 1.0)  # the batcher still works

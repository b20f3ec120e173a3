"""End to end: list_runs shows the runs one process made newest first, exactly (issue 12)."""

from __future__ import annotations

from tests.integration.conftest import fast_worker
from workpool import RunContext, Workpool
from workpool.clock import ManualClock

RUNS = 1000


async def listed_ids(pool: Workpool) -> list[str]:
    """Every run's id as list_runs pages through them, newest first."""
    seen: list[str] = []
    cursor = None
    while True:
        page = await pool.list_runs(limit=300, cursor=cursor)
        seen += [run.id for run in page.runs]
        if page.cursor is None:
            return seen
        cursor = page.cursor


async def test_runs_enqueued_one_after_another_list_in_reverse_creation_order(
    pool: Workpool,
) -> None:
    @pool.workflow(max_concurrency=None)
    async def record(ctx: RunContext, n: int) -> None: ...

    made = [(await record.run(n)).id for n in range(RUNS)]
    assert await listed_ids(pool) == made[::-1]


async def test_runs_made_in_one_millisecond_list_in_reverse_creation_order(
    pool: Workpool,
) -> None:
    """The clock stands still (a fast machine, a coarse clock): order must still hold."""
    pool.clock = ManualClock()

    @pool.workflow(max_concurrency=None)
    async def record(ctx: RunContext, n: int) -> None: ...

    made = [(await record.run(n)).id for n in range(RUNS)]
    assert await listed_ids(pool) == made[::-1]
    assert [run.input for run in (await pool.list_runs(limit=3)).runs] == [999, 998, 997]


async def test_runs_of_one_batch_list_in_reverse_input_order(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None)
    async def record(ctx: RunContext, n: int) -> None: ...

    handles = await pool.enqueue_many([record.prepare(n) for n in range(RUNS)])
    assert await listed_ids(pool) == [handle.id for handle in handles][::-1]


async def test_order_holds_when_the_clock_steps_back(pool: Workpool) -> None:
    clock = ManualClock()
    pool.clock = clock

    @pool.workflow(max_concurrency=None)
    async def record(ctx: RunContext, n: int) -> None: ...

    made = [(await record.run(n)).id for n in range(10)]
    clock.advance(-5.0)  # NTP corrects the clock by five seconds
    made += [(await record.run(n)).id for n in range(10, 20)]
    assert await listed_ids(pool) == made[::-1]


async def test_reruns_list_after_the_runs_they_retry(pool: Workpool) -> None:
    """retry_run makes its ids with the same generator: newer than everything before."""
    pool.clock = ManualClock()

    @pool.workflow(max_concurrency=None)
    async def record(ctx: RunContext, n: int) -> None: ...

    made = []
    for n in range(50):
        handle = await record.run(n)
        await handle.cancel("to retry it")
        made += [handle.id, (await pool.retry_run(handle.id)).id]
    assert await listed_ids(pool) == made[::-1]


async def test_children_of_a_run_list_in_the_order_it_made_them(pool: Workpool) -> None:
    """The engine makes child run ids with the same generator (the clock stands still)."""
    pool.clock = ManualClock()

    @pool.workflow(max_concurrency=None)
    async def child(ctx: RunContext, n: int) -> None: ...

    @pool.workflow(max_concurrency=None)
    async def parent(ctx: RunContext, count: int) -> list[str]:
        return [await ctx.step.emit_workflow(f"child-{n}", child, n) for n in range(count)]

    handle = await parent.run(50)
    async with fast_worker(pool):
        children = await handle.result(timeout=20)
    listed = await listed_ids(pool)
    assert [run_id for run_id in listed if run_id in children] == children[::-1]
    assert listed.index(handle.id) == len(listed) - 1  # the parent came first

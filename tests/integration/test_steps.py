"""End to end: ctx.step on every backend, with in-process workers."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import (
    ConfigurationError,
    DuplicateStepError,
    RetryPolicy,
    RunCanceledError,
    RunContext,
    RunFailedError,
    Running,
    StepTimeoutError,
    Workpool,
)

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=10))


async def wait_for(predicate: collections.abc.Callable[[], bool], seconds: float = 10) -> None:
    """Poll until ``predicate()`` holds."""
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


async def test_a_retry_replays_completed_steps_from_their_saved_results(pool: Workpool) -> None:
    calls: collections.Counter[str] = collections.Counter()

    def reserve(item: str) -> dict[str, str]:
        calls["reserve"] += 1
        return {"reservation": f"r-{item}"}

    async def charge(amount: float) -> float:
        calls["charge"] += 1
        return amount

    @pool.workflow(retries=QUICK_RETRY)
    async def order(ctx: RunContext, item: str) -> list[object]:
        reservation = await ctx.step.run("reserve", reserve, item)
        paid = await ctx.step.run("charge", charge, 12.5)
        calls[f"attempt-{ctx.attempt}"] += 1
        if ctx.attempt == 1:
            raise ConnectionError("the shipping API is down")
        shipped = await ctx.step.run("ship", lambda: "shipped")
        return [reservation, paid, shipped]

    handle = await order.run("book")
    async with fast_worker(pool):
        result = await handle.result(timeout=10)
    assert result == [{"reservation": "r-book"}, 12.5, "shipped"]
    assert calls == {"reserve": 1, "charge": 1, "attempt-1": 1, "attempt-2": 1}
    steps = await pool.get_steps(handle.id)
    assert [(s.name, s.kind, s.status, s.attempts, s.output) for s in steps] == [
        ("reserve", "run", "succeeded", 1, {"reservation": "r-book"}),
        ("charge", "run", "succeeded", 1, 12.5),
        ("ship", "run", "succeeded", 1, "shipped"),
    ]
    assert all(s.finished_at is not None and s.finished_at >= s.started_at for s in steps)


async def test_a_failing_step_caches_nothing_and_runs_again_on_retry(pool: Workpool) -> None:
    calls: list[int] = []

    @pool.workflow(retries=QUICK_RETRY)
    async def flaky(ctx: RunContext, _: None) -> int:
        def attempt() -> int:
            calls.append(ctx.attempt)
            if ctx.attempt == 1:
                raise TimeoutError("upstream slow")
            return 7

        return int(await ctx.step.run("fetch", attempt))

    handle = await flaky.run(None)
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == 7
    assert calls == [1, 2]
    [step] = await pool.get_steps(handle.id)
    assert (step.status, step.attempts, step.output, step.error) == ("succeeded", 2, 7, None)


async def test_a_step_name_used_twice_fails_the_run_without_retry(pool: Workpool) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    async def looping(ctx: RunContext, _: None) -> None:
        for _attempt in range(2):
            with contextlib.suppress(DuplicateStepError):  # swallowing it does not help
                await ctx.step.run("same", lambda: 1)

    handle = await looping.run(None)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError, match="twice"):
            await handle.result(timeout=10)
    run = await pool.get_run(handle.id)
    assert run.attempts == 1
    assert run.error is not None
    assert run.error.type == "DuplicateStepError"


async def test_a_step_over_its_timeout_raises(pool: Workpool) -> None:
    @pool.workflow()
    async def slow(ctx: RunContext, _: None) -> str:
        try:
            await ctx.step.run("wait", asyncio.sleep, 5, timeout=0.05)
        except StepTimeoutError as error:
            return str(error)
        return "no timeout"

    handle = await slow.run(None)
    async with fast_worker(pool):
        assert "timeout of 0.05 s" in await handle.result(timeout=10)
    [step] = await pool.get_steps(handle.id)
    assert step.status == "failed"
    assert step.error is not None
    assert step.error.type == "StepTimeoutError"


async def test_a_cancel_interrupts_a_running_step(pool: Workpool) -> None:
    started = asyncio.Event()

    @pool.workflow()
    async def long(ctx: RunContext, _: None) -> None:
        async def forever() -> None:
            started.set()
            await asyncio.sleep(60)

        await ctx.step.run("forever", forever)

    handle = await long.run(None)
    async with fast_worker(pool):
        await asyncio.wait_for(started.wait(), 10)
        await handle.cancel("enough")
        with pytest.raises(RunCanceledError, match="enough"):
            await handle.result(timeout=10)


async def test_children_return_outputs_and_raise_failures_and_cancels(pool: Workpool) -> None:
    @pool.workflow()
    async def double(ctx: RunContext, n: int) -> int:
        return n * 2

    @pool.workflow()
    async def broken(ctx: RunContext, _: None) -> None:
        raise ValueError("no stock")

    @pool.workflow()
    async def stuck(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(60)

    @pool.workflow()
    async def parent(ctx: RunContext, _: None) -> dict[str, object]:
        outcome: dict[str, object] = {"double": await ctx.step.run_workflow("d", double, 21)}
        try:
            await ctx.step.run_workflow("b", "broken", None)
        except RunFailedError as error:
            outcome["broken"] = [error.error.type, error.error.message]
        try:
            await ctx.step.run_workflow("s", stuck, None)
        except RunCanceledError as error:
            outcome["stuck"] = error.reason
        return outcome

    handle = await parent.run(None)
    async with fast_worker(pool):
        for _ in range(500):
            run = await pool.get_run(handle.id)
            if len(run.children) == 3:
                break
            await asyncio.sleep(0.02)
        stuck_child = (await pool.get_run(handle.id)).children[2]
        await pool.cancel(stuck_child, "supplier gone")
        result = await handle.result(timeout=10)
    assert result == {"double": 42, "broken": ["ValueError", "no stock"], "stuck": "supplier gone"}
    run = await pool.get_run(handle.id)
    children = [await pool.get_run(child) for child in run.children]
    assert [c.workflow for c in children] == ["double", "broken", "stuck"]
    assert {c.parent_run_id for c in children} == {handle.id}
    steps = await pool.get_steps(handle.id)
    assert [(s.kind, s.status, s.child_run_id) for s in steps] == [
        ("workflow", "succeeded", run.children[0]),
        ("workflow", "failed", run.children[1]),
        ("workflow", "canceled", run.children[2]),
    ]


async def test_a_waiting_parent_is_suspended_and_reported_running(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow()
    async def gate(ctx: RunContext, _: None) -> str:
        await release.wait()
        return "open"

    @pool.workflow()
    async def waiter(ctx: RunContext, _: None) -> str:
        return str(await ctx.step.run_workflow("gate", gate, None))

    handle = await waiter.run(None)
    async with fast_worker(pool, concurrency=1):  # the parent's slot must be given up
        for _ in range(500):
            if (await pool.get_run(handle.id)).status == "suspended":
                break
            await asyncio.sleep(0.02)
        assert (await pool.get_run(handle.id)).status == "suspended"
        assert isinstance(await handle.status(), Running)
        release.set()
        assert await handle.result(timeout=10) == "open"


async def test_concurrency_one_completes_a_chain_of_three_generations(pool: Workpool) -> None:
    @pool.workflow()
    async def grandchild(ctx: RunContext, n: int) -> int:
        return n + 1

    @pool.workflow()
    async def child(ctx: RunContext, n: int) -> int:
        return int(await ctx.step.run_workflow("g", grandchild, n)) * 10

    @pool.workflow()
    async def root(ctx: RunContext, n: int) -> int:
        return int(await ctx.step.run_workflow("c", child, n)) + 5

    handle = await root.run(1)
    async with fast_worker(pool, concurrency=1):
        assert await handle.result(timeout=20) == 25


async def test_concurrency_one_completes_a_fan_out_to_fifty_children(pool: Workpool) -> None:
    @pool.workflow()
    async def square(ctx: RunContext, n: int) -> int:
        return n * n

    @pool.workflow()
    async def fan_out(ctx: RunContext, count: int) -> int:
        values = await asyncio.gather(
            *(ctx.step.run_workflow(f"square-{i}", square, i) for i in range(count))
        )
        return sum(values)

    handle = await fan_out.run(50)
    async with fast_worker(pool, concurrency=1):
        assert await handle.result(timeout=60) == sum(i * i for i in range(50))
    assert len((await pool.get_run(handle.id)).children) == 50


async def test_an_emitted_child_is_enqueued_once_across_replays(pool: Workpool) -> None:
    ran: list[str] = []

    @pool.workflow()
    async def audit(ctx: RunContext, note: str) -> None:
        ran.append(note)

    @pool.workflow(retries=QUICK_RETRY)
    async def emitter(ctx: RunContext, _: None) -> str:
        child_id = await ctx.step.emit_workflow("audit", audit, "placed")
        if ctx.attempt < 3:
            raise ConnectionError("fail after emitting")
        return child_id

    handle = await emitter.run(None)
    async with fast_worker(pool):
        child_id = await handle.result(timeout=10)
        await wait_for(lambda: len(ran) >= 1)
        await asyncio.sleep(0.2)
    assert ran == ["placed"]
    run = await pool.get_run(handle.id)
    assert run.children == (child_id,)
    assert (await pool.get_run(child_id)).parent_run_id == handle.id


async def test_canceling_a_parent_cancels_awaited_children_but_not_emitted_ones(
    pool: Workpool,
) -> None:
    @pool.workflow()
    async def slow_child(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(60)

    @pool.workflow()
    async def side_job(ctx: RunContext, _: None) -> None:
        await asyncio.sleep(60)

    @pool.workflow()
    async def boss(ctx: RunContext, _: None) -> None:
        await ctx.step.emit_workflow("side", side_job, None)
        await ctx.step.run_workflow("slow", slow_child, None)

    handle = await boss.run(None)
    async with fast_worker(pool):
        for _ in range(500):
            if (await pool.get_run(handle.id)).status == "suspended":
                break
            await asyncio.sleep(0.02)
        side_id, slow_id = (await pool.get_run(handle.id)).children
        assert await pool.cancel(handle.id, "order withdrawn") == "canceled"
        with pytest.raises(RunCanceledError):
            await pool.handle(slow_id).result(timeout=10)
        assert (await pool.get_run(side_id)).status == "running"
        await pool.cancel(side_id)


async def test_a_sleep_suspends_and_resumes_without_redoing_steps(pool: Workpool) -> None:
    calls: list[str] = []

    @pool.workflow()
    async def napper(ctx: RunContext, _: None) -> str:
        await ctx.step.run("before", lambda: calls.append("before"))
        await ctx.step.sleep("nap", timedelta(seconds=0.8))
        await ctx.step.run("after", lambda: calls.append("after"))
        return "rested"

    handle = await napper.run(None)
    async with fast_worker(pool, concurrency=1):
        for _ in range(200):
            if (await pool.get_run(handle.id)).status == "suspended":
                break
            await asyncio.sleep(0.02)
        assert (await pool.get_run(handle.id)).status == "suspended"
        assert await handle.result(timeout=10) == "rested"
    assert calls == ["before", "after"]
    nap = (await pool.get_steps(handle.id))[1]
    assert (nap.name, nap.kind, nap.status) == ("nap", "sleep", "succeeded")


async def test_sync_handlers_are_told_that_steps_need_async(pool: Workpool) -> None:
    @pool.workflow()
    def plain(ctx: RunContext, _: None) -> None:
        ctx.step  # noqa: B018 - the access itself raises

    handle = await plain.run(None)
    async with fast_worker(pool):
        with pytest.raises(RunFailedError, match="async"):
            await handle.result(timeout=10)
    run = await pool.get_run(handle.id)
    assert run.error is not None
    assert run.error.type == ConfigurationError.__name__


async def test_waiting_for_a_child_past_its_timeout_raises_and_leaves_it_running(
    pool: Workpool,
) -> None:
    release = asyncio.Event()

    @pool.workflow()
    async def slow_supplier(ctx: RunContext, _: None) -> str:
        await release.wait()
        return "late"

    @pool.workflow()
    async def impatient(ctx: RunContext, _: None) -> str:
        try:
            return str(await ctx.step.run_workflow("quote", slow_supplier, None, timeout=0.6))
        except StepTimeoutError as error:
            return f"gave up: {error}"

    handle = await impatient.run(None)
    async with fast_worker(pool, concurrency=2):
        outcome = await handle.result(timeout=10)
        assert outcome.startswith("gave up")
        [child_id] = (await pool.get_run(handle.id)).children
        assert (await pool.get_run(child_id)).status == "running"
        release.set()
        assert await pool.handle(child_id).result(timeout=10) == "late"
    [step] = await pool.get_steps(handle.id)
    assert step.kind == "workflow"
    assert step.wake_at is not None
    assert step.status == "succeeded"  # the child's outcome still reaches the step


async def test_sleep_until_a_past_time_returns_at_once_and_saves_the_timer(pool: Workpool) -> None:
    @pool.workflow()
    async def punctual(ctx: RunContext, _: None) -> str:
        await ctx.step.sleep_until("deadline", datetime(2000, 1, 1, tzinfo=UTC))
        await ctx.step.sleep("blink", 0.05)  # short: waits in the slot
        return "on time"

    handle = await punctual.run(None)
    async with fast_worker(pool):
        assert await handle.result(timeout=10) == "on time"
    steps = await pool.get_steps(handle.id)
    assert [(s.name, s.kind, s.status) for s in steps] == [
        ("deadline", "sleep", "succeeded"),
        ("blink", "sleep", "succeeded"),
    ]
    assert steps[0].wake_at == datetime(2000, 1, 1, tzinfo=UTC)


async def test_a_step_result_that_cannot_be_stored_fails_the_run_without_retries(
    pool: Workpool,
) -> None:
    calls: list[int] = []

    def tags() -> set[str]:
        calls.append(1)
        return {"a", "b"}

    @pool.workflow(retries=RetryPolicy(max_attempts=3, initial_backoff=timedelta(0)))
    async def tagger(ctx: RunContext, _: None) -> None:
        await ctx.step.run("tags", tags)

    async with fast_worker(pool):
        handle = await tagger.run(None)
        with pytest.raises(RunFailedError) as failure:
            await handle.result(timeout=10)
    assert failure.value.error.type == "NonRetriableError"
    assert "is a set" in failure.value.error.message
    assert ((await pool.get_run(handle.id)).attempts, calls) == (1, [1])

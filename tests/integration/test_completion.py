"""End to end: on_complete and on_failure, on every backend."""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.conftest import fast_worker
from workpool import (
    Canceled,
    Failure,
    OnComplete,
    RunCanceledError,
    RunContext,
    RunFailedError,
    Success,
    Workpool,
)


async def test_on_complete_receives_each_kind_of_result(pool: Workpool) -> None:
    seen: dict[str, OnComplete] = {}

    @pool.workflow()
    async def record(ctx: RunContext, event: OnComplete) -> None:
        seen[event.run_id] = event

    @pool.workflow()
    async def maybe(ctx: RunContext, fail: bool) -> str:
        if fail:
            raise RuntimeError("it broke")
        return "fine"

    ok = await maybe.run(False, on_complete=record, context={"order": 1})
    bad = await maybe.run(True, on_complete=record, context=[2])
    dropped = await maybe.run(False, on_complete="record", context=None, run_after=60)
    await dropped.cancel("customer changed their mind")
    async with fast_worker(pool):
        assert await ok.result(timeout=10) == "fine"
        with pytest.raises(RunFailedError):
            await bad.result(timeout=10)
        with pytest.raises(RunCanceledError, match="changed their mind"):
            await dropped.result(timeout=10)
        for _ in range(200):
            if len(seen) == 3:
                break
            await asyncio.sleep(0.05)
    assert seen[ok.id].result == Success(output="fine")
    assert seen[ok.id].context == {"order": 1}
    assert seen[ok.id].workflow == "maybe"
    failure = seen[bad.id].result
    assert isinstance(failure, Failure)
    assert (failure.error.type, failure.error.message) == ("RuntimeError", "it broke")
    assert seen[bad.id].context == [2]
    assert seen[dropped.id].result == Canceled(reason="customer changed their mind")


async def test_on_failure_workflow_runs_once_when_a_run_fails_for_good(pool: Workpool) -> None:
    alerts: list[OnComplete] = []

    @pool.workflow()
    async def alert(ctx: RunContext, event: OnComplete) -> None:
        alerts.append(event)

    @pool.workflow(on_failure=alert, retries=False)
    async def fragile(ctx: RunContext, fail: bool) -> bool:
        if fail:
            raise RuntimeError("down")
        return True

    async with fast_worker(pool):
        good = await fragile.run(False)
        bad = await fragile.run(True)
        assert await good.result(timeout=10) is True
        with pytest.raises(RunFailedError):
            await bad.result(timeout=10)
        hook = pool.handle(f"{bad.id}-0")
        await hook.result(timeout=10)
    assert [event.run_id for event in alerts] == [bad.id]
    assert isinstance(alerts[0].result, Failure)


async def test_on_failure_callable_is_called_in_the_worker(pool: Workpool) -> None:
    failures: list[OnComplete] = []
    called = asyncio.Event()

    def notify(event: OnComplete) -> None:
        failures.append(event)
        called.set()

    @pool.workflow(on_failure=notify)
    async def fragile(ctx: RunContext, value: int) -> int:
        raise RuntimeError(f"failed {value}")

    async with fast_worker(pool):
        handle = await fragile.run(9)
        with pytest.raises(RunFailedError):
            await handle.result(timeout=10)
        await asyncio.wait_for(called.wait(), timeout=10)
    assert len(failures) == 1
    failure = failures[0].result
    assert isinstance(failure, Failure)
    assert failure.error.message == "failed 9"

"""Durations given as a timedelta or as seconds, end to end on both backends: step and
child timeouts, and how long ``handle.result`` waits."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RunContext, StepTimeoutError, Workpool


async def test_step_timeouts_take_a_timedelta(pool: Workpool) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def supplier(ctx: RunContext, _: None) -> str:
        await release.wait()
        return "late"

    @pool.workflow(max_concurrency=None)
    async def buyer(ctx: RunContext, _: None) -> list[str]:
        quick = await ctx.step.run("quick", lambda: "fast", timeout=timedelta(seconds=5))
        try:
            await ctx.step.run("slow", asyncio.sleep, 5, timeout=timedelta(milliseconds=50))
        except StepTimeoutError as error:
            slow = str(error)
        try:
            await ctx.step.run_workflow(
                "quote", supplier, None, timeout=timedelta(milliseconds=600)
            )
        except StepTimeoutError as error:
            child = str(error)
        return [quick, slow, child]

    handle = await buyer.run(None)
    async with fast_worker(pool, concurrency=2):
        quick, slow, child = await handle.result(timeout=timedelta(seconds=10))
        release.set()
    assert quick == "fast"
    assert "timeout of 0.05 s" in slow
    assert "did not end within 0.6 s" in child


async def test_result_waits_a_timedelta_or_seconds(pool: Workpool) -> None:
    @pool.workflow()
    async def echo(ctx: RunContext, value: int) -> int:
        return value

    handle = await echo.run(3)
    with pytest.raises(TimeoutError, match=r"did not finish within 0\.05 s"):
        await handle.result(timeout=timedelta(milliseconds=50))
    async with fast_worker(pool):
        assert await handle.result(timeout=timedelta(seconds=10)) == 3
        assert await handle.result(timeout=10) == 3
        assert await handle.result() == 3


@pytest.mark.parametrize(
    "timeout",
    [timedelta(0), -1, timedelta(seconds=-1), "10", True, float("nan")],
    ids=["zero", "negative", "negative-timedelta", "text", "bool", "nan"],
)
async def test_a_bad_result_timeout_is_a_configuration_error(
    pool: Workpool, timeout: object
) -> None:
    @pool.workflow()
    async def echo(ctx: RunContext, value: int) -> int:
        return value

    handle = await echo.run(3)
    with pytest.raises(ConfigurationError, match="timeout"):
        await handle.result(timeout=timeout)  # type: ignore[arg-type]

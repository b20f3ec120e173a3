"""The benchmark application: the pool and workflows that worker processes load.

Worker processes run ``python -m workpool worker benchmarks.app:pool`` with the store in
``$WORKPOOL_URL``; the harness builds its own instance per store with ``build(url)``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from workpool import RetryPolicy, RunContext, Workflow, Workpool

IO_SLEEP_SECONDS = 0.01
"""How long an ``io_sleep`` run waits, standing for one I/O call."""
STEPS = 10
"""``step.run`` calls of a ``ten_steps``, ``crash_at_nine`` or ``fail_at_nine`` run (s1-s10)."""
CRASH_AT = 9
"""The step inside which the first execution of ``crash_at_nine`` kills its worker
(of ``fail_at_nine``: raises)."""
RELEASE_TIMEOUT = 60.0
"""Seconds a ``hold`` run waits for its release file at most."""
QUICK_RETRY = timedelta(milliseconds=1)
"""``fail_at_nine``'s backoff before its retry."""


@dataclass(frozen=True, slots=True)
class BenchApp:
    """A pool on one store and its workflows."""

    pool: Workpool
    noop: Workflow[Any, Any]
    io_sleep: Workflow[Any, Any]
    ten_steps: Workflow[Any, Any]
    crash_at_nine: Workflow[Any, Any]
    fail_at_nine: Workflow[Any, Any]
    hold: Workflow[Any, Any]


async def step_noop(index: int) -> int:
    """A step's function that does nothing: what a step costs is all workpool's."""
    return index


async def _wait_for(path: Path, timeout: float) -> None:
    """Wait until another process creates ``path`` (polled: no event crosses processes)."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(path.exists) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.005)


async def replayed_at_nine(
    ctx: RunContext, first_attempt: Callable[[], Awaitable[None]]
) -> dict[str, Any]:
    """Ten steps; on attempt 1, step 9's function awaits ``first_attempt()``, which ends it.

    Returns ``replay_seconds``: from the handler's start to the call of step 9's
    function (on a replay: the saved steps loaded, steps 1-8 returned from them), the
    attempt, and the steps whose functions it called.
    """
    started = time.perf_counter()
    reached: list[float] = []
    called: list[int] = []

    async def step(index: int) -> int:
        called.append(index)
        if index == CRASH_AT:
            reached.append(time.perf_counter())
            if ctx.attempt == 1:
                await first_attempt()
        return index

    for index in range(1, STEPS + 1):
        await ctx.step.run(f"s{index}", step, index)
    return {"replay_seconds": reached[0] - started, "attempt": ctx.attempt, "called": called}


async def crash() -> None:
    """Kill this worker process at once (SIGKILL: no clean-up, no lease handed back)."""
    os.kill(os.getpid(), signal.SIGKILL)


async def fail() -> None:
    """Fail this attempt (``fail_at_nine`` retries it)."""
    raise ConnectionError("step 9 fails on the first attempt")


def build(url: str | None = None) -> BenchApp:
    """The benchmark pool on ``url`` (default ``$WORKPOOL_URL``) with its workflows."""
    pool = Workpool(url, app="bench")

    @pool.workflow(max_concurrency=None)
    async def noop(ctx: RunContext, data: Any) -> Any:
        """Returns its input: the cost of a run is all workpool's."""
        return data

    @pool.workflow(max_concurrency=None)
    async def io_sleep(ctx: RunContext, data: Any) -> Any:
        """Waits 10 ms without using the CPU, like a call to another service."""
        await asyncio.sleep(IO_SLEEP_SECONDS)
        return data

    @pool.workflow(max_concurrency=None)
    async def ten_steps(ctx: RunContext, data: Any) -> dict[str, float]:
        """Ten ``step.run`` of a no-op; returns how long they took, timed in the worker."""
        started = time.perf_counter()
        for index in range(1, STEPS + 1):
            await ctx.step.run(f"s{index}", step_noop, index)
        return {"steps_seconds": time.perf_counter() - started}

    @pool.workflow(max_concurrency=None)
    async def crash_at_nine(ctx: RunContext, data: Any) -> dict[str, Any]:
        """The first execution kills its own worker (SIGKILL) inside step 9."""
        return await replayed_at_nine(ctx, crash)

    @pool.workflow(
        retries=RetryPolicy(max_attempts=2, initial_backoff=QUICK_RETRY), max_concurrency=None
    )
    async def fail_at_nine(ctx: RunContext, data: Any) -> dict[str, Any]:
        """The first execution raises inside step 9 and is retried (1 ms backoff)."""
        return await replayed_at_nine(ctx, fail)

    @pool.workflow(max_concurrency=None)
    async def hold(ctx: RunContext, release: str) -> None:
        """Holds its worker's slot until the file ``release`` exists (at most 60 s)."""
        await _wait_for(Path(release), RELEASE_TIMEOUT)

    return BenchApp(pool, noop, io_sleep, ten_steps, crash_at_nine, fail_at_nine, hold)


app = build()
pool = app.pool

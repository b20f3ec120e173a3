"""The pool that worker processes load in the multi-process tests.

Every execution appends one line to the file named by ``WORKPOOL_TEST_LOG``, so the
test can check what ran where, how often and in what order.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import time
from datetime import timedelta

from workpool import NonRetriableError, OnComplete, RetryPolicy, RunContext, Workpool

pool = Workpool(app="tests")

QUICK_RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=20))


def log(*fields: object) -> None:
    """Append one line to the shared log (O_APPEND writes of one line do not interleave)."""
    line = " ".join(str(field) for field in fields) + "\n"
    with open(os.environ["WORKPOOL_TEST_LOG"], "a") as handle:
        handle.write(line)


@pool.workflow(retries=QUICK_RETRY, max_concurrency=None)
async def chore(ctx: RunContext, number: int) -> int:
    """Fails always when number % 25 == 0, on its first attempt when number % 10 == 0.
    Takes a few milliseconds, as real work does (runs of no length at all let two
    processes keep SQLite's write lock between them, see test_processes)."""
    await asyncio.sleep(0.003)
    if number % 25 == 0:
        log("run", ctx.run_id, ctx.attempt, "error", os.getpid())
        raise ValueError(f"chore {number} always fails")
    if number % 10 == 0 and ctx.attempt == 1:
        log("run", ctx.run_id, ctx.attempt, "error", os.getpid())
        raise ConnectionError(f"chore {number} fails once")
    log("run", ctx.run_id, ctx.attempt, "success", os.getpid())
    return number


@pool.workflow(max_concurrency=None)
async def completed(ctx: RunContext, event: OnComplete) -> None:
    """on_complete target: records which run ended, and how."""
    log("hook", event.run_id, event.result.status, os.getpid())


@pool.workflow()
def sleepy(ctx: RunContext, seconds: float) -> float:
    """Announces its start, then sleeps."""
    log("start", ctx.run_id, ctx.attempt, os.getpid())
    time.sleep(seconds)
    log("done", ctx.run_id, ctx.attempt, os.getpid())
    return seconds


@pool.workflow(timeout=0.3)
def overdue(ctx: RunContext, seconds: float) -> float:
    """A sync handler that outlives its time limit (its thread cannot be stopped)."""
    log("start", ctx.run_id, ctx.attempt, os.getpid())
    time.sleep(seconds)
    return seconds


@pool.workflow()
async def poison(ctx: RunContext, value: int) -> None:
    """Kills the worker process that runs it, every time."""
    log("start", ctx.run_id, ctx.attempt, os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)
    raise NonRetriableError("unreachable")


@pool.workflow()
async def ten_steps(ctx: RunContext, crash_at: int) -> int:
    """Ten steps; the first execution kills its own worker inside step ``crash_at``."""

    def step(index: int) -> int:
        log("step", ctx.run_id, index, ctx.attempt, os.getpid())
        if index == crash_at and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return index

    total = 0
    for index in range(1, 11):
        total += await ctx.step.run(f"step-{index}", step, index)
    return total


@pool.workflow()
async def napper(ctx: RunContext, seconds: float) -> str:
    """A step, a durable sleep, a step."""
    await ctx.step.run("before", lambda: log("before", ctx.run_id, os.getpid()))
    await ctx.step.sleep("nap", seconds)
    await ctx.step.run("after", lambda: log("after", ctx.run_id, os.getpid()))
    return "rested"


@pool.workflow(max_concurrency=None)
async def awaiting(ctx: RunContext, key: str) -> object:
    """A step, a wait for an event of ``key`` (a test kills the worker meanwhile), a step."""
    await ctx.step.run("before", lambda: log("before", ctx.run_id, os.getpid()))
    payload = await ctx.step.wait_for_event("event", key)
    await ctx.step.run("after", lambda: log("after", ctx.run_id, os.getpid()))
    return payload


@pool.workflow(max_concurrency=3)
async def limited(ctx: RunContext, number: int) -> int:
    """Counts, across processes, how many runs of it run at once (see ``running_now``)."""
    log("concurrent", ctx.run_id, running_now(+1), os.getpid())
    await asyncio.sleep(0.002)
    running_now(-1)
    return number


def running_now(change: int) -> int:
    """Add ``change`` to a counter shared by every worker process; return the new value."""
    path = os.environ["WORKPOOL_TEST_LOG"] + ".running"
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        value = int(handle.read() or 0) + change
        handle.seek(0)
        handle.truncate()
        handle.write(str(value))
        return value


@pool.workflow(max_concurrency=None)
async def steady(ctx: RunContext, seconds: float) -> float:
    """Announces its start, waits (without blocking the loop), announces its end."""
    log("start", ctx.run_id, ctx.attempt, os.getpid())
    await asyncio.sleep(seconds)
    log("done", ctx.run_id, ctx.attempt, os.getpid())
    return seconds


@pool.workflow(max_concurrency=None)
async def paced(ctx: RunContext, pause: float) -> str:
    """A step, a pause between steps (a test stops the worker there), a second step."""
    await ctx.step.run(
        "one", lambda: log("step", ctx.run_id, "one", os.getpid(), ctx.fencing_token)
    )
    await asyncio.sleep(pause)
    await ctx.step.run(
        "two", lambda: log("step", ctx.run_id, "two", os.getpid(), ctx.fencing_token)
    )
    return "done"


@pool.workflow(max_concurrency=None)
async def add_one(ctx: RunContext, value: int) -> int:
    """Its value plus one, at once (tests that need a worker and nothing more)."""
    return value + 1


@pool.workflow(max_concurrency=None)
async def freezer(ctx: RunContext, marker: str) -> str:
    """The first time it runs (``marker`` does not exist yet), stops its own worker
    process (SIGSTOP): runs claimed together with it have not started yet."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return "thawed"
    os.kill(os.getpid(), signal.SIGSTOP)
    return "frozen"


@pool.workflow()
def slow_once(ctx: RunContext, marker: str) -> int:
    """Sleeps a minute the first time it runs (``marker`` does not exist yet), at once
    after that; returns the attempt it ran as."""
    log("start", ctx.run_id, ctx.attempt, os.getpid())
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return ctx.attempt
    time.sleep(60)
    return ctx.attempt

"""The pool that the deadline process test's worker loads: a run that sleeps durably past
its deadline, one that keeps failing and retrying past it, and their failure hook.

Every execution appends one line to the file named by ``WORKPOOL_TEST_LOG`` (see
``process_app.log``).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from tests.integration.process_app import log
from workpool import OnComplete, RetryPolicy, RunContext, Workflow, Workpool

DEADLINE = timedelta(seconds=3)
BACKOFF = RetryPolicy(max_attempts=50, initial_backoff=timedelta(milliseconds=200), base=1.5)


def define(pool: Workpool) -> tuple[Workflow[None, str], Workflow[None, None]]:
    """Define the workflows on ``pool`` (the worker's, or the test's, which enqueues)."""

    @pool.workflow(max_concurrency=None)
    async def failed(ctx: RunContext, event: OnComplete) -> None:
        """on_failure of both: records which run failed, once."""
        log("failed", event.run_id, os.getpid())

    @pool.workflow(deadline=DEADLINE, on_failure=failed, max_concurrency=None)
    async def sleeper(ctx: RunContext, _: Any) -> str:
        """Sleeps durably for an hour: the deadline ends it while it is suspended."""
        log("sleeper", ctx.run_id, ctx.attempt, os.getpid())
        await ctx.step.sleep("nap", timedelta(hours=1))
        return "woke"

    @pool.workflow(deadline=DEADLINE, on_failure=failed, max_concurrency=None, retries=BACKOFF)
    async def stubborn(ctx: RunContext, _: Any) -> None:
        """Fails every attempt: it backs off until its next attempt would start past
        its deadline."""
        log("stubborn", ctx.run_id, ctx.attempt, os.getpid())
        raise ConnectionError("the service is down")

    return sleeper, stubborn


pool = Workpool(app="deadlines")
define(pool)

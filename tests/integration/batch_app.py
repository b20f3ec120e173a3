"""The pool that the batch and debounce process tests load (workers and enqueuers).

Every execution appends one line to the file named by ``WORKPOOL_TEST_LOG`` (see
``process_app.log``), so a test can count what ran, where and with which input.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from tests.integration.process_app import log
from workpool import NonRetriableError, OnBatchComplete, RunContext, Workpool

pool = Workpool(app="batches")


@pool.workflow(max_concurrency=None)
async def item(ctx: RunContext, number: int) -> int:
    """A fifth of a second of work (a worker killed meanwhile holds runs mid-way);
    fails for good when number % 25 == 0."""
    log("item", ctx.run_id, ctx.attempt, os.getpid())
    await asyncio.sleep(0.2)
    if number % 25 == 0:
        raise NonRetriableError(f"item {number} is bad")
    return number


@pool.workflow(max_concurrency=None)
async def summary(ctx: RunContext, done: OnBatchComplete) -> None:
    """A batch's callback: records its counts."""
    counts = (done.total, done.succeeded, done.failed, done.canceled, len(done.failed_run_ids))
    log("summary", ctx.run_id, done.batch_id, *counts, os.getpid())


@pool.workflow(max_concurrency=None)
async def refresh(ctx: RunContext, change: dict[str, Any]) -> None:
    """A debounced run: records the input it ran with."""
    log("refresh", ctx.run_id, json.dumps(change, separators=(",", ":")), os.getpid())

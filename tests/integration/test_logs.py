"""End to end: one INFO event per enqueued, started and completed run, with its fields."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import RetryPolicy, RunContext, Workpool


async def test_each_run_logs_enqueued_started_and_completed(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(retries=RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=10)))
    async def flaky(ctx: RunContext, _: None) -> str:
        if ctx.attempt == 1:
            raise ConnectionError("try again")
        return "ok"

    with caplog.at_level(logging.INFO, logger="workpool"):
        handle = await flaky.run(None)
        async with fast_worker(pool):
            await handle.result(timeout=10)
    events = [
        (record.__dict__["event"], record.__dict__.get("outcome"))
        for record in caplog.records
        if record.__dict__.get("run_id") == handle.id
    ]
    assert events == [
        ("enqueued", None),
        ("started", None),
        ("completed", "retrying"),
        ("started", None),
        ("completed", "success"),
    ]
    started = next(r for r in caplog.records if r.__dict__.get("event") == "started")
    assert (started.__dict__["workflow"], started.__dict__["queue"]) == ("flaky", "default")
    assert started.__dict__["lag"] >= 0
    completed = [r for r in caplog.records if r.__dict__.get("event") == "completed"]
    assert all(r.__dict__["duration"] >= 0 for r in completed)

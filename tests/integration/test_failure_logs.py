"""Failures seen in the logs: a failed attempt is one WARNING (retried) or ERROR (failed
for good) record with its error, and ``ctx.logger`` lines carry their run; in-process
on both backends, and as JSON lines from a real worker process."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.integration import failing_app
from tests.integration.conftest import fast_worker
from tests.integration.processes import ROOT
from workpool import (
    NonRetriableError,
    RetryPolicy,
    RunCanceledError,
    RunContext,
    RunFailedError,
    Workpool,
)
from workpool.logs import TEXT_FORMAT

QUICK_RETRY = RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=20))


def completed(records: list[logging.LogRecord], run_id: str) -> list[logging.LogRecord]:
    """The ``completed`` events of one run, in order."""
    return [
        record
        for record in records
        if record.__dict__.get("event") == "completed" and record.__dict__.get("run_id") == run_id
    ]


async def test_a_retried_attempt_is_one_warning_with_its_error_and_retry_time(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    async def flaky(ctx: RunContext, _: None) -> str:
        if ctx.attempt == 1:
            raise ConnectionError("the gateway timed out")
        return "ok"

    with caplog.at_level(logging.INFO, logger="workpool"):
        handle = await flaky.run(None)
        async with fast_worker(pool):
            assert await handle.result(timeout=10) == "ok"
    retried, succeeded = completed(caplog.records, handle.id)
    assert (retried.levelno, retried.__dict__["outcome"]) == (logging.WARNING, "retrying")
    assert retried.__dict__["error_type"] == "ConnectionError"
    assert retried.__dict__["error_message"] == "the gateway timed out"
    assert "Traceback (most recent call last)" in retried.__dict__["error_traceback"]
    assert 'raise ConnectionError("the gateway timed out")' in retried.__dict__["error_traceback"]
    retry_at = datetime.fromisoformat(retried.__dict__["retry_at"])
    assert retry_at.tzinfo is not None
    assert abs(retry_at - datetime.now(UTC)) < timedelta(seconds=30)
    message = retried.getMessage()
    assert handle.id in message
    assert "retry" in message
    assert retried.__dict__["retry_at"] in message
    assert "ConnectionError: the gateway timed out" in message
    assert (succeeded.levelno, succeeded.__dict__["outcome"]) == (logging.INFO, "success")
    assert "error_type" not in succeeded.__dict__


async def test_a_run_that_fails_for_good_is_one_error_whose_text_shows_the_traceback(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    async def broken(ctx: RunContext, order: str) -> None:
        raise ValueError(f"no such order {order}")

    with caplog.at_level(logging.INFO, logger="workpool"):
        handle = await broken.run("A-1")
        async with fast_worker(pool):
            with pytest.raises(RunFailedError):
                await handle.result(timeout=10)
    first, last = completed(caplog.records, handle.id)
    assert first.levelno == logging.WARNING
    assert (last.levelno, last.__dict__["outcome"]) == (logging.ERROR, "failed")
    assert (last.__dict__["error_type"], last.__dict__["error_message"]) == (
        "ValueError",
        "no such order A-1",
    )
    assert "retry_at" not in last.__dict__
    assert "failed for good" in last.getMessage()
    text = logging.Formatter(TEXT_FORMAT).format(last)
    first_line, *trace = text.splitlines()
    assert f"ERROR workpool.worker run {handle.id}" in first_line
    assert "ValueError: no such order A-1" in first_line
    assert trace[0] == "Traceback (most recent call last):"
    assert 'raise ValueError(f"no such order {order}")' in text
    assert trace[-1] == "ValueError: no such order A-1"


async def test_failures_are_logged_when_info_is_off_and_a_non_retriable_error_at_once(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(retries=QUICK_RETRY)
    def refuse(ctx: RunContext, _: None) -> None:  # a sync handler, in a thread
        raise NonRetriableError("refunds are not allowed")

    with caplog.at_level(logging.WARNING, logger="workpool"):
        handle = await refuse.run(None)
        async with fast_worker(pool):
            with pytest.raises(RunFailedError):
                await handle.result(timeout=10)
    [record] = completed(caplog.records, handle.id)
    assert (record.levelno, record.__dict__["outcome"]) == (logging.ERROR, "failed")
    assert record.__dict__["error_type"] == "NonRetriableError"
    assert (record.__dict__["workflow"], record.__dict__["attempt"]) == ("refuse", 1)


async def test_successes_and_cancels_stay_info(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    entered = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def wait(ctx: RunContext, seconds: float) -> float:
        entered.set()
        await asyncio.sleep(seconds)
        return seconds

    with caplog.at_level(logging.INFO, logger="workpool"):
        async with fast_worker(pool):
            done = await wait.run(0)
            assert await done.result(timeout=10) == 0
            entered.clear()
            stopped = await wait.run(60)
            await asyncio.wait_for(entered.wait(), 10)
            await stopped.cancel("enough")
            with pytest.raises(RunCanceledError):
                await stopped.result(timeout=10)
    for handle, outcome in ((done, "success"), (stopped, "canceled")):
        [record] = completed(caplog.records, handle.id)
        assert (record.levelno, record.__dict__["outcome"]) == (logging.INFO, outcome)
    ours = {done.id, stopped.id}
    assert not [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.__dict__.get("run_id") in ours
    ]


async def test_ctx_logger_lines_carry_the_run_in_attributes_and_text(
    pool: Workpool, caplog: pytest.LogCaptureFixture
) -> None:
    @pool.workflow(queue="billing")
    async def invoice(ctx: RunContext, number: int) -> None:
        ctx.logger.info("invoice %d sent", number, extra={"customer": "ada"})

    @pool.workflow(queue="billing")
    def receipt(ctx: RunContext, number: int) -> None:  # a sync handler, in a thread
        ctx.logger.warning("receipt %d printed", number)

    with caplog.at_level(logging.INFO, logger="workpool"):
        handles = [await invoice.run(7), await receipt.run(8)]
        async with pool.worker(queues=["billing"], renew_every=timedelta(milliseconds=100)):
            for handle in handles:
                await handle.result(timeout=10)
    for handle, workflow, text in zip(
        handles, ("invoice", "receipt"), ("invoice 7 sent", "receipt 8 printed"), strict=True
    ):
        [record] = [r for r in caplog.records if r.name == f"workpool.run.{workflow}"]
        fields = {key: record.__dict__.get(key) for key in ("run_id", "workflow", "queue")}
        assert fields == {"run_id": handle.id, "workflow": workflow, "queue": "billing"}
        assert record.__dict__["attempt"] == 1
        assert handle.id in logging.Formatter(TEXT_FORMAT).format(record)
        assert record.getMessage().endswith(text)
    [invoice_line] = [r for r in caplog.records if r.name == "workpool.run.invoice"]
    assert invoice_line.__dict__["customer"] == "ada"  # the caller's own extra is kept


def json_lines(stderr: bytes) -> list[dict[str, Any]]:
    documents = []
    for line in stderr.decode().splitlines():
        if line.strip():
            documents.append(json.loads(line))  # every line is one JSON document
    return documents


async def test_a_worker_process_writes_failures_and_run_lines_as_json(backend_url: str) -> None:
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        *["-m", "workpool", "worker", "tests.integration.failing_app:pool", "--log-format", "json"],
        cwd=ROOT,
        env={**os.environ, "WORKPOOL_URL": backend_url, "PYTHONPATH": str(ROOT / "src")},
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        pool = Workpool(backend_url)
        (handle,) = await pool.enqueue_many([failing_app.doomed.prepare("A-7")])
        with pytest.raises(RunFailedError):
            await handle.result(timeout=30)
        await pool.aclose()
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), 30)
    assert worker.returncode == 0, stderr.decode()
    lines = [doc for doc in json_lines(stderr) if doc.get("run_id") == handle.id]
    handler_lines = [doc for doc in lines if doc["logger"] == "workpool.run.doomed"]
    assert [doc["attempt"] for doc in handler_lines] == [1, 2]
    for doc in handler_lines:
        assert (doc["workflow"], doc["queue"], doc["level"]) == ("doomed", "default", "INFO")
        assert doc["message"].endswith("charging order A-7")
    failures = [doc for doc in lines if doc.get("event") == "completed"]
    assert [(doc["level"], doc["outcome"]) for doc in failures] == [
        ("WARNING", "retrying"),
        ("ERROR", "failed"),
    ]
    for attempt, doc in enumerate(failures, start=1):
        assert doc["error_type"] == "ValueError"
        assert doc["error_message"] == f"card declined for A-7 (attempt {attempt})"
        assert doc["error_traceback"].startswith("Traceback (most recent call last):")
        assert "failing_app.py" in doc["error_traceback"]
    assert datetime.fromisoformat(failures[0]["retry_at"]).tzinfo is not None
    assert "retry_at" not in failures[1]

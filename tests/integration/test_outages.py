"""A Redis outage seen from an in-process worker, and Redis settings that weaken the
guarantees. Each test starts a redis-server of its own, so stopping it disturbs no
other test.

An outage gives one ERROR when contact is lost and one line when it is back, with no
traceback, and the worker carries on. A server that may evict keys or keeps nothing on
disk is warned about once, when the worker starts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from tests.polling import wait_until as wait_for
from tests.redis_server import RedisServer
from workpool import RunContext, Workpool
from workpool.worker.metrics import WorkerMetrics

DURABLE = ["--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction"]
"""The settings the README asks for (and a run in flight survives the restart)."""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[[Sequence[str]], RedisServer]]:
    """Start a private redis-server with extra arguments (its files in ``tmp_path``)."""
    servers: list[RedisServer] = []

    def start(arguments: Sequence[str]) -> RedisServer:
        server = RedisServer(arguments=[*arguments, "--dir", str(tmp_path)])
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def workpool_records(records: Sequence[logging.LogRecord]) -> list[logging.LogRecord]:
    return [record for record in records if record.name.split(".")[0] == "workpool"]


async def test_an_outage_logs_one_error_and_one_line_when_contact_is_back(
    redis_server: Callable[[Sequence[str]], RedisServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = redis_server(DURABLE)
    running, release = asyncio.Event(), asyncio.Event()
    async with Workpool(server.url, app="tests") as pool:

        @pool.workflow(max_concurrency=None)
        async def held(ctx: RunContext, _: None) -> str:
            running.set()
            await release.wait()
            return "done"

        @pool.workflow(max_concurrency=None)
        async def echo(ctx: RunContext, value: int) -> int:
            return value

        # A long lease: the held run stays this worker's across the outage, so its
        # renewals and its outcome are retried, not taken over.
        worker = pool.worker(
            lease=timedelta(seconds=30),
            renew_every=timedelta(milliseconds=100),
            shutdown_grace=timedelta(seconds=2),
        )
        metrics = worker.metrics = WorkerMetrics(refresh_every=0.1)  # its watcher fails too

        def errors(operation: str) -> float:
            name = "workpool_backend_operation_errors_total"
            return metrics.registry.get_sample_value(name, {"operation": operation}) or 0.0

        with caplog.at_level(logging.INFO, logger="workpool"):
            handle = await held.run(None)
            async with worker:
                await asyncio.wait_for(running.wait(), timeout=10)
                first = len(caplog.records)
                server.stop()
                await wait_for(lambda: errors("claim") >= 2 and errors("renew") >= 2)
                release.set()  # the outcome is ready during the outage: its write is retried
                await wait_for(lambda: errors("finish") >= 2)
                server.start()  # same port, same files
                assert await handle.result(timeout=10) == "done"
                later = await echo.run(7)
                assert await later.result(timeout=10) == 7
            records = workpool_records(caplog.records[first:])

    assert [r.getMessage() for r in records if r.exc_info or r.exc_text] == []
    errors_logged = [r for r in records if r.levelno >= logging.ERROR]
    assert [r.__dict__.get("event") for r in errors_logged] == ["backend_unreachable"]
    assert "lost contact with Redis" in errors_logged[0].getMessage()
    back = [r for r in records if r.__dict__.get("event") == "backend_reachable"]
    assert len(back) == 1
    assert back[0].levelno in (logging.INFO, logging.WARNING)
    assert back[0].__dict__["duration"] > 0
    others = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    assert others == [errors_logged[0].getMessage(), back[0].getMessage()]


async def test_a_restart_while_a_step_is_saved_is_ridden_out_without_using_the_attempt(
    redis_server: Callable[[Sequence[str]], RedisServer],
) -> None:
    server = redis_server(DURABLE)
    computing, down = asyncio.Event(), asyncio.Event()
    async with Workpool(server.url, app="tests") as pool:

        async def slow_part() -> str:
            computing.set()
            await down.wait()  # Redis goes away before this step is saved
            return "computed"

        @pool.workflow(max_concurrency=None)  # no retry policy: one attempt
        async def durable(ctx: RunContext, _: None) -> str:
            first: str = await ctx.step.run("compute", slow_part)
            second: str = await ctx.step.run("after", lambda: "saved")
            return f"{first} and {second}"

        worker = pool.worker(lease=timedelta(seconds=10), renew_every=timedelta(seconds=1))
        handle = await durable.run(None)
        async with worker:
            await asyncio.wait_for(computing.wait(), timeout=10)
            server.stop()
            down.set()
            await asyncio.sleep(1.5)  # the outage itself: its length is the point here
            server.start()
            assert await handle.result(timeout=20) == "computed and saved"
        run = await pool.get_run(handle.id)
        steps = await pool.get_steps(handle.id)
    assert (run.status, run.attempts) == ("succeeded", 1)
    assert [(step.name, step.attempts) for step in steps] == [("compute", 1), ("after", 1)]


async def startup_records(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> list[logging.LogRecord]:
    """The records of the ``workpool.worker`` logger while a worker starts, runs one
    run and stops."""
    with caplog.at_level(logging.INFO, logger="workpool"):
        async with Workpool(server.url, app="tests") as pool:

            @pool.workflow()
            async def echo(ctx: RunContext, value: int) -> int:
                return value

            async with pool.worker(shutdown_grace=timedelta(seconds=2)):
                assert await (await echo.run(1)).result(timeout=10) == 1
    return [record for record in caplog.records if record.name == "workpool.worker"]


async def test_a_redis_that_can_evict_and_keeps_nothing_on_disk_is_warned_about_once(
    redis_server: Callable[[Sequence[str]], RedisServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = redis_server(["--maxmemory-policy", "allkeys-lru", "--save", "", "--appendonly", "no"])
    records = await startup_records(server, caplog)
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    eviction, persistence = sorted(warnings, key=lambda message: "maxmemory-policy" not in message)
    assert "maxmemory-policy is allkeys-lru" in eviction
    assert "noeviction" in eviction
    assert "no persistence" in persistence
    assert "appendonly" in persistence


async def test_a_redis_set_as_the_readme_says_gives_no_warning(
    redis_server: Callable[[Sequence[str]], RedisServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = redis_server(["--appendonly", "yes", "--maxmemory-policy", "noeviction"])
    records = await startup_records(server, caplog)
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []


async def test_settings_that_cannot_be_read_are_said_at_info(
    redis_server: Callable[[Sequence[str]], RedisServer], caplog: pytest.LogCaptureFixture
) -> None:
    # Managed Redis often disables CONFIG; INFO still tells the eviction policy.
    no_config = ["--rename-command", "CONFIG", ""]
    server = redis_server([*no_config, "--appendonly", "no", "--maxmemory-policy", "volatile-lru"])
    records = await startup_records(server, caplog)
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "maxmemory-policy is volatile-lru" in warnings[0]
    notes = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert any("CONFIG GET save" in note for note in notes), notes

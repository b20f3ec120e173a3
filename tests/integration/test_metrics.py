"""End to end: a worker with metrics serves Prometheus counters, histograms and gauges."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import (
    Cron,
    NonRetriableError,
    RetryPolicy,
    RunContext,
    RunFailedError,
    RunHandle,
    Workpool,
)
from workpool.backends import open_backend
from workpool.clock import ManualClock
from workpool.worker.cron import CronScheduler
from workpool.worker.metrics import WorkerMetrics

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(port: int) -> Samples:
    """Every sample served at /metrics, by (name, labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape_if_up(port: int) -> Samples:
    """``scrape``, or nothing while the server is not up yet (the worker is starting)."""
    try:
        return scrape(port)
    except urllib.error.URLError:
        return {}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def claim_count(samples: Samples) -> float | None:
    return value(samples, "workpool_backend_operation_seconds_count", operation="claim")


async def steal_a_lease(backend_url: str) -> list[str]:
    """Claim a running run from another connection, a minute on (its lease counted as
    expired): the worker holding it loses its lease. Returns the ids taken."""
    thief = await open_backend(backend_url)
    try:
        stolen = await thief.claim(["default"], "thief", 1, 600, 5, time.time() + 60, alone=True)
    finally:
        await thief.close()
    return [run.lease.run_id for run in stolen.runs]


async def test_a_worker_serves_its_metrics(pool: Workpool, backend_url: str) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def fine(ctx: RunContext, _: None) -> str:
        greeting: str = await ctx.step.run("greet", lambda: "hello")
        return greeting

    @pool.workflow(max_concurrency=None)
    async def broken(ctx: RunContext, _: None) -> None:
        raise NonRetriableError("broken for good")

    @pool.workflow(
        max_concurrency=None,
        retries=RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=10)),
    )
    async def flaky(ctx: RunContext, _: None) -> int:
        if ctx.attempt == 1:
            raise ConnectionError("try again")
        return ctx.attempt

    @pool.workflow(max_concurrency=None)
    async def hog(ctx: RunContext, _: None) -> None:
        await release.wait()

    port = free_port()
    metrics = WorkerMetrics(port, host="127.0.0.1", refresh_every=0.05)
    worker = fast_worker(pool)
    worker.metrics = metrics
    await fine.run(None, run_after=timedelta(hours=1))  # stays scheduled: pending
    handles: list[RunHandle[Any]] = [
        await fine.run(None),
        await broken.run(None),
        await flaky.run(None),
    ]
    async with worker:
        for handle in handles:
            with contextlib.suppress(RunFailedError):
                await handle.result(timeout=10)
        # Another claimer takes the hog's run (its lease counted as expired): the
        # worker's next renewal finds the lease lost and stops the handler.
        hog_handle = await hog.run(None)
        await wait_until(lambda: len(worker._active) == 1)
        assert await steal_a_lease(backend_url) == [hog_handle.id]
        await wait_until(lambda: len(worker._active) == 0)
        assert worker.cron.metrics is metrics
        # The gauges are read every 0.05 s: wait for a read made after the theft.
        await wait_until(
            lambda: value(scrape_if_up(port), "workpool_queue_running_runs", queue="default") == 1
        )
        samples = scrape(port)
    assert value(samples, "workpool_runs_started_total", workflow="fine", queue="default") == 1
    assert value(samples, "workpool_runs_started_total", workflow="flaky", queue="default") == 2
    assert value(samples, "workpool_runs_started_total", workflow="hog", queue="default") == 1
    finished = {
        (dict(labels)["workflow"], dict(labels)["outcome"]): count
        for (name, labels), count in samples.items()
        if name == "workpool_runs_finished_total"
    }
    assert finished == {
        ("fine", "success"): 1,
        ("broken", "failed"): 1,
        ("flaky", "retrying"): 1,
        ("flaky", "success"): 1,
    }
    assert value(samples, "workpool_lease_losses_total", workflow="hog") == 1
    assert value(samples, "workpool_run_duration_seconds_count", workflow="flaky") == 2
    assert value(samples, "workpool_run_duration_seconds_bucket", workflow="flaky", le="+Inf") == 2
    assert value(samples, "workpool_run_start_lag_seconds_count", queue="default") == 5
    for operation in ("claim", "renew", "finish", "save_step"):
        count = value(samples, "workpool_backend_operation_seconds_count", operation=operation)
        assert count is not None, operation
        assert count >= 1, operation
    # wait_for_work blocks on purpose: it is not timed.
    operations = {
        dict(labels)["operation"]
        for (name, labels), _ in samples.items()
        if name == "workpool_backend_operation_seconds_count"
    }
    assert operations == {"claim", "renew", "finish", "release", "save_step"}
    assert value(samples, "workpool_queue_pending_runs", queue="default") == 1
    assert value(samples, "workpool_queue_running_runs", queue="default") == 1  # the thief's
    assert value(samples, "workpool_queue_suspended_runs", queue="default") == 0
    release.set()


async def test_an_outcome_refused_for_a_lost_lease_counts_a_lease_loss(
    pool: Workpool, backend_url: str
) -> None:
    release = asyncio.Event()

    @pool.workflow(max_concurrency=None)
    async def slow(ctx: RunContext, _: None) -> None:
        await release.wait()

    # No renewal before the handler returns: the finish itself finds the lease gone.
    worker = pool.worker(lease=timedelta(seconds=30), renew_every=timedelta(seconds=20))
    worker.metrics = metrics = WorkerMetrics()
    handle = await slow.run(None)
    async with worker:
        await wait_until(lambda: len(worker._active) == 1)
        assert await steal_a_lease(backend_url) == [handle.id]
        release.set()
        await wait_until(lambda: len(worker._active) == 0)
    registry = metrics.registry
    assert registry.get_sample_value("workpool_lease_losses_total", {"workflow": "slow"}) == 1
    finished = registry.get_sample_value(
        "workpool_runs_finished_total",
        {"workflow": "slow", "queue": "default", "outcome": "success"},
    )
    assert finished is None


async def test_the_port_is_freed_when_the_worker_stops(tmp_path: Path) -> None:
    pool = Workpool(f"sqlite:///{tmp_path}/workpool.db", app="tests")  # any backend does
    port = free_port()
    try:
        for _ in range(2):  # the second worker can bind the port only if the first freed it
            worker = fast_worker(pool)
            worker.metrics = WorkerMetrics(port, host="127.0.0.1")
            async with worker:
                await wait_until(lambda: claim_count(scrape_if_up(port)) is not None)
    finally:
        await pool.aclose()


async def test_cron_ticks_fired_and_skipped_are_counted(pool: Workpool) -> None:
    clock = ManualClock()
    pool.clock = clock

    @pool.workflow(max_concurrency=1, cron=[Cron("*/5 * * * *")])
    async def sweep(ctx: RunContext, _: None) -> None: ...

    metrics = WorkerMetrics()
    scheduler = CronScheduler(pool.registry, pool.settings, "worker-a")
    scheduler.metrics = metrics
    backend = await pool.backend()
    await scheduler.step(backend, clock.now())  # leads
    clock.advance(300)
    await scheduler.step(backend, clock.now())  # fires: the run waits, nobody works
    clock.advance(300)
    await scheduler.step(backend, clock.now())  # skipped: the trigger's first run is still active
    registry = metrics.registry
    assert registry.get_sample_value("workpool_cron_ticks_fired_total", {"workflow": "sweep"}) == 1
    assert (
        registry.get_sample_value("workpool_cron_ticks_skipped_total", {"workflow": "sweep"}) == 1
    )
